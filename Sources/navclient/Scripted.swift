import Foundation
import NavSync
import NavSyncLibuv

/// The non-interactive fronts: `exec`, `get`, `sessions`, `watch`, and commands read from
/// standard input when it is not a terminal.
enum Scripted {
    /// `exec`: each command in order; stops at the first error (message on stderr, exit 1).
    static func exec(_ o: ClientOptions, commands: [String]) -> Int32 {
        runAll(o, lines: commands, stopAtFirstError: true)
    }

    /// Commands from standard input, one per line, until EOF; an error is reported and
    /// the next line runs. Exit 1 if any failed.
    static func stdinScript(_ o: ClientOptions) -> Int32 {
        var lines: [String] = []
        while let line = readLine() { lines.append(line) }
        return runAll(o, lines: lines, stopAtFirstError: false)
    }

    /// Joins the session, then runs the lines in order, each after the last is answered.
    static func runAll(_ o: ClientOptions, lines: [String], stopAtFirstError: Bool) -> Int32 {
        let loop = o.makeLoop()
        let client = SessionClient(loop: loop, options: o.sessionOptions(reconnect: false))
        var remaining = lines[...]
        var failed = false
        var code = Exit.ok
        func finish(_ c: Int32) {
            code = c
            client.stop()
            loop.after(50) { loop.stop() }
        }
        func next() {
            guard let line = remaining.popFirst() else { return finish(failed ? Exit.commandFailed : Exit.ok) }
            run(line, client: client, options: o) { ok in
                if !ok { failed = true }
                if !ok && stopAtFirstError { finish(Exit.commandFailed) } else { next() }
            }
        }
        var started = false
        client.onEvent = { event in
            switch event {
            case .connection(true, _) where !started:
                started = true
                next()
            case .connection(false, let reason) where !started:
                Stderr.line("navclient: \(reason)")
                // With several servers the next one is tried before giving up.
                if !client.willRetry { finish(Exit.unreachable) }
            case .error(let e) where !started:
                started = true   // what follows (the close) is not news
                Stderr.line("navclient: \(describe(e))")
                finish(Exit.unreachable)
            default: break
            }
        }
        client.start()
        loop.run()
        loop.shutdown()
        return code
    }

    /// One command line: parse, send, report. `done(true)` on success.
    static func run(_ line: String, client: SessionClient, options o: ClientOptions, done: @escaping (Bool) -> Void) {
        let command: ClientCommand?
        do {
            command = try CommandLanguage.parse(line, flow: client.flow, state: client.state)
        } catch {
            Stderr.line("navclient: \(line): \(error)")
            return done(false)
        }
        /// A request whose error reply fails the line; `body` gets any other reply.
        func ask(_ request: JSONObject, _ body: @escaping (JSON) -> Void) {
            client.request(request) { reply in
                if let error = errorText(of: reply) {
                    Stderr.line("navclient: \(line): \(error)")
                    return done(false)
                }
                body(reply)
            }
        }
        switch command {
        case nil:
            done(true)
        case .ops(let ops)?:
            client.send(ops, label: o.label) { result in
                switch result {
                case .success(let ack):
                    printLine(o.json ? ServerMessage.ack(session: o.session, ack).json().encodedString() : "\(line) -> \(describe(ack))")
                    done(true)
                case .failure(let e):
                    Stderr.line("navclient: \(line): \(describe(e))")
                    done(false)
                }
            }
        case .get?:
            printLine(o.json ? (client.state ?? .null).encodedString() : TreeRenderer.plain(client.state ?? .null, flow: client.flow))
            done(true)
        case .history(let n)?:
            ask(historyRequest(o.session, limit: n)) { reply in
                if o.json { printLine(reply.encodedString()) } else {
                    for e in (reply["entries"]?.arrayValue ?? []).reversed() { printLine(CommandLanguage.describe(historyEntry: e, utcOffsetSeconds: localUTCOffset())) }
                }
                done(true)
            }
        case .show(let rev)?:
            ask(revisionRequest(o.session, rev: rev)) { reply in
                printLine(o.json ? reply.encodedString()
                          : "revision \(rev)\(reply["historic"] == true ? " (historic)" : " (current)")\n" + TreeRenderer.plain(reply["state"] ?? .null, flow: client.flow))
                done(true)
            }
        case .undo?:
            guard client.rev > 0 else {
                printLine("\(line) -> noop: nothing to undo at revision 0")
                return done(true)
            }
            client.send([["op": "restore", "rev": .int(Int64(client.rev - 1))]], base: client.rev, onConflict: .reject) { result in
                switch result {
                case .success(let ack):
                    printLine(o.json ? ServerMessage.ack(session: o.session, ack).json().encodedString() : "\(line) -> \(describe(ack))")
                    done(true)
                case .failure(let e):
                    Stderr.line("navclient: \(line): \(describe(e))")
                    done(false)
                }
            }
        case .members?:
            for m in client.members {
                printLine(o.json ? m.json.encodedString() : "\(m.client)  \(m.name)  \(m.role)\(m.rev.map { "  rev \($0)" } ?? "")")
            }
            done(true)
        case .sessions?:
            client.request(["type": "sessions"]) { reply in
                printSessions(reply, json: o.json)
                done(true)
            }
        case .help(let name)?:
            printLine(name.flatMap(CommandLanguage.usage) ?? CommandLanguage.commands.map(\.usage).joined(separator: "\n"))
            done(true)
        case .nothing(let why)?:
            printLine(o.json ? #"{"type":"noop","message":\#(JSON.string(why).encodedString())}"# : "\(line) -> noop: \(why)")
            done(true)
        case .join?, .create?:
            Stderr.line("navclient: join and create work in the interactive client; use --session NAME (with --create) here")
            done(false)
        case .quit?:
            done(true)
        }
    }

    static func printSessions(_ reply: JSON, json: Bool) {
        let list = reply["sessions"]?.arrayValue ?? []
        if json {
            printLine(JSON.array(list).encodedString())
            return
        }
        if list.isEmpty { printLine("(no sessions)") }
        for s in list {
            printLine("\(s["session"]?.stringValue ?? "?")  flow \(s["flow"]?.stringValue ?? "?")  rev \(s["rev"]?.description ?? "?")  members \(s["members"]?.description ?? "?")")
        }
    }

    /// `get`: the state once, as a tree or JSON.
    static func get(_ o: ClientOptions) -> Int32 {
        exec(o, commands: ["get"])
    }

    /// `sessions`: the list once; no session is joined.
    static func sessions(_ o: ClientOptions) -> Int32 {
        request(o, ["type": "sessions"]) { reply in
            guard reply["type"] == "sessions" else { return nil }
            printSessions(reply, json: o.json)
            return Exit.ok
        }
    }

    /// `delete NAME`: deletes a session (admin); its members are told and leave it.
    static func delete(_ o: ClientOptions, session: String) -> Int32 {
        request(o, ["type": "delete", "session": .string(session)]) { reply in
            switch reply["type"]?.stringValue {
            case "deleted":
                printLine(o.json ? reply.encodedString() : "deleted session '\(session)'")
                return Exit.ok
            case "error":
                let e = NavError(ErrorCode(rawValue: reply["code"]?.stringValue ?? "") ?? .internal, reply["message"]?.stringValue ?? "")
                Stderr.line("navclient: \(describe(e))")
                return Exit.commandFailed
            default:
                return nil
            }
        }
    }

    /// One request on a connection of its own (no session joined); `answer` returns
    /// the exit code once a reply is the one it waits for, nil to keep waiting.
    /// With several servers, each is tried in turn until one answers.
    static func request(_ o: ClientOptions, _ message: JSONObject, answer: @escaping (JSON) -> Int32?) -> Int32 {
        var code = Exit.unreachable
        for (i, url) in o.urls.enumerated() {
            var opened = false
            code = request(url, o, message, last: i == o.urls.count - 1, opened: &opened, answer: answer)
            if opened { break }
        }
        return code
    }

    private static func request(_ url: WebSocketURL, _ o: ClientOptions, _ message: JSONObject, last: Bool, opened: inout Bool,
                                answer: @escaping (JSON) -> Int32?) -> Int32 {
        let loop = o.makeLoop()
        let socket = WebSocketClient(loop: loop, url: url, headers: o.token.map { [("Authorization", "Bearer \($0)")] } ?? [])
        var code: Int32?
        var didOpen = false
        var m = message
        m["id"] = 1
        socket.onOpen = {
            didOpen = true
            socket.send(text: JSON.object(m).encoded())
        }
        socket.onText = { bytes in
            guard code == nil, let reply = try? JSON.parse(bytes), reply["id"] == 1, let c = answer(reply) else { return }
            code = c
            socket.close()
            loop.after(50) { loop.stop() }
        }
        socket.onClose = { _, reason in
            if code == nil && (didOpen || last) { Stderr.line("navclient: \(reason)") }
            loop.stop()
        }
        socket.connect()
        loop.run()
        loop.shutdown()
        opened = didOpen
        return code ?? Exit.unreachable
    }

    /// `watch`: the tree again on every change (or every server message as a JSON line
    /// with --json), reconnecting as needed, until interrupted.
    static func watch(_ o: ClientOptions) -> Int32 {
        let loop = o.makeLoop()
        let client = SessionClient(loop: loop, options: o.sessionOptions(reconnect: true))
        var everJoined = false
        if o.json {
            client.onMessage = { printLine($0.encodedString()) }
        }
        client.onEvent = { event in
            switch event {
            case .state where !o.json:
                printLine("--- \(o.session) rev \(client.rev)")
                printLine(TreeRenderer.plain(client.state ?? .null, flow: client.flow))
            case .connection(let up, let reason):
                if up { everJoined = true }
                if !o.json { Stderr.line("navclient: \(reason)") }
            case .error(let e):
                Stderr.line("navclient: \(describe(e))")
                if !everJoined { loop.stop() }
            case .reset(let reason):
                Stderr.line("navclient: \(reason)")
            default: break
            }
        }
        client.start()
        loop.run()
        loop.shutdown()
        return everJoined ? Exit.ok : Exit.unreachable
    }
}
