import NavSync
import NavSyncServer
import NavSyncClient
import TestSupport

/// A transport whose server is the core's `Hub`, driven as a value: no sockets, no
/// clocks. Every connection is a hub connection; what a navigator sends goes through
/// the hub, and what the hub sends back arrives as `.text` events, in order. Tests can
/// also see every message sent, drop connections, and refuse connects.
@MainActor
final class HubTransport: WebSocketTransport, @unchecked Sendable {
    var hub: Hub
    private var connections: [Int: Connection] = [:]
    private var nextID = 0
    /// Every message sent by any client, as JSON, in order.
    private(set) var sent: [JSON] = []
    /// URLs connected to, in order.
    private(set) var connects: [String] = []
    /// Hosts that refuse connections (a dead server).
    var dead: Set<String> = []
    /// While set, nothing the hub answers reaches a client (a link that broke after the
    /// server applied a command, before its ack got out).
    var deaf = false
    /// While set, messages wait in both directions until `deliver` (a network with a
    /// round trip): what clients send waits in `upstream`, what the hub answers in
    /// `downstream`, each in order.
    var holding = false
    private var upstream: [(Connection, [UInt8])] = []
    private var downstream: [(Int, TransportEvent)] = []
    var inFlight: Int { upstream.count + downstream.count }

    /// `epoch`: what this server's epochs start with (another one: a session made anew);
    /// `client`: what the client ids it hands out start with.
    init(epoch: String = "ep", client: String = "c", configure: (inout HubConfiguration) -> Void = { _ in }) {
        var config = HubConfiguration()
        configure(&config)
        hub = Hub(configuration: config, flows: [studioFlow], ids: .counting(client: client, epoch: epoch))
        _ = hub.handle(.started, now: 0)
    }

    /// The app's backend (docs/backend.md): answers each hook call the hub makes, at once.
    var backend: ((HookCall) -> HookReply)?

    /// Commands sent, as their ops lists.
    var commands: [[JSON]] { sent.filter { $0["type"] == "command" }.map { $0["ops"]?.arrayValue ?? [] } }

    nonisolated func connect(to url: WebSocketURL, headers: [(String, String)],
                             events: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        MainActor.assumeIsolated { open(url, events) }
    }

    private func open(_ url: WebSocketURL, _ events: @escaping @Sendable (TransportEvent) -> Void) -> Connection {
        nextID += 1
        let c = Connection(id: nextID, transport: self, events: events)
        connects.append(url.description)
        if dead.contains("\(url.host):\(url.port)") {
            events(.failed(NavError(.offline, "connection refused")))
            return c
        }
        connections[c.id] = c
        perform(hub.handle(.connected(c.id, grant: nil), now: 0))
        events(.opened)
        return c
    }

    /// Lets up to `up` of the waiting client messages reach the hub, then up to `down`
    /// of the waiting answers reach their clients (nil: all of them).
    func deliver(up: Int? = nil, down: Int? = nil) {
        let ups = upstream.prefix(up ?? upstream.count)
        upstream.removeFirst(ups.count)
        for (c, bytes) in ups { handleText(bytes, from: c) }
        let downs = downstream.prefix(down ?? downstream.count)
        downstream.removeFirst(downs.count)
        for (id, event) in downs { connections[id]?.events(event) }
    }

    /// Everything in flight delivered, both ways, until nothing is left.
    func drain() {
        while inFlight > 0 { deliver() }
    }

    fileprivate func received(_ bytes: [UInt8], from c: Connection) {
        guard connections[c.id] != nil else { return }
        if holding { upstream.append((c, bytes)); return }
        handleText(bytes, from: c)
    }

    private func handleText(_ bytes: [UInt8], from c: Connection) {
        guard connections[c.id] != nil else { return }
        if let json = try? JSON.parse(bytes) { sent.append(json) }
        perform(hub.handle(.text(c.id, bytes), now: 0))
    }

    /// The server drops a connection (a node dies): its client sees it closed.
    func drop(_ id: Int, code: UInt16? = nil, reason: String = "gone") {
        guard let c = connections.removeValue(forKey: id) else { return }
        perform(hub.handle(.disconnected(id), now: 0))
        c.events(.closed(code: code, reason: reason))
    }

    /// Open connection ids.
    var open: [Int] { connections.keys.sorted() }

    fileprivate func closed(_ c: Connection, code: UInt16?) {
        guard connections.removeValue(forKey: c.id) != nil else { return }
        perform(hub.handle(.disconnected(c.id), now: 0))
        c.events(.closed(code: code, reason: ""))
    }

    /// Presence gathered so far goes out (the hub's interval passing).
    func tick() { perform(hub.handle(.tick, now: 0)) }

    private func perform(_ effects: [Hub.Effect]) {
        if deaf { return }
        for e in effects {
            switch e {
            case .send(let to, let m, let id): emit(to, .text(m.bytes(id: id)))
            case .broadcast(_, let m, let to): for c in to { emit(c, .text(m.bytes())) }
            case .close(let c, let code, _): if let conn = connections[c] { closed(conn, code: code) }
            case .hook(let call): if let backend { perform(hub.handle(.hook(call.id, backend(call)), now: 0)) }
            default: break
            }
        }
    }

    private func emit(_ to: Int, _ event: TransportEvent) {
        if holding { downstream.append((to, event)) } else { connections[to]?.events(event) }
    }

    final class Connection: TransportConnection, @unchecked Sendable {
        let id: Int
        weak var transport: HubTransport?
        let events: @Sendable (TransportEvent) -> Void
        init(id: Int, transport: HubTransport, events: @escaping @Sendable (TransportEvent) -> Void) {
            self.id = id; self.transport = transport; self.events = events
        }
        func send(text: [UInt8]) { MainActor.assumeIsolated { transport?.received(text, from: self) } }
        func close() { MainActor.assumeIsolated { transport?.closed(self, code: 1000) } }
        func abort() { MainActor.assumeIsolated { transport?.closed(self, code: nil) } }
    }
}

/// Lets the navigator's event task run until `condition` holds (bounded by turns of
/// the main actor, not by time: nothing here waits on a clock).
@MainActor
func settle(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<2_000 {
        if condition() { return true }
        await Task.yield()
    }
    return condition()
}

/// Never wakes within a test: no ticks, no backoff unless a test steps it.
let noSleep: @Sendable (Int64) async -> Void = { _ in
    while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
}
