import Foundation
import NavSync
import NavSyncLibuv

/// The interactive client: the session's tree drawn live, a status line, recent
/// messages, and a prompt with line editing, history and tab completion.
final class Interactive {
    let loop: ClientLoop
    let terminal: Terminal
    var options: ClientOptions
    var client: SessionClient!
    /// A later join still deciding (kept alive here until it joins or is refused).
    var candidate: SessionClient?
    var editor = LineEditor()
    var messages: [(text: String, error: Bool)] = []
    /// How many lines the message pane is scrolled back from the newest (PgUp/PgDn).
    var scrollBack = 0
    var connection = "connecting…"
    var quitting = false
    /// Whether any session was ever joined: before that, a server that cannot be
    /// reached ends the client (exit 3) instead of retrying forever.
    var joinedOnce = false
    /// Why the client ends on its own, for standard error once the screen is restored.
    var failure: String?

    init?(_ options: ClientOptions) {
        loop = options.makeLoop()
        guard let t = Terminal(loop: loop) else { return nil }
        terminal = t
        self.options = options
    }

    func run() -> Int32 {
        terminal.onInput = { [unowned self] bytes in keys(bytes) }
        terminal.onResize = { [unowned self] in draw() }
        terminal.start()
        terminal.write("\u{1B}[?1049h")   // the alternate screen, as full-screen programs use
        join(options.session)
        loop.run()
        terminal.write("\u{1B}[?1049l")
        terminal.stop()
        client.onEvent = nil   // nothing is drawn once the screen is given back
        client.stop()
        loop.shutdown()
        if let failure {
            Stderr.line("navclient: \(failure)")
            return Exit.unreachable
        }
        return Exit.ok
    }

    /// Joins a session; creates it only with `--create` or the `create` command, so a
    /// typo is an error that offers to create, never a new session (as `exec` does).
    /// Joins a session. The first one at start; a later one (`join`, `create`) stays a
    /// candidate until it is joined, so a refused join leaves the prompt where it was.
    func join(_ session: String, create: Bool = false) {
        var s = options.sessionOptions(reconnect: true)
        s.session = session
        s.create = create || options.create
        let c = SessionClient(loop: loop, options: s)
        let previous: SessionClient? = client
        if previous == nil {
            client = c
            options.session = session
        } else {
            candidate?.stop()
            candidate = c
        }
        var refused = false
        c.onEvent = { [unowned self, weak c] event in
            guard let c, !quitting else { return }
            if c !== client {
                // A join still deciding: it takes over once joined, or is dropped. (A
                // client left behind by a switch says nothing more.)
                guard c === candidate else { return }
                switch event {
                case .connection(true, let reason):
                    previous?.stop()
                    candidate = nil
                    client = c
                    options.session = session
                    connection = "connected"
                    say(reason)
                case .error(let e):
                    refused = true
                    candidate = nil
                    c.stop()
                    let why = e.code == .unknownSession ? "no session '\(session)' here (type `create \(session)` to make it, `sessions` to list them)" : describe(e)
                    say("cannot join \(session): \(why); still in \(options.session)", error: true)
                case .connection(false, let reason) where !c.isJoined && !refused:
                    refused = true
                    candidate = nil
                    say("cannot join \(session): \(reason); still in \(options.session)", error: true)
                default: return
                }
                return draw()
            }
            switch event {
            case .state:
                c.reportStatus()
            case .presence: break
            case .connection(let up, let reason):
                if up { joinedOnce = true }
                if !up && !joinedOnce && !refused {
                    // Never connected: retrying is right only after a session was joined.
                    failure = "cannot reach \(options.url): \(reason)"
                    return quit()
                }
                connection = up ? "connected" : refused ? "not joined" : "reconnecting"
                if up || !refused { say(up ? reason : "connection lost: \(reason); reconnecting", error: !up) }
            case .error(let e):
                if !c.isJoined {
                    refused = true
                    connection = "not joined"
                    if e.code == .unknownSession {
                        say("no session '\(session)' here: type `create \(session)` to make it, `sessions` to list them, or `join NAME`", error: true)
                        break
                    }
                }
                say(describe(e), error: true)
            case .reset(let reason):
                say(reason, error: true)
            case .refusedLocally:
                break   // navclient's machine does not replay (not speculative)
            }
            draw()
        }
        c.start()
        draw()
    }

    func say(_ text: String, error: Bool = false) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) { messages.append((String(line), error)) }
        if messages.count > 2_000 { messages.removeFirst(messages.count - 2_000) }
        scrollBack = 0   // something new: show it
    }

    // MARK: Input

    /// Keys one at a time: a completion or a submitted line must take effect before the
    /// next key of the same read (tmux and paste deliver many keys at once).
    func keys(_ bytes: [UInt8]) {
        for byte in bytes where !quitting { key(byte) }
        if !quitting { draw() }
    }

    func key(_ byte: UInt8) {
        let wasEmpty = editor.text.isEmpty
        for action in editor.feed([byte]) {
            switch action {
            case .redraw: break
            case .submit(let line): submit(line)
            case .complete(let before):
                let choices = CommandLanguage.completions(before, flow: client.flow, state: client.state)
                let shown = editor.complete(with: choices)
                if !shown.isEmpty { say(shown.joined(separator: "  ")) }
            case .pageUp:
                scrollBack += max(1, terminal.size.rows / 2)
            case .pageDown:
                scrollBack = max(0, scrollBack - max(1, terminal.size.rows / 2))
            case .interrupt:
                // Ctrl-C clears the line; on an empty one it says how to leave.
                if wasEmpty { say("(to leave: quit, or Ctrl-D on an empty line)") }
            case .endOfInput: quit()
            }
        }
    }

    func submit(_ line: String) {
        let command: ClientCommand?
        do {
            command = try CommandLanguage.parse(line, flow: client.flow, state: client.state)
        } catch {
            return say("\(line): \(error)", error: true)
        }
        guard let command else { return }
        switch command {
        case .ops(let ops):
            say("> \(line)")
            client.send(ops, label: options.label) { [weak self] result in
                switch result {
                case .success(let ack): self?.say("  \(describe(ack))")
                case .failure(let e): self?.say("  \(describe(e))", error: true)
                }
                self?.draw()
            }
        case .quit: quit()
        case .nothing(let why): say("> \(line)\n  noop: \(why)")
        case .join(let name), .create(let name):
            guard ClientRequest.isValidSessionName(name) else { return say("'\(name)' is not a session name", error: true) }
            let create: Bool
            if case .create = command { create = true } else { create = false }
            say(create ? "creating and joining \(name)" : "joining \(name)")
            join(name, create: create)
        case .sessions:
            client.request(["type": "sessions"]) { [weak self] reply in
                for s in reply["sessions"]?.arrayValue ?? [] {
                    self?.say("  \(s["session"]?.stringValue ?? "?")  flow \(s["flow"]?.stringValue ?? "?")  rev \(s["rev"]?.description ?? "?")  members \(s["members"]?.description ?? "?")")
                }
                self?.draw()
            }
        case .members:
            for m in client.members {
                say("  \(m.client)  \(m.name)  \(m.role)\(m.rev.map { "  shows rev \($0)" } ?? "")\(m.client == client.clientID ? "  (you)" : "")")
            }
        case .get:
            say((client.state ?? .null).encodedString())
        case .history(let n):
            client.request(historyRequest(options.session, limit: n)) { [weak self] reply in
                if let error = errorText(of: reply) { self?.say("  " + error, error: true) }
                let entries = reply["entries"]?.arrayValue ?? []
                if reply["type"] == "history" && entries.isEmpty { self?.say("  (no revisions held; earliest \(reply["earliest"]?.description ?? "?"))") }
                for e in entries.reversed() { self?.say("  " + CommandLanguage.describe(historyEntry: e, utcOffsetSeconds: localUTCOffset())) }
                self?.draw()
            }
        case .show(let rev):
            client.request(revisionRequest(options.session, rev: rev)) { [weak self] reply in
                guard let self else { return }
                if let error = errorText(of: reply) {
                    say("  " + error, error: true)
                } else {
                    let live = reply["historic"] != true
                    say("revision \(rev)\(live ? " (the current one)" : " (historic, read-only)"):")
                    for line in TreeRenderer.render(reply["state"] ?? .null, flow: client.flow) { say("  " + line.text) }
                    if !live { say("  (that was revision \(rev), read-only: restore \(rev) brings it back)") }
                }
                draw()
            }
        case .undo:
            guard client.rev > 0 else { return say("> undo\n  noop: nothing to undo at revision 0") }
            say("> undo (restore \(client.rev - 1), base \(client.rev))")
            client.send([["op": "restore", "rev": .int(Int64(client.rev - 1))]], base: client.rev, onConflict: .reject) { [weak self] result in
                switch result {
                case .success(let ack): self?.say("  \(describe(ack))")
                case .failure(let e): self?.say("  \(describe(e))", error: true)
                }
                self?.draw()
            }
        case .help(let name):
            say(name.flatMap(CommandLanguage.usage) ?? (["commands (Tab completes commands and routes):"] + CommandLanguage.commands.map { "  " + $0.usage }).joined(separator: "\n"))
        }
    }

    func quit() {
        quitting = true
        loop.stop()
    }

    // MARK: Drawing

    /// Redraws the whole screen: tree, status line, messages, prompt.
    func draw() {
        let (columns, rows) = terminal.size
        func fit(_ s: String) -> String { s.count > columns ? String(s.prefix(columns - 1)) + "…" : s }
        var out = "\u{1B}[?25l\u{1B}[H\u{1B}[2J"
        let tree = client.state.map { TreeRenderer.render($0, flow: client.flow) } ?? []
        // Long messages wrap, never cut; the pane takes the rows the tree leaves (at
        // least a quarter of the screen), and PgUp/PgDn scroll it back through 2,000 lines.
        let wrapped = messages.flatMap { m in Self.wrap(m.text, columns).map { ($0, m.error) } }
        let messageRows = max(min(6, max(2, rows / 4)), rows - 3 - tree.count)
        let treeRows = max(1, rows - messageRows - 3)
        for line in tree.prefix(treeRows) {
            out += (line.active ? "\u{1B}[1;36m" : "\u{1B}[2m") + fit(line.text) + "\u{1B}[0m\r\n"
        }
        if tree.count > treeRows { out += "\u{1B}[2m… \(tree.count - treeRows) more lines\u{1B}[0m\r\n" }
        out += "\u{1B}[\(rows - messageRows - 1);1H"
        let up = client.isJoined
        let status = "\(up ? "●" : "○") \(connection) to \(client.server)  session \(options.session)  rev \(client.rev)"
            + (client.unacknowledged > 0 ? "  unacknowledged \(client.unacknowledged)" : "")
            + "  members \(client.members.count)" + (client.clientID.map { "  you \($0)" } ?? "")
        out += "\u{1B}[7m" + fit(status).padding(toLength: columns, withPad: " ", startingAt: 0) + "\u{1B}[0m\r\n"
        scrollBack = min(scrollBack, max(0, wrapped.count - messageRows))
        let end = wrapped.count - scrollBack
        let shown = wrapped[max(0, end - messageRows)..<end]
        for (i, (text, error)) in shown.enumerated() {
            let marker = i == 0 && scrollBack > 0 ? "\u{1B}[7m↑ \(scrollBack) more below (PgDn)\u{1B}[0m " : ""
            out += marker + (error ? "\u{1B}[31m" : "") + fit(text) + "\u{1B}[0m\r\n"
        }
        let prompt = "navsync \(options.session)> "
        out += "\u{1B}[\(rows);1H\u{1B}[K" + prompt + editor.text
        let cursorColumn = prompt.count + editor.cursor + 1
        out += "\u{1B}[\(rows);\(cursorColumn)H\u{1B}[?25h"
        terminal.write(out)
    }

    /// A line cut into pieces of at most `columns - 1` characters.
    static func wrap(_ text: String, _ columns: Int) -> [String] {
        let width = max(8, columns - 1)
        guard text.count > width else { return [text] }
        var pieces: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            pieces.append(String(rest.prefix(width)))
            rest = rest.dropFirst(width)
        }
        return pieces
    }
}
