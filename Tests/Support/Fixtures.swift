// Fixtures the test targets share: the second test flow and the hub driven as a value.
import Foundation
import Testing
import NavSync
import NavSyncServer

/// A second flow, unlike the demo: a stack at the root, tabs inside a stack entry,
/// recursion through non-initial routes, a root coordinator that is not the tree's
/// root. The same file serves the integration tests (`navsyncd --flows`).
package let studioFlow: Flow = {
    let path = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")   // the repository root
    let file = "/" + path + "/tests/integration/flows/studio.json"
    guard let bytes = FileManager.default.contents(atPath: file).map(Array.init) else { preconditionFailure("cannot read \(file)") }
    return try! Flow.load(bytes: bytes, file: file)
}()

/// The session layer as a value: messages in, deliveries out, no sockets.
package final class HubFixture {
    package var n = 0
    package var hub: Hub
    package var now: Int64 = 0

    package init(_ configure: (inout HubConfiguration) -> Void = { _ in }) {
        var config = HubConfiguration()
        configure(&config)
        hub = Hub(configuration: config, flows: [studioFlow], ids: .counting())
        #expect(hub.handle(.started, now: 0).isEmpty)   // no journal: the demo session, no effects
    }

    package func connect() -> Int {
        n += 1
        #expect(hub.handle(.connected(n, grant: nil), now: now).isEmpty)
        return n
    }

    package func send(_ c: Int, _ message: JSON) -> [Hub.Effect] {
        hub.handle(.text(c, message.encoded()), now: now)
    }

    package func disconnect(_ c: Int) -> [Hub.Effect] { hub.handle(.disconnected(c), now: now) }

    /// The presence interval passes.
    package func tick(busy: Bool = false) -> [Hub.Effect] { hub.handle(busy ? .busyTick : .tick, now: now) }

    /// The messages one connection receives from these effects, as JSON.
    package func inbox(_ c: Int, _ effects: [Hub.Effect]) -> [JSON] { Self.inbox(c, effects) }

    package static func inbox(_ c: Int, _ effects: [Hub.Effect]) -> [JSON] {
        effects.compactMap { e -> JSON? in
            switch e {
            case .send(let to, let m, let id): return to == c ? m.json(id: id) : Optional<JSON>.none
            case .broadcast(_, let m, let to): return to.contains(c) ? m.json() : Optional<JSON>.none
            default: return Optional<JSON>.none
            }
        }
    }
}

/// The tests' seeded generator (the core's SplitMix64), so every failure replays exactly.
package typealias SeededRandom = SplitMix64
