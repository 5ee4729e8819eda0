import NavSyncLibuv
import Testing
@testable import NavSync
@testable import NavSyncServer
@testable import NavSyncRuntime

/// `--trusted-proxy` on real sockets: behind a trusted proxy the per-address limit and
/// the origin check see the client; from anyone else the headers change nothing.
@Suite("Behind a proxy")
struct ProxyLoopbackTests {
    static func upgrade(_ c: RawClient, _ headers: String) -> String {
        c.upgrade(extra: headers.isEmpty ? "" : headers.replacing("; ", with: "\r\n") + "\r\n")
    }

    @Test func aTrustedProxysClientsAreCountedAndCheckedAsThemselves() throws {
        let server = try TestServer.sessions(server: {
            $0.trustedProxies = ProxyTrust([IPRange("127.0.0.0/8")!])
            $0.maxConnectionsPerIP = 1
        })
        defer { server.stop() }
        let public_ = "Origin: https://nav.example; X-Forwarded-Proto: https; X-Forwarded-Host: nav.example"
        let a = try RawClient(port: server.port)
        #expect(Self.upgrade(a, "X-Forwarded-For: 203.0.113.7; " + public_) == "HTTP/1.1 101 Switching Protocols",
                "the public origin behind the proxy is the server's own")
        // Its own per-address limit: a second from the same client is refused, another client is not.
        let b = try RawClient(port: server.port)
        #expect(Self.upgrade(b, "X-Forwarded-For: 203.0.113.7; " + public_).hasPrefix("HTTP/1.1 503 "))
        let c = try RawClient(port: server.port)
        #expect(Self.upgrade(c, "X-Forwarded-For: 6.6.6.6, 203.0.113.8; " + public_) == "HTTP/1.1 101 Switching Protocols")
        // Another page's origin is still refused, and so is the public origin over the wrong scheme.
        let d = try RawClient(port: server.port)
        #expect(Self.upgrade(d, "X-Forwarded-For: 203.0.113.9; Origin: https://evil.example; X-Forwarded-Proto: https; X-Forwarded-Host: nav.example").hasPrefix("HTTP/1.1 403 "))
        let e = try RawClient(port: server.port)
        #expect(Self.upgrade(e, "Forwarded: for=203.0.113.10;proto=http;host=nav.example; Origin: https://nav.example").hasPrefix("HTTP/1.1 403 "))
    }

    /// Connections the proxy opens at once, before any says whom it is for, are not
    /// refused as the proxy's (the limit is per client, counted once the request is read).
    @Test func aTrustedProxysConnectionsAreNotLimitedAsItsOwn() throws {
        let server = try TestServer.sessions(server: {
            $0.trustedProxies = ProxyTrust([IPRange("127.0.0.1")!])
            $0.maxConnectionsPerIP = 1
        })
        defer { server.stop() }
        let clients = try (1...3).map { _ in try RawClient(port: server.port) }   // all open before any request
        for (i, c) in clients.enumerated() {
            #expect(Self.upgrade(c, "X-Forwarded-For: 203.0.113.\(i + 1)") == "HTTP/1.1 101 Switching Protocols", "client \(i)")
        }
    }

    @Test func fromAnyoneElseTheHeadersAreIgnored() throws {
        let open = try TestServer.sessions()
        defer { open.stop() }
        let a = try RawClient(port: open.port)
        #expect(Self.upgrade(a, "X-Forwarded-For: 203.0.113.7; Origin: https://nav.example; X-Forwarded-Proto: https; X-Forwarded-Host: nav.example").hasPrefix("HTTP/1.1 403 "),
                "a forged public origin is not believed")
        let limited = try TestServer.sessions(server: { $0.maxConnectionsPerIP = 1 })
        defer { limited.stop() }
        let b = try RawClient(port: limited.port)
        #expect(Self.upgrade(b, "X-Forwarded-For: 203.0.113.8") == "HTTP/1.1 101 Switching Protocols")
        let c = try RawClient(port: limited.port)
        #expect(Self.upgrade(c, "X-Forwarded-For: 203.0.113.9").hasPrefix("HTTP/1.1 503 "), "still counted as 127.0.0.1, whatever it claims")
    }

    /// What a trusted proxy is checked against: the socket's host, read back from its
    /// peer as the connection keeps it.
    @Test func theSocketHostIsThePeerWithoutItsPort() {
        #expect(UV.Address.host(ofPeer: "127.0.0.1:50312") == "127.0.0.1")
        #expect(UV.Address.host(ofPeer: "[::1]:50312") == "::1")
        #expect(UV.Address.host(ofPeer: "[2001:db8::7]:443") == "2001:db8::7")
        let v6 = UV.Address(host: "::1", port: 8080)!
        #expect(UV.Address.host(ofPeer: v6.description(host: v6.host)) == v6.host)
    }
}
