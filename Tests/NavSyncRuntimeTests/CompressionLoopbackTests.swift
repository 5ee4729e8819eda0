import NavSyncLibuv
import Testing
@testable import NavSync
@testable import NavSyncServer
@testable import NavSyncRuntime

/// permessage-deflate on real sockets: the client transport offers it, the server
/// compresses a broadcast once for its members, and everything reads back intact.
@Suite("Compression", .serialized)
struct CompressionLoopbackTests {
    final class Outcome: @unchecked Sendable {
        var agreed: [PerMessageDeflate.ClientAgreement?] = []
        var patches: [JSON] = []
        var bytesIn = 0
    }

    /// Two members of `demo`; the first sends an update of ~3 KB of data; both read the patch.
    static func run(port: Int, offer: Bool, seed: Int) -> Outcome {
        let outcome = Outcome()
        runClientLoop { loop in
            var members: [WebSocketClient] = []
            var joined = 0
            for _ in 0..<2 {
                let m = WebSocketClient(loop: loop, url: WebSocketURL(host: "127.0.0.1", port: port, target: "/ws"), compression: offer)
                m.onOpen = { m.send(text: Array(#"{"type":"join","session":"demo"}"#.utf8)) }
                m.onText = { bytes in
                    guard let message = try? JSON.parse(bytes) else { return }
                    if message["type"] == "joined" {
                        joined += 1
                        if joined == 2 {
                            outcome.bytesIn = -members.reduce(0) { $0 + $1.bytesIn }   // from here on: the patch
                            let products = (0..<40).map { #"{"id":\#($0),"name":"Trail Runner \#($0)","price":\#(19 + $0 + seed).99,"tags":["new","sale"]}"# }
                            let command = #"{"type":"command","session":"demo","id":1,"ops":[{"op":"update","scope":"session","data":{"products":[\#(products.joined(separator: ","))]}}]}"#
                            members[0].send(text: Array(command.utf8))
                        }
                    } else if message["type"] == "patch" {
                        outcome.patches.append(message)
                        if outcome.patches.count == 2 {
                            outcome.agreed = members.map(\.deflate)
                            outcome.bytesIn += members.reduce(0) { $0 + $1.bytesIn }
                            members.forEach { $0.close() }
                            loop.after(100) { loop.stop() }
                        }
                    }
                }
                members.append(m)
                m.connect()
            }
            return members
        }
        return outcome
    }

    @Test func aBroadcastIsCompressedForMembersThatTookIt() throws {
        let on = try TestServer.sessions()
        defer { on.stop() }
        let compressed = Self.run(port: on.port, offer: true, seed: 1)
        #expect(compressed.patches.count == 2 && compressed.agreed.allSatisfy { $0?.serverNoContextTakeover == true })
        #expect(compressed.patches[0] == compressed.patches[1] && compressed.patches[0]["ops"]?.arrayValue?.isEmpty == false)

        let off = try TestServer.sessions(server: { $0.compressionThreshold = nil })
        defer { off.stop() }
        let plain = Self.run(port: off.port, offer: true, seed: 1)
        #expect(plain.patches.count == 2 && plain.agreed.allSatisfy { $0 == nil }, "--compression off: not negotiated")
        #expect(plain.patches[0]["ops"] == compressed.patches[0]["ops"])
        #expect(compressed.bytesIn * 3 < plain.bytesIn, "the patch: compressed \(compressed.bytesIn) B against \(plain.bytesIn) B")

        let declined = Self.run(port: on.port, offer: false, seed: 2)
        #expect(declined.patches.count == 2 && declined.agreed.allSatisfy { $0 == nil }, "a client that does not offer it gets none")
    }
}
