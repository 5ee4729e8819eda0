import NavSyncLibuv
import Testing
@preconcurrency import Glibc
@testable import NavSync
@testable import NavSyncServer
@testable import NavSyncRuntime

/// Native TLS on real sockets: `wss://` and HTTPS on the server's one port, the client
/// transport checking the certificate and the name, and peers that do not speak TLS.
@Suite("TLS", .serialized)
struct TLSLoopbackTests {
    /// A certificate made for the test, its PEM file (what clients trust), and a
    /// session server serving TLS with it.
    static func server(addresses: [String] = ["127.0.0.1"], _ configure: (inout ServerConfiguration) -> Void = { _ in }) throws -> (TestServer, String) {
        let made = try SelfSignedCertificate(names: [], addresses: addresses)
        let file = try made.save()
        let context = try TLSContext.server(made)
        let server = try TestServer.sessions(server: {
            $0.tls = context
            configure(&$0)
        })
        return (server, file)
    }

    final class Outcome: @unchecked Sendable {
        var opened = false
        var messages: [String] = []
        var closed: String?
    }

    /// One WebSocket over the client transport: hello on open, the welcome, then close.
    static func hello(_ url: String, caFile: String?) -> Outcome {
        let outcome = Outcome()
        runClientLoop { loop in
            if let caFile { loop.tls = try? TLSContext.client(caFile: caFile) }
            let socket = WebSocketClient(loop: loop, url: WebSocketURL(url)!)
            socket.onOpen = {
                outcome.opened = true
                socket.send(text: Array(#"{"type":"hello","name":"tls"}"#.utf8))
            }
            socket.onText = { text in
                outcome.messages.append(String(decoding: text, as: UTF8.self))
                socket.close()
            }
            socket.onClose = { _, reason in
                outcome.closed = reason
                loop.stop()
            }
            socket.connect()
            return socket
        }
        return outcome
    }

    @Test func aClientThatTrustsTheCertificateTalksOverWSS() throws {
        let (server, ca) = try Self.server()
        defer { server.stop() }
        let outcome = Self.hello("wss://127.0.0.1:\(server.port)/ws", caFile: ca)
        #expect(outcome.opened && outcome.messages.first?.contains(#""type":"welcome""#) == true, "\(outcome.messages) \(outcome.closed ?? "")")
        // The certificate names localhost too; over TLS the name is kept as written and checked.
        let named = Self.hello("wss://localhost:\(server.port)/ws", caFile: ca)
        #expect(named.opened, "\(named.closed ?? "")")
    }

    @Test func anUntrustedCertificateOrAnotherNameIsRefused() throws {
        let (server, _) = try Self.server()
        defer { server.stop() }
        let untrusted = Self.hello("wss://127.0.0.1:\(server.port)/ws", caFile: nil)
        #expect(!untrusted.opened && untrusted.closed?.contains("certificate verify failed") == true, "\(untrusted.closed ?? "")")
        // A certificate for another address: trusted, but not this server's name.
        let (other, otherCA) = try Self.server(addresses: ["192.0.2.1"])
        defer { other.stop() }
        let mismatch = Self.hello("wss://127.0.0.1:\(other.port)/ws", caFile: otherCA)
        #expect(!mismatch.opened && mismatch.closed?.contains("mismatch") == true, "\(mismatch.closed ?? "")")
    }

    @Test func plainHTTPOnTheTLSPortIsToldToUseTLS() throws {
        let (server, _) = try Self.server()
        defer { server.stop() }
        let reply = server.http("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(reply.hasPrefix("HTTP/1.1 400 ") && reply.contains("use https:// or wss://"), "\(reply)")
        // A plain-text WebSocket upgrade gets the same, never a 101.
        let c = try RawClient(port: server.port)
        #expect(c.upgrade().hasPrefix("HTTP/1.1 400 "))
    }

    /// A broken handshake is closed; one that stalls half way is closed at the
    /// handshake timeout; meanwhile others are served as usual.
    @Test func brokenAndStalledHandshakesCostABoundedAmount() throws {
        let (server, ca) = try Self.server { $0.connection.handshakeTimeout = 300 }
        defer { server.stop() }
        let garbage = try RawClient(port: server.port)
        garbage.send([0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5])
        #expect(garbage.isClosedByPeer())
        // A ClientHello's first bytes, then nothing.
        let stalled = try RawClient(port: server.port)
        stalled.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        let during = Self.hello("wss://127.0.0.1:\(server.port)/ws", caFile: ca)
        #expect(during.opened, "others are served while one stalls")
        let start = Date.monotonic
        #expect(stalled.isClosedByPeer())
        #expect(Date.monotonic - start < 4, "closed at the handshake timeout (ticks are once a second)")
    }

    /// The session client over wss://: commands and the mirror, as over ws://.
    @Test func theSessionClientWorksOverTLS() throws {
        let (server, ca) = try Self.server()
        defer { server.stop() }
        final class Box: @unchecked Sendable { var ack: Ack? }
        let box = Box()
        let port = server.port
        let stopped = runClientLoop { loop in
            loop.tls = try? TLSContext.client(caFile: ca)
            var options = SessionClient.Options.local(port)
            options.urls = [WebSocketURL("wss://localhost:\(port)/ws")!]
            let client = SessionClient(loop: loop, options: options)
            var sent = false
            client.onEvent = { event in
                guard case .connection(true, _) = event, !sent else { return }
                sent = true
                client.send([NavOperation(.setRoot(.init("main")))]) { r in
                    if case .success(let a) = r { box.ack = a }
                    client.stop()
                    loop.after(50) { loop.stop() }
                }
            }
            client.start()
            return client
        }
        #expect(stopped && box.ack?.rev == 1)
    }
}
