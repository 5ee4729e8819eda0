import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// Links worked out ahead (`LinkPlan`): opening one by its plan must do exactly what
/// applying its operations one by one does, from any state the session is in.
@Suite("Link plans")
struct LinkPlanTests {
    /// A third flow for links: a stack at the root, a tab bar inside it, links that use
    /// most operations after replacing the tree, one capture filling two params, one
    /// with hints, one with more captures than a plan takes, and links a plan cannot
    /// cover (a first operation that is not at the root, a root type that a route opens
    /// again, an entry id).
    static let linkFlow: Flow = {
        let text = #"""
        {
          "name": "links",
          "root": "Main",
          "coordinators": {
            "Main": { "kind": "stack", "initial": "home", "routes": {
              "home": {},
              "item": { "params": { "id": "int", "tag": "string?" } },
              "pair": { "params": { "a": "int", "b": "int" } },
              "more": { "params": { "p": "string?", "q": "string?", "r": "string?", "s": "string?" } },
              "shelf": { "coordinator": "Shelf" },
              "modal": { "coordinator": "Panel", "presentation": "sheet" },
              "nested": { "coordinator": "Main" }
            } },
            "Shelf": { "kind": "tabs", "initial": ["one", "two"], "routes": {
              "one": { "tab": { "title": "One" } },
              "two": { "tab": { "title": "Two" } },
              "three": { "params": { "n": "number?" }, "tab": { "title": "Three" } }
            } },
            "Panel": { "kind": "stack", "initial": "start", "routes": {
              "start": {}, "step": { "params": { "on": "bool?", "n": "int?" } }
            } }
          },
          "links": {
            "/item/:id": [
              { "op": "setRoot", "at": "root", "route": "item", "params": { "id": ":id", "tag": ":tag" } },
              { "op": "route", "route": "pair", "params": { "a": ":id", "b": ":id" }, "hints": { "transition": "fade" } },
              { "op": "present", "route": "modal" },
              { "op": "route", "route": "step", "params": { "on": ":on" } },
              { "op": "popToFirst", "route": "step" }
            ],
            "/shelf/:n": [
              { "op": "setStack", "at": "root", "routes": ["home", "shelf"] },
              { "op": "appendTab", "route": "three", "params": { "n": ":n" } },
              { "op": "select", "index": 2 },
              { "op": "setTabs", "routes": ["two", "three"] },
              { "op": "insertTab", "route": "one", "index": 0 },
              { "op": "removeLast", "route": "three" }
            ],
            "/missing": [ { "op": "setRoot", "at": "root", "route": "item", "params": { "id": ":id" } } ],
            "/many/:p/:q/:r/:s": [ { "op": "setRoot", "at": "root", "route": "more", "params": { "p": ":p", "q": ":q", "r": ":r", "s": ":s" } } ],
            "/push/:id": [ { "op": "route", "route": "item", "params": { "id": ":id" } } ],
            "/again": [ { "op": "setRoot", "at": "Main", "route": "home" } ],
            "/restart": [ { "op": "setRoot", "at": "root", "route": "shelf" }, { "op": "restart", "at": "Shelf" } ]
          }
        }
        """#
        return try! Flow.load(bytes: Array(text.utf8), file: "links.json")
    }()

    static func flow(_ name: String) -> Flow {
        switch name {
        case "demo": .demo
        case "studio": studioFlow
        default: linkFlow
        }
    }

    static let urls: [String: [String]] = [
        "demo": ["/product/7", "/product/7?note=x", "/product/x", "/search/shoes", "/search/shoes?inStock=1",
                 "/search/%22s%5Cx%0A%22?inStock=0", "/search/%C3%BCber", "/product/7?note=%E2%9C%93%22",
                 "/search/shoes?inStock=maybe", "/orders/3", "/checkout", "/checkout?total=9.5",
                 "/settings/notifications?on=0", "/login", "/login?email=a@b", "/nowhere"],
        "studio": ["/p/4", "/p/x", "/p/5/file/a.txt", "/p/5/file/a.txt?dirty=1", "/p/5/file/a.txt?dirty=2"],
        "links": ["/item/3", "/item/3?tag=t&on=true", "/item/3?on=0", "/item/-4?tag=", "/shelf/2.5", "/shelf/x",
                  "/shelf/1?n=2", "/missing", "/missing?id=1", "/many/a/b/c/d", "/push/1", "/again", "/restart"],
    ]

    /// A URL without escapes is matched on its bytes (`URLBytes`): the same link, values
    /// and errors as matched through `ParsedURL`, for every URL of three flows and some
    /// odd shapes; one with an escape, a bad scheme or more than 8 parts is not.
    @Test(arguments: ["demo", "studio", "links"])
    func urlsMatchOnTheirBytesAsParsed(_ flowName: String) {
        let flow = Self.flow(flowName)
        let odd = ["product/7", "//product//7//", "myapp://product/7", "HTTPS://host:1/product/7?note=a#x", "https://host",
                   "/product/7?note=a&note=b", "/product/7?&&note=&", "/product/7?note", "/product/7?note=a=b", "/product/7#?note=a",
                   "/search/shoes?inStock=true&q=x", "/search/é?q=ü", "/p/5/file/a.txt?dirty=1&dirty=0", "/item/3?tag=t&tag=u&on=1",
                   "/a/b/c/d/e/f/g/h", "/many/a/b/c/d?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8", "", "/", "?x=1"]
        var onBytes = 0
        for url in Self.urls[flowName]! + odd {
            var text = url
            let byBytes = text.withUTF8 { b in
                URLBytes(b).map { address in Result { () throws(NavError) in try flow.match(url, address) } }
            }
            guard let parsed = ParsedURL(url) else { continue }
            let byParsing = Result { () throws(NavError) in try flow.match(url, parsed) }
            guard let byBytes else {
                #expect(url.contains("%"), "\(flowName) \(url): not matched on its bytes")
                continue
            }
            onBytes += 1
            switch (byBytes, byParsing) {
            case (.success(let a), .success(let b)):
                #expect(a.link.pattern == b.link.pattern && a.values == b.values, "\(flowName) \(url)")
            case (.failure(let a), .failure(let b)): #expect(a == b, "\(flowName) \(url)")
            default: Issue.record("\(flowName) \(url): \(byBytes) on its bytes, \(byParsing) parsed")
            }
        }
        #expect(onBytes == Self.urls[flowName]!.filter { !$0.contains("%") }.count + odd.count)
        for url in ["/product/%37", "/a/b/c/d/e/f/g/h/i", "/a?1&2&3&4&5&6&7&8&9", "x:/y://z/w"] {
            var text = url
            #expect(text.withUTF8 { URLBytes($0) == nil }, "\(url)")
        }
    }

    /// Which links have a plan: those that start by replacing the whole tree, from a
    /// root that only the root is of, with at most three captures.
    @Test func plannedLinks() {
        func planned(_ flow: Flow) -> [String] { flow.links.filter { $0.plan != nil }.map(\.pattern).sorted() }
        #expect(planned(.demo) == ["/checkout", "/login", "/orders", "/orders/:id", "/product/:id", "/search/:q"])
        #expect(planned(studioFlow) == ["/p/:id", "/p/:id/file/:name"])
        #expect(planned(Self.linkFlow) == ["/item/:id", "/missing", "/restart", "/shelf/:n"])
        // A link that fails for a set of captures has no outcome for it (op by op it fails).
        let missing = Self.linkFlow.links.first { $0.pattern == "/missing" }!
        #expect(missing.plan?.outcome(given: [nil]) == nil && missing.plan?.outcome(given: [.int(1)]) != nil)
    }

    /// From states reached by random commands, every URL opened by its plan and op by
    /// op: the same result or error, state, next id, changed coordinators and edit.
    @Test(arguments: ["demo", "studio", "links"])
    func planMatchesTheLinkAppliedOpByOp(_ flowName: String) throws {
        let flow = Self.flow(flowName)
        var gen = CommandGenerator(flow: flow, seed: 0x11AB)
        var document = NavDocument(flow: flow)
        var byPlan = 0, writtenAhead = 0, diffsFromPlans = 0, removedByPlan = 0
        for step in 0..<400 {
            // Move the session on: a random command (kept when it applies), now and then a link.
            let json: JSON = gen.chance(0.15) ? ["op": "open", "url": .string(gen.pick(Self.urls[flowName]!))]
                                              : gen.op(document.state, nextID: document.nextID)
            if let op = try? NavOperation(json: json) {
                var ctx = CommandContext(conflicts: nil, firstID: document.nextID)
                if op.action.editsOneStackAtomically {
                    // In place, as the sequencer runs these: entries changed where they are.
                    _ = try? document.apply(op, &ctx)
                } else {
                    var next = document
                    if (try? next.apply(op, &ctx)) != nil { document = next }
                }
            }
            // What a plan opened writes the text worked out ahead until it changes: the
            // same bytes as the tree written out.
            #expect(Self.written(document.state.root) == document.state.root.json.encoded(), "\(flowName) step \(step)")
            if document.state.root.entries.contains(where: { $0.writtenAhead != nil }) { writtenAhead += 1 }
            guard step % 4 == 0 else { continue }
            for url in Self.urls[flowName]! {
                let refused: [OpName: String] = gen.chance(0.1) ? [gen.pick([.select, .setRoot, .route, .setStack]): "not you"] : [:]
                var planned = document, applied = document
                var plannedCtx = CommandContext(conflicts: nil, firstID: planned.nextID, refused: refused)
                var appliedCtx = CommandContext(conflicts: nil, firstID: applied.nextID, refused: refused)
                let a = Result { () throws(NavError) in try planned.apply(NavOperation(.open(url: url)), &plannedCtx) }
                // What `open` does without a plan: the link's operations, one by one.
                let b = Result { () throws(NavError) in
                    let (link, values) = try flow.match(url: url)
                    return try applied.applyLink(link.ops(filling: values), url: url, &appliedCtx)
                }
                let context = "\(flowName) step \(step) \(url)"
                #expect(a == b, "\(context)")
                guard case .success = a else { continue }
                #expect(planned.state == applied.state, "\(context)")
                #expect(planned.state.json == applied.state.json, "\(context)")
                #expect(Self.written(planned.state.root) == Self.written(applied.state.root), "\(context)")
                #expect(planned.nextID == applied.nextID, "\(context)")
                #expect(plannedCtx.changed == appliedCtx.changed, "\(context)")
                #expect(plannedCtx.edit == nil && appliedCtx.edit == nil, "\(context)")
                if refused.isEmpty, let (link, values) = try? flow.match(url: url), link.plan?.outcome(given: values) != nil { byPlan += 1 }
                // A command of that one `open` takes its diff from the plan: the walk's, op for
                // op and id for id, in the same order.
                #expect(appliedCtx.opened == nil, "\(context)")
                guard a == .success(.applied), let opened = plannedCtx.opened else { continue }
                let walked = StateDiff(from: document.state, to: planned.state)
                guard let diff = StateDiff(opened: opened, from: document.state, to: planned.state) else {
                    Issue.record("\(context): no diff from the plan")
                    continue
                }
                #expect(diff.ops == walked.ops, "\(context)")
                #expect(ByteWriter.bytes { diff.operations.write(into: &$0) } == ByteWriter.bytes { walked.operations.write(into: &$0) }, "\(context)")
                #expect(diff.removed == walked.removed && diff.added == walked.added && diff.created == walked.created, "\(context)")
                // Both take the ids of a replaced entry still as a plan opened it from that
                // plan: held here to the tree's own, every old id in the walk's order.
                var gone: [EntryID] = []
                document.state.root.forEachID { gone.append($0) }
                #expect(Array(diff.removed) == gone, "\(context)")
                if document.state.root.entries.contains(where: { $0.writtenAhead != nil }) { removedByPlan += 1 }
                diffsFromPlans += 1
            }
        }
        // The comparison is only worth something if plans were used, from many states.
        #expect(byPlan > 200, "only \(byPlan) openings by plan")
        #expect(diffsFromPlans > 150, "only \(diffsFromPlans) diffs from plans")
        #expect(writtenAhead > 20, "only \(writtenAhead) states with an entry written ahead")
        #expect(removedByPlan > 20, "only \(removedByPlan) diffs from plans replacing an entry written ahead")
    }

    /// A session that opens links by their plans keeps the same books as one that
    /// applies them op by op (its limits are not the defaults): the same outcomes, and
    /// when each coordinator last changed and each id left. (The plan's diff lists its
    /// ids when asked, `StateDiff.forEachAdded`…, and says which arrive, `adds`.)
    @Test(arguments: ["demo", "studio", "links"])
    func plannedLinksKeepTheSameBooks(_ flowName: String) {
        let flow = Self.flow(flowName)
        var other = ModelLimits()
        other.maxDataBytes += 1
        #expect(LinkPlan.coversLimits(ModelLimits()) && !LinkPlan.coversLimits(other))
        var planned = Sequencer(flow: flow, epoch: "e"), applied = Sequencer(flow: flow, epoch: "e", limits: other)
        var gen = CommandGenerator(flow: flow, seed: 0xB00C)
        var links = 0
        for i in 0..<600 {
            let json: JSON = gen.chance(0.3) ? ["op": "open", "url": .string(gen.pick(Self.urls[flowName]!))]
                                             : gen.op(planned.state, nextID: planned.document.nextID)
            let command = Command(id: .int(Int64(i)), ops: [json])
            let a = planned.submit(command, client: "c"), b = applied.submit(command, client: "c")
            #expect(a == b, "\(flowName) \(i) \(json)")
            #expect(planned.lastChanged == applied.lastChanged, "\(flowName) \(i) \(json)")
            #expect(planned.removedAt == applied.removedAt, "\(flowName) \(i) \(json)")
            if case .applied = a, json["op"] == "open" { links += 1 }
        }
        #expect(links > 40, "only \(links) links opened")
    }

    static func written(_ c: Coordinator) -> [UInt8] { ByteWriter.bytes { c.write(into: &$0) } }

    /// A session whose model limits are not the defaults applies links op by op: the
    /// plan was worked out under the defaults. (All but the operations per command,
    /// which no link's operations are checked against.)
    @Test func otherLimitsApplyOpByOp() throws {
        var limits = ModelLimits()
        limits.maxStackDepth = 1
        var document = NavDocument(flow: Self.linkFlow, limits: limits)
        var ctx = CommandContext(conflicts: nil, firstID: document.nextID)
        #expect(throws: NavError.self) { try document.apply(NavOperation(.open(url: "/item/3")), &ctx) }
        #expect(!LinkPlan.coversLimits(limits))
        limits = ModelLimits()
        limits.maxOps = 1
        #expect(LinkPlan.coversLimits(limits))
        limits.maxTabs = 2
        #expect(!LinkPlan.coversLimits(limits))
        #expect(LinkPlan.coversLimits(ModelLimits()))
    }

    /// An entry of the plan that takes no capture and opens nothing is shared, not made:
    /// the plan's work is in the entries it has to change.
    @Test func leavesAreShared() throws {
        var a = NavDocument(flow: .demo), b = NavDocument(flow: .demo)
        var ctx = CommandContext(conflicts: nil, firstID: 0)
        _ = try a.apply(NavOperation(.open(url: "/product/7")), &ctx)
        _ = try b.apply(NavOperation(.open(url: "/product/8")), &ctx)
        let home: CoordinatorPath = [0, 0]   // App > main > Main's first tab (home) > Home
        #expect(a.state[home].type == "Home")
        #expect(a.state[home].entries[0].sharesFields(with: b.state[home].entries[0]), "list: no capture, shared")
        #expect(!a.state[home].entries[1].sharesFields(with: b.state[home].entries[1]), "detail: its own params")
        #expect(a.state[home].entries[1].params == ["id": 7] && b.state[home].entries[1].params == ["id": 8])
        // The entry on the root writes its text worked out ahead, unless given another id.
        var main = a.state.root.entries[0]
        #expect(main.writtenAhead != nil)
        main.id = EntryID(999)
        #expect(main.writtenAhead == nil)
        #expect(ByteWriter.bytes { main.write(into: &$0) } == main.json.encoded())
    }
}
