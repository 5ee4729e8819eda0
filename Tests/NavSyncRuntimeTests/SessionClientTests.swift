import NavSyncLibuv
import Dispatch
import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

@Suite("SessionClient and the README's examples", .serialized)
struct SessionClientTests {
    /// The README's "Library use" example, as written there.
    @Test func readmeLibraryExample() throws {
        let flow = try Flow("shop", root: "App") {
            CoordinatorType("App", .root, initial: "login") {
                Route("login")
                Route("main", opens: "Main")
            }
            CoordinatorType("Main", .tabs, initial: ["home"]) {
                Route("home", opens: "Home", tab: ["title": "Home"])
            }
            CoordinatorType("Home", .stack, initial: "list") {
                Route("list")
                Route("detail", params: [("id", "int")], title: "Product {id}")
            }
        }
        var session = Sequencer(flow: flow, epoch: "e1")
        let outcome = session.submit(Command(id: .int(1), operations: [
            NavOperation(.setRoot(.init("main"))),
            NavOperation(.route(.init("detail", params: ["id": 42]))),
        ]), client: "me")
        guard case .applied(let ack, let patch) = outcome else { Issue.record("\(outcome)"); return }
        #expect(ack.rev == 1 && ack.results == [.applied, .applied])
        #expect(try NavDocument(flow: flow).state.json.applying(patch.ops) == session.state.json)
    }

    final class Box: @unchecked Sendable {
        var acks: [Ack] = []
        var errors: [NavError] = []
        var mirror: JSON?
        var rev = 0
        let done = DispatchSemaphore(value: 0)
    }

    /// The Swift API against a real server: send operations, get acks and errors, and a
    /// mirror equal to the server's state.
    @Test func sendsOperationsAndMirrorsTheSession() throws {
        let server = try TestServer.sessions()
        defer { server.stop() }
        let box = Box()
        let port = server.port
        startThread {
            let loop = ClientLoop()
            let client = SessionClient(loop: loop, options: .local(port))
            var sent = false
            client.onEvent = { event in
                guard case .connection(true, _) = event, !sent else { return }
                sent = true
                client.send([NavOperation(.setRoot(.init("main"))), NavOperation(.route(.init("detail", params: ["id": 42])))]) { r in
                    if case .success(let a) = r { box.acks.append(a) }
                }
                client.send([["op": "push", "route": "nowhere"]]) { r in
                    if case .failure(let e) = r { box.errors.append(e) }
                    // Answered in order: the mirror has seen revision 1 by now.
                    box.mirror = client.state
                    box.rev = client.rev
                    client.stop()
                    loop.after(50) { loop.stop() }
                }
            }
            client.start()
            withExtendedLifetime(client) { loop.run() }
            loop.shutdown()
            box.done.signal()
        }
        #expect(box.done.wait(timeout: .now() + 10) == .success)
        #expect(box.acks.map(\.rev) == [1] && box.acks.first?.results == [.applied, .applied])
        #expect(box.errors.map(\.code) == [.unknownRoute])
        let c = try RawClient(port: server.port)
        c.upgrade()
        c.sendJSON(["type": "get", "session": "demo"])
        #expect(c.next(type: "snapshot")?["state"]?.normalized == box.mirror?.normalized && box.rev == 1)
    }

    /// The async surface from a task: the client runs on a loop of its own; commands
    /// are awaited (acks and thrown errors), states arrive as a stream, `close` ends it.
    @Test func asyncSendStatesAndClose() async throws {
        let server = try TestServer.sessions()
        defer { server.stop() }
        let client = SessionClient.running(.local(server.port))
        var states = client.states().makeAsyncIterator()
        let ack = try await client.send([["op": "setRoot", "route": "main"], ["op": "push", "route": "detail", "params": ["id": 7]]])
        #expect(ack.rev == 1 && ack.results == [.applied, .applied])
        do {
            _ = try await client.send([["op": "push", "route": "nowhere"]])
            Issue.record("an unknown route was acknowledged")
        } catch {
            #expect(error.code == .unknownRoute && error.op == 0)
        }
        // The stream starts at the state when it was asked for and follows every change.
        var seen: [JSON] = []
        while let state = await states.next() {
            seen.append(state)
            if state["root"]?["current"]?["route"] == "main" { break }
        }
        #expect(seen.last?["root"]?["current"]?["route"] == "main")
        await client.close()
        var after = 0
        while await states.next() != nil { after += 1 }      // what was buffered, then the end
        #expect(after <= 2)
        do {
            _ = try await client.send([["op": "pop"]])
            Issue.record("a closed client sent a command")
        } catch {
            #expect(error.message.contains("closed"))
        }
    }

    /// History from Swift (docs/protocol.md, "History"): a past state (the mirror untouched), restore
    /// by revision and by label, and an undo refused once someone else changed it.
    @Test func asyncHistoryStateAtAndRestore() async throws {
        let server = try TestServer.sessions()
        defer { server.stop() }
        let client = SessionClient.running(.local(server.port))
        _ = try await client.send([["op": "setRoot", "route": "main"]])
        _ = try await client.send([["op": "setRoot", "route": "login"]])
        let (rev, earliest, entries) = try await client.history()
        #expect(rev == 2 && earliest == 0 && entries.map(\.rev) == [2, 1] && entries[0].ops == [["op": "setRoot", "route": "login"]])
        let first = try await client.state(at: 1)
        #expect(first["root"]?["current"]?["route"] == "main")
        let ack = try await client.restore(rev: 1, base: 2)
        #expect(ack.rev == 3 && ack.results == [.applied])
        do {
            _ = try await client.restore(rev: 0, base: 2)
            Issue.record("a stale undo applied")
        } catch {
            #expect(error.code == .conflict && error.rev == 3)
        }
        do {
            _ = try await client.state(at: 9)
            Issue.record("a future revision was shown")
        } catch {
            #expect(error.code == .notFound)
        }
        await client.close()
    }

    /// A client refused at its first join (no such session) is done: awaiting a command
    /// on it throws instead of waiting forever.
    @Test func asyncSendOnARefusedClientThrows() async throws {
        let server = try TestServer.sessions()
        defer { server.stop() }
        var options = SessionClient.Options.local(server.port)
        options.session = "no-such-session"
        let client = SessionClient.running(options)
        var states = client.states().makeAsyncIterator()
        #expect(await states.next() == nil)    // refused: it finishes without a state
        do {
            _ = try await client.send([["op": "pop"]])
            Issue.record("sent on a refused client")
        } catch {
            #expect(error.message.contains("closed"))
        }
        await client.close()
    }
}

@Suite("The web page and the module")
struct WebPageTests {
    /// The files are embedded at build time (EmbedWebPlugin); what is served is the files.
    @Test(arguments: [("index.html", WebPage.index), ("navsync.js", WebPage.module), ("navsync.d.ts", WebPage.types)])
    func embeddedFilesAreTheFilesInWeb(name: String, file: WebPage) throws {
        let root = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        let same = FileSystem.read("/" + root + "/web/" + name) == file.bytes
        #expect(same, "web/\(name) and the embedded copy differ")
    }

    @Test func thePageLoadsNothingFromOutside() {
        #expect(!WebPage.indexHTML.contains("http://") && !WebPage.indexHTML.contains("https://"), "no outside URLs")
        #expect(WebPage.indexHTML.contains("from \"/navsync.js\""), "the page is built on the module")
    }

    @Test func servedWithTypeAndValidator() {
        let request = HTTPRequest(method: "GET", target: "/", minorVersion: 1, headers: [("Host", "x")], body: [])
        let page = WebPage.index.response(for: request)
        #expect(page.status == 200 && page.headers.contains { $0 == ("Content-Type", "text/html; charset=utf-8") })
        #expect(!page.headers.contains { $0.0 == "Access-Control-Allow-Origin" }, "the page is not for other origins")
        var again = request
        again.headers.append(("If-None-Match", WebPage.index.etag))
        #expect(WebPage.index.response(for: again).status == 304 && WebPage.index.response(for: again).body.isEmpty)
    }

    @Test func theModuleMayBeImportedFromAnyOrigin() {
        let request = HTTPRequest(method: "GET", target: "/navsync.js", minorVersion: 1, headers: [("Host", "x")], body: [])
        let module = WebPage.module.response(for: request)
        #expect(module.status == 200 && module.headers.contains { $0 == ("Content-Type", "text/javascript; charset=utf-8") })
        #expect(module.headers.contains { $0 == ("Access-Control-Allow-Origin", "*") })
        var again = request
        again.headers.append(("If-None-Match", WebPage.module.etag))
        let cached = WebPage.module.response(for: again)
        #expect(cached.status == 304 && cached.headers.contains { $0 == ("Access-Control-Allow-Origin", "*") })
        #expect(WebPage.module.etag != WebPage.types.etag)
    }
}

@Suite("Origins (docs/protocol.md, \"Who may do what (--auth FILE)\")")
struct OriginPolicyTests {
    let onLAN = OriginPolicy(host: "0.0.0.0", port: 7420, localAddresses: ["192.0.2.2", "fd00::2"])

    @Test func clientsWithoutAnOriginAreNotChecked() {
        #expect(onLAN.allows(origin: nil, host: "anything"))
    }

    @Test func theServersOwnAddressIsAlwaysAllowedAndListedOriginsAdd() {
        let p = OriginPolicy(listed: ["http://app.example:3000"], host: "127.0.0.1", port: 7420)
        #expect(p.allows(origin: "http://127.0.0.1:7420", host: "127.0.0.1:7420"))
        #expect(p.allows(origin: "http://localhost:7420", host: "localhost:7420"))
        #expect(p.allows(origin: "http://app.example:3000", host: "127.0.0.1:7420"))
        #expect(!p.allows(origin: "http://127.0.0.1:9999", host: "127.0.0.1:7420"))
    }

    @Test func aPageFromAnAddressOfThisMachineIsOwn() {
        #expect(onLAN.allows(origin: "http://192.0.2.2:7420", host: "192.0.2.2:7420"))
        #expect(onLAN.allows(origin: "http://[fd00::2]:7420", host: "[fd00::2]:7420"))
        #expect(onLAN.allows(origin: "http://127.0.0.1:7420", host: "127.0.0.1:7420"))
        // An address that is not this machine's, or an origin that is not the Host.
        #expect(!onLAN.allows(origin: "http://192.0.2.99:7420", host: "192.0.2.99:7420"))
        #expect(!onLAN.allows(origin: "http://192.0.2.2:8000", host: "192.0.2.2:7420"))
    }

    @Test func aDNSNameIsNeverEnoughSoRebindingFails() {
        #expect(!onLAN.allows(origin: "http://evil.example:7420", host: "evil.example:7420"))
        let listed = OriginPolicy(listed: ["http://kiosk.lan:7420"], host: "0.0.0.0", port: 7420)
        #expect(listed.allows(origin: "http://kiosk.lan:7420", host: "kiosk.lan:7420"))
    }
}

extension SessionClient.Options {
    /// A client of the session `demo` on a test server on 127.0.0.1.
    static func local(_ port: Int) -> Self {
        var options = Self()
        options.url = WebSocketURL(host: "127.0.0.1", port: port, target: "/ws")
        return options
    }
}
