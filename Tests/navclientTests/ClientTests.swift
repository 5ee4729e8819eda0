import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import navclient

@Suite("navclient: options, command language, tree, line editor")
struct ClientTests {
    func state(_ h: Harness) -> JSON { h.json }

    func parse(_ line: String, _ h: Harness) throws -> ClientCommand? {
        try CommandLanguage.parse(line, flow: .demo, state: h.json)
    }

    @Test func severalServers() throws {
        let local = { (port: Int) in WebSocketURL(host: "127.0.0.1", port: port, target: "/ws") }
        #expect(try ClientOptions.parse(["7001,7002", "pop"]).get().urls == [local(7001), local(7002)])
        #expect(try ClientOptions.parse(["--server", "7001", "--server", "ws://127.0.0.1:7002/ws,7003"]).get().urls == [local(7001), local(7002), local(7003)])
        #expect(try ClientOptions.parse(["7001", "--server", "7002"]).get().urls == [local(7001), local(7002)])
        #expect(try ClientOptions.parse(["pop"]).get().urls == [WebSocketURL.default])
        guard case .failure(let e) = ClientOptions.parse(["--server", "7001,nope:99999"]) else { Issue.record(); return }
        #expect(e.message.contains("nope:99999"))
        #expect(ClientOptions.parse(["--server"]).map { _ in "" } == .failure(UsageError("--server needs a URL (ws://HOST:PORT/ws, HOST:PORT or PORT)")))
    }

    /// The session's data (what guards read), and what a guard did, in navclient's words.
    @Test func sessionUpdatesAndGuards() throws {
        let h = Harness()
        #expect(try parse("update --session user=ann cart=null", h) == .ops([["op": "update", "scope": "session", "data": ["user": "ann", "cart": nil]]]))
        #expect(throws: CommandError.self) { try parse("update --session e2 user=ann", h) }
        // A list or object as JSON (the demo's checkout needs a cart with something in it).
        #expect(try parse("update --session cart=[42,7] flags=[] note=[oops", h)
            == .ops([["op": "update", "scope": "session", "data": ["cart": [42, 7], "flags": [], "note": "[oops"]]]))
        let ack = Ack(id: .int(1), rev: 3, results: [.redirected], redirects: [Redirect(op: 0, guard: "signedIn", link: "/login?next=orders")])
        #expect(describe(ack) == "rev 3: redirected\n  redirected: op 0, guard signedIn -> /login?next=orders")
        let e = NavError(.guarded, "guard 'cartFull' denies route 'checkout' (e12)", op: 0, guarded: .init(guard: "cartFull", route: "checkout", entry: "e12"))
        #expect(describe(e).hasSuffix("[guard cartFull, route checkout, e12]"))
    }

    /// `--label` takes what the server takes (1 to 64 characters, counted as the server
    /// counts them), so a label never fails only once the command is out.
    @Test func labelLength() throws {
        #expect(try ClientOptions.parse(["--label", String(repeating: "x", count: 64), "pop"]).get().label?.count == 64)
        #expect(try ClientOptions.parse(["--label", String(repeating: "é", count: 64), "pop"]).get().label?.count == 64)
        let refusal = Result<ClientOptions, UsageError>.failure(UsageError("--label needs a label of 1 to 64 characters"))
        #expect(ClientOptions.parse(["--label", String(repeating: "x", count: 65), "pop"]) == refusal)
        #expect(ClientOptions.parse(["--label", "", "pop"]) == refusal)
        #expect(ClientOptions.parse(["--label"]) == refusal)
        // The server's own check agrees at the edge.
        let long = String(repeating: "x", count: 65)
        #expect(throws: NavError.self) { try Command(json: ["id": 1, "ops": [["op": "pop"]], "label": .string(long)]) }
        #expect(try Command(json: ["id": 1, "ops": [["op": "pop"]], "label": .string(String(long.dropLast()))]).label?.count == 64)
    }

    @Test func optionsAndURLs() throws {
        let o = try ClientOptions.parse(["10.0.0.5:9000", "--session", "lab", "--json", "push detail id=1", "back"]).get()
        #expect(o.url == WebSocketURL(host: "10.0.0.5", port: 9000, target: "/ws") && o.session == "lab" && o.json)
        #expect(o.rest == ["push detail id=1", "back"])
        #expect(try ClientOptions.parse(["alert \"Note: x\""]).get().rest == ["alert \"Note: x\""])
        #expect(try ClientOptions.parse(["ws://[::1]:7420/ws?token=t"]).get().url == WebSocketURL(host: "::1", port: 7420, target: "/ws?token=t"))
        #expect(WebSocketURL("localhost:8000") == WebSocketURL(host: "127.0.0.1", port: 8000, target: "/ws"))
        #expect(WebSocketURL("host:99999") == nil && WebSocketURL("ftp://h") == nil)
        // Regression: a colon forgotten became host `ws` or `http`, and "" the default server
        // (which joined another program's server).
        for bad in ["ws//x", "http//127.0.0.1:17510", "", "ws://", "ws://:7420/ws", "localhost", "h st:1", "a:b:1",
                    "ws://[]:1", "wss://user@h/ws", "ws://h:/ws", "ws:/h:1"] {
            #expect(WebSocketURL(bad) == nil, "accepted '\(bad)'")
        }
        #expect(WebSocketURL("ws://h") == WebSocketURL(host: "h", port: 7420, target: "/ws"))
        #expect(WebSocketURL("my-host.local_1:80/x") == WebSocketURL(host: "my-host.local_1", port: 80, target: "/x"))
        #expect(WebSocketURL("[fe80::1%25en0]:1") == WebSocketURL(host: "fe80::1%25en0", port: 1, target: "/ws"))
        // TLS: the name stays as written (the certificate is checked against it); 443 by default.
        #expect(WebSocketURL("wss://x") == WebSocketURL(host: "x", port: 443, target: "/ws", secure: true))
        #expect(WebSocketURL("https://localhost:7443/?session=demo") == WebSocketURL(host: "localhost", port: 7443, target: "/ws", secure: true))
        #expect(WebSocketURL("wss://nav.example.com/ws?token=t")?.description == "wss://nav.example.com:443/ws?token=t")
        // Regression: the web: address navsyncd prints and a bare port were taken for
        // commands, and navclient silently used the default server.
        let local = { (port: Int) in WebSocketURL(host: "127.0.0.1", port: port, target: "/ws") }
        #expect(try ClientOptions.parse(["http://127.0.0.1:7950/"]).get().url == local(7950))
        #expect(try ClientOptions.parse(["http://localhost:7950/?session=demo"]).get().url == local(7950))
        #expect(try ClientOptions.parse(["http://10.1.2.3:80/ws?token=t"]).get().url == WebSocketURL(host: "10.1.2.3", port: 80, target: "/ws?token=t"))
        #expect(try ClientOptions.parse(["7950", "push detail id=1"]).get().url == local(7950))
        #expect(try ClientOptions.parse(["7950", "push detail id=1"]).get().rest == ["push detail id=1"])
        #expect(try ClientOptions.parse(["wss://h:1/ws", "pop"]).get().url == WebSocketURL(host: "h", port: 1, target: "/ws", secure: true))
        for bad in ["ftp://h", "127.0.0.1:99999", "0", "[::1"] {
            guard case .failure(let refused) = ClientOptions.parse([bad, "pop"]) else { Issue.record("accepted \(bad)"); continue }
            #expect(refused.message.contains(bad) && refused.message.contains("ws://"), "\(refused.message)")
        }
        #expect(try ClientOptions.parse(["pop", "7950"]).get().rest == ["pop", "7950"])   // only the first word is the server
        guard case .failure(let e) = ClientOptions.parse(["--session", "bad name"]) else { Issue.record(); return }
        #expect(e.message.contains("--session"))
        guard case .failure(let e2) = ClientOptions.parse(["--frob"]) else { Issue.record(); return }
        #expect(e2.message == "unknown option '--frob'")
        guard case .failure(let help) = ClientOptions.parse(["-h"]) else { Issue.record(); return }
        #expect(help == .help)
    }

    @Test func commandsBecomeOperationsTypedByTheFlow() throws {
        let h = Harness.onMain()
        #expect(try parse("push detail id=42 note=\"gift wrap\"", h) == .ops([["op": "push", "route": "detail", "params": ["id": 42, "note": "gift wrap"]]]))
        #expect(try parse("route reviews id=1 rating=4.5", h) == .ops([["op": "route", "route": "reviews", "params": ["id": 1, "rating": 4.5]]]))
        #expect(try parse("present settings style=cover", h) == .ops([["op": "present", "route": "settings", "style": "cover"]]))
        #expect(try parse("push about at=Settings hints.transition=fade", h) == .ops([["op": "push", "route": "about", "at": "Settings", "hints": ["transition": "fade"]]]))
        #expect(try parse("pop 2", h) == .ops([["op": "pop", "count": 2]]))
        #expect(try parse("pop from=e11", h) == .ops([["op": "pop", "from": "e11"]]))
        #expect(try parse("select index=1", h) == .ops([["op": "select", "index": 1]]))
        #expect(try parse("select 2", h) == .ops([["op": "select", "index": 2]]))
        #expect(try parse("select cart", h) == .ops([["op": "select", "route": "cart"]]))
        #expect(try parse("select e5", h) == .ops([["op": "select", "entry": "e5"]]))
        #expect(try parse("setRoot main", h) == .ops([["op": "setRoot", "route": "main"]]))
        #expect(try parse("jumpTo list detail", h) == .ops([["op": "setStack", "routes": ["list", "detail"]]]))
        #expect(try parse("dismiss all", h) == .ops([["op": "dismiss", "all": true]]))
        #expect(try parse("open /product/42?note=x", h) == .ops([["op": "open", "url": "/product/42?note=x"]]))
        #expect(try parse("update q=shoes page=2 old=null", h) == .ops([["op": "update", "data": ["q": "shoes", "page": 2, "old": nil]]]))
        #expect(try parse("alert \"Delete this?\" message=Really", h) == .ops([["op": "alert", "title": "Delete this?", "message": "Really"]]))
        // Regression: `alert "Sure?" Yes No` made the title "Sure? Yes No" with one button.
        #expect(try parse("alert \"Sure?\" Yes No:cancel", h) == .ops([["op": "alert", "title": "Sure?", "buttons": [
            ["id": "yes", "label": "Yes"], ["id": "no", "label": "No", "role": "cancel"]]]]))
        #expect(try parse(#"{"op":"reset"}"#, h) == .ops([["op": "reset"]]))
        #expect(try parse("  # a comment", h) == nil && parse("", h) == nil)
        #expect(try parse("join lab", h) == .join("lab") && parse("help push", h) == .help("push") && parse("exit", h) == .quit)
    }

    /// History in navclient's language (docs/protocol.md, "History"): restore by revision or label, undo, history, show.
    @Test func historyCommands() throws {
        let h = Harness.onMain()
        #expect(try parse("restore 3", h) == .ops([["op": "restore", "rev": 3]]))
        #expect(try parse("restore \"checkout start\"", h) == .ops([["op": "restore", "label": "checkout start"]]))
        #expect(try parse("undo", h) == .undo)
        #expect(try parse("history", h) == .history(10))
        #expect(try parse("history 50", h) == .history(50))
        #expect(try parse("show 0", h) == .show(0))
        for (line, message) in [("history 0", "history takes a count of 1 to 1000, got '0'"), ("show", "usage: show REV"),
                                ("show x", "show takes a revision (a number >= 0), got 'x'"), ("restore", "usage: restore REV | LABEL (quote a label of several words)"),
                                ("restore -1", "restore takes a revision >= 0, got -1")] {
            #expect(throws: CommandError(message), "\(line)") { try parse(line, h) }
        }
        let entry: JSON = ["rev": 12, "ts": 1_796_064_345_000, "client": "c1", "name": "tablet",
                           "ops": [["op": "setRoot", "route": "main"], ["op": "restore", "rev": 3], ["op": "pop"]], "label": "checkout start"]
        #expect(CommandLanguage.describe(historyEntry: entry) == "rev 12  18:45:45  tablet  setRoot main, restore rev 3, pop  \"checkout start\"")
        #expect(CommandLanguage.describe(historyEntry: ["rev": 1, "ts": 0, "client": "c2", "ops": [["op": "open", "url": "/product/1"]]])
                == "rev 1  --:--:--  c2  open /product/1")
    }

    @Test func commandErrorsArePlain() {
        let h = Harness.onMain()
        let cases: [(String, String)] = [
            ("push detail id=abc", "id must be a whole number, got 'abc'"),
            ("push", "usage: push ROUTE"),
            ("push detail 42", "unexpected '42': params are written key=value"),
            ("pop zero", "pop takes a count of 1 or more, got 'zero'"),
            ("pop sideways=1", "'pop' has no field 'sideways'"),
            ("teleport", "unknown command 'teleport' (try help)"),
            ("alert \"unclosed", "a quote is not closed"),
            ("alert Sure? Yes:maybe", "button 'Yes': the role after ':' is default, cancel or destructive, got 'maybe'"),
            ("respond ok", "no alert is shown"),
            ("{nope", "that is not valid JSON"),
        ]
        for (line, message) in cases {
            do {
                _ = try CommandLanguage.parse(line, flow: .demo, state: h.json)
                Issue.record("\(line) parsed")
            } catch {
                #expect(error.message.hasPrefix(message), "\(line): \(error.message)")
            }
        }
    }

    /// One rule for commands that change nothing: not an error (`back` with nothing to
    /// go back from is like `dismiss` with nothing open, which the server answers noop).
    @Test func backWithNothingToGoBackFromIsNothingNotAnError() throws {
        let h = Harness.onMain()
        guard case .nothing(let why)? = try CommandLanguage.parse("back", flow: .demo, state: h.json) else { Issue.record(); return }
        #expect(why.hasPrefix("nothing to go back from"))
    }

    @Test func backAndRespondUseTheState() throws {
        var h = Harness.onMain()
        h.ok(["op": "push", "route": "detail", "params": ["id": 1]], ["op": "present", "route": "settings"], ["op": "push", "route": "about"])
        // The deepest stack that can pop: Settings, whose top is `about`.
        let top = h.entries("Settings")[1].id.description
        #expect(try parse("back", h) == .ops([["op": "pop", "from": .string(top)]]))
        h.ok(["op": "alert", "title": "Sure?"])
        let alert = h.json["alert"]!["id"]!
        #expect(try parse("respond ok", h) == .ops([["op": "respond", "alert": alert, "button": "ok"]]))
        h.ok(["op": "respond", "alert": alert, "button": "ok"])
        h.ok(["op": "alert", "title": "Sure?", "buttons": [["id": "yes", "label": "Yes"], ["id": "no", "label": "No"]]])
        let second = h.json["alert"]!["id"]!
        #expect(try parse("respond Yes", h) == .ops([["op": "respond", "alert": second, "button": "yes"]]))   // by its label
    }

    @Test func completionOffersCommandsRoutesAndParams() {
        let h = Harness.onMain()
        #expect(CommandLanguage.completions("po", flow: .demo, state: h.json) == ["pop", "popToRoot", "popToFirst", "popToLast", "popTo", "popBefore"])
        // Routes declared by coordinators on the active path (Home, Main, App), deepest first.
        let routes = CommandLanguage.completions("push ", flow: .demo, state: h.json)
        #expect(Array(routes.prefix(3)) == ["list", "category", "detail"] && routes.contains("profile") && routes.contains("login"))
        #expect(CommandLanguage.completions("push de", flow: .demo, state: h.json) == ["detail"])
        #expect(CommandLanguage.completions("push detail ", flow: .demo, state: h.json) == ["id=", "note="])
        #expect(CommandLanguage.completions("sessions ", flow: .demo, state: h.json).isEmpty)
    }

    @Test func treeShowsKindsRoutesParamsAndTheActivePath() {
        var h = Harness.onMain()
        h.ok(["op": "push", "route": "detail", "params": ["id": 42]], ["op": "alert", "title": "Saved"])
        let lines = TreeRenderer.render(h.json, flow: .demo)
        #expect(lines[0] == .init(text: "App (root)", active: true))
        #expect(lines[1] == .init(text: "└─ main e2", active: true))
        #expect(lines.contains(.init(text: "   ├─ home e3  (selected)", active: true)))
        #expect(lines.contains(.init(text: "   │  ├─ list \"Products\" e4", active: false)))
        #expect(lines.contains(.init(text: "   │  └─ detail id=42 \"Product 42\" e11 push", active: true)))
        #expect(lines.contains(.init(text: "   ├─ search e5", active: false)))
        #expect(lines.last == .init(text: "alert e12 \"Saved\" [ok]", active: true))
        #expect(TreeRenderer.title("Product {id} of {cat}", ["id": 4]) == "Product 4 of ")
    }

    @Test func lineEditorKeys() {
        var e = LineEditor()
        _ = e.feed(Array("push detial".utf8))
        _ = e.feed([0x1B, 0x5B, 0x44, 0x1B, 0x5B, 0x44])          // ← ←: "push deti|al"
        _ = e.feed([0x7F])                                         // backspace: "push det|al"
        _ = e.feed([0x1B, 0x5B, 0x43])                             // →: "push deta|l"
        _ = e.feed(Array("i".utf8))
        #expect(e.text == "push detail" && e.cursor == 10)
        _ = e.feed([0x01])                                         // Ctrl-A
        #expect(e.cursor == 0)
        #expect(e.feed([0x0D]) == [.submit("push detail")])
        #expect(e.text.isEmpty)
        _ = e.feed(Array("back".utf8))
        _ = e.feed([0x0D])
        _ = e.feed([0x1B, 0x5B, 0x41])                             // ↑: the last line
        #expect(e.text == "back")
        _ = e.feed([0x1B, 0x5B, 0x41])
        #expect(e.text == "push detail")
        _ = e.feed([0x1B, 0x5B, 0x42, 0x1B, 0x5B, 0x42])           // ↓ ↓: back to an empty line
        #expect(e.text.isEmpty)
        _ = e.feed(Array("push de".utf8))
        #expect(e.feed([0x09]) == [.complete("push de")])
        #expect(e.complete(with: ["detail"]).isEmpty && e.text == "push detail ")
        _ = e.feed([0x17])                                         // Ctrl-W: the last word
        #expect(e.text == "push ")
        _ = e.feed(Array("é".utf8))
        #expect(e.text == "push é")
        _ = e.feed([0x15])                                         // Ctrl-U
        #expect(e.feed([0x1B, 0x5B, 0x35, 0x7E]) == [.pageUp])   // PgUp: ESC [ 5 ~
        #expect(e.feed([0x1B, 0x5B, 0x36, 0x7E]) == [.pageDown]) // PgDn: ESC [ 6 ~
        #expect(e.feed([0x04]) == [.endOfInput])
    }
}
