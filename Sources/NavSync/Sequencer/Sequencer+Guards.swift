/// Guards enforced after each op (docs/flows.md, "Guards and redirects"). Only a guarded flow comes
/// here; a flow without guards pays one flag per command.
extension Sequencer {
    /// Checks the active path after op `index` applied (`before` is the document just
    /// before it). Nil when every guard holds; `.redirected` after redirects, which are
    /// appended to `redirects`. A `deny`, a loop or a failing redirect throws.
    ///
    /// A redirect keeps the op's effect only when the guarded entry was on the active
    /// path before it (a data change that signed out); otherwise the op is undone, with
    /// the id counter left where it was, so `{entry}` never names an id used again.
    /// Then the guard's link opens in the same revision and is checked the same way.
    /// `url`: the deep link the op was opening, when it is an `open` (a redirect's `{url}`).
    static func enforceGuards(op index: Int, url: String? = nil, before: NavDocument, _ working: inout NavDocument,
                              _ ctx: inout CommandContext, redirects: inout [Redirect]) throws(NavError) -> OpResult? {
        var before = before
        var taken: [String] = []
        var chain: [String] = []
        var steps: [NavError.RedirectStep] = []
        while let failure = working.firstGuardFailure() {
            let g = failure.guard
            guard let link = g.link(route: failure.route, entry: failure.entry, params: failure.params, url: url) else {
                throw NavError(.guarded, "guard '\(g.name)' denies route '\(failure.route)' (\(failure.entry)): \(g.condition.json.encodedString()) does not hold for the session's data",
                               guarded: .init(guard: g.name, route: failure.route, entry: failure.entry.description))
            }
            chain.append("\(g.name) on '\(failure.route)' -> \(link)")
            steps.append(.init(guard: g.name, route: failure.route, link: link))
            let loop = NavError.Guarded(guard: g.name, route: failure.route, entry: failure.entry.description, chain: steps)
            if taken.contains(g.name) {
                throw NavError(.redirectLoop, "redirects go round in a circle: \(chain.joined(separator: ", then ")) (guard '\(g.name)' failed again)",
                               guarded: loop)
            }
            if taken.count == Guard.redirectLimit {
                throw NavError(.redirectLoop, "more than \(Guard.redirectLimit) redirects in one op: \(chain.joined(separator: ", then "))",
                               guarded: loop)
            }
            taken.append(g.name)
            if !before.isOnActivePath(failure.entry) {
                let next = working.nextID
                if before.nextID < next { ctx.undone = (ctx.undone ?? []) + [before.nextID..<next] }
                working = before
                working.nextID = next
            }
            before = working
            // The link is the guard's doing, not the sender's: no conflict check of the
            // screens it opens. Its write of the session's data is checked as the
            // sender's own would be (with `reject`, data changed after `base` refuses it).
            if let conflicts = ctx.conflicts, working.linkWritesSessionData(link) {
                let document = working
                try conflicts.check([.data], gone: [], firstID: ctx.firstID, describe: { document.describe($0) })
            }
            let outer = ctx.conflicts
            ctx.conflicts = nil
            do throws(NavError) {
                _ = try working.apply(NavOperation(.open(url: link)), &ctx)
            } catch {
                ctx.conflicts = outer
                throw NavError(error.code, "guard '\(g.name)' redirected to '\(link)', which failed: \(error.message)", guarded: error.guarded)
            }
            ctx.conflicts = outer
            ctx.opened = nil
            ctx.edit = nil
            redirects.append(Redirect(op: index, guard: g.name, link: link))
        }
        return taken.isEmpty ? nil : .redirected
    }
}
