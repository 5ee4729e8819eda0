import Testing
@testable import NavSync
@testable import NavSyncServer

/// `--trusted-proxy`: who a request is from behind reverse proxies.
@Suite("Forwarded")
struct ForwardedTests {
    let trust = ProxyTrust([IPRange("127.0.0.1")!, IPRange("10.0.0.0/8")!, IPRange("fd00::/8")!])

    @Test func addressesAndRanges() {
        #expect(IPAddress("192.0.2.1")?.bytes == [192, 0, 2, 1])
        #expect(IPAddress("::1")?.bytes == [UInt8](repeating: 0, count: 15) + [1])
        #expect(IPAddress("2001:db8::ff00:42:8329")?.bytes.count == 16)
        #expect(IPAddress("::ffff:192.0.2.1")?.bytes.suffix(6) == [0xff, 0xff, 192, 0, 2, 1])
        for bad in ["", "1.2.3", "1.2.3.256", "01.2.3.4", "1:2:3", "::1::2", "g::1", "1.2.3.4.5", "unknown", "_hidden"] {
            #expect(IPAddress(bad) == nil, "\(bad)")
        }
        #expect(IPRange("10.0.0.0/8")!.contains(IPAddress("10.200.3.4")!) && !IPRange("10.0.0.0/8")!.contains(IPAddress("11.0.0.1")!))
        #expect(IPRange("192.0.2.128/25")!.contains(IPAddress("192.0.2.200")!) && !IPRange("192.0.2.128/25")!.contains(IPAddress("192.0.2.100")!))
        #expect(!IPRange("127.0.0.1")!.contains(IPAddress("::1")!), "families never mix")
        #expect(IPRange("0.0.0.0/0")!.contains(IPAddress("203.0.113.9")!))
        #expect(IPRange("10.0.0.0/33") == nil && IPRange("nope/8") == nil && IPRange("fd00::/129") == nil)
        #expect(IPRange("10.1.2.3/8")!.description == "10.1.2.3/8")
    }

    @Test func headersFromAnUntrustedPeerAreIgnored() {
        let forged = [("X-Forwarded-For", "203.0.113.7"), ("X-Forwarded-Proto", "https"), ("Forwarded", "for=198.51.100.1")]
        #expect(trust.client(peer: "192.0.2.9", headers: forged) == .init(address: "192.0.2.9"))
        #expect(ProxyTrust().client(peer: "127.0.0.1", headers: forged) == .init(address: "127.0.0.1"), "no --trusted-proxy: nobody is")
    }

    @Test func xForwardedForGivesTheRightMostUntrustedHop() {
        // A client may send its own X-Forwarded-For: the proxy appends; the forged part is left of the truth.
        let h = [("X-Forwarded-For", "6.6.6.6, 203.0.113.7, 10.1.1.1"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "nav.example")]
        #expect(trust.client(peer: "127.0.0.1", headers: h) == .init(address: "203.0.113.7", scheme: "https", host: "nav.example"))
        #expect(trust.client(peer: "127.0.0.1", headers: [("x-forwarded-for", "203.0.113.7:5123")]).address == "203.0.113.7")
        #expect(trust.client(peer: "127.0.0.1", headers: [("X-Forwarded-For", "10.0.0.2, 10.0.0.3")]).address == "10.0.0.2", "all trusted: the left-most")
        #expect(trust.client(peer: "127.0.0.1", headers: [("X-Forwarded-For", "garbage")]).address == "127.0.0.1", "nothing usable: the proxy itself")
        #expect(trust.client(peer: "127.0.0.1", headers: []).address == "127.0.0.1")
    }

    /// With `--forwarded-header forwarded`, RFC 7239's header alone is read: its hops
    /// say what the client asked for; `X-Forwarded-*` is ignored.
    /// `--trusted-hops`: a client on the proxy's own (trusted) address writes its own
    /// X-Forwarded-For; by addresses alone its forged hop is taken (and it picks its
    /// address past the per-address limit); counting hops, the one the proxy appended is.
    @Test func trustedHopsCountFromTheRight() {
        let forged = [("X-Forwarded-For", "198.51.100.1, 127.0.0.1")]   // written by the client, then nginx appended 127.0.0.1
        #expect(trust.client(peer: "127.0.0.1", headers: forged).address == "198.51.100.1", "by addresses: the forged hop")
        var one = trust
        one.hops = 1
        #expect(one.client(peer: "127.0.0.1", headers: forged).address == "127.0.0.1", "one proxy: the hop it appended")
        var two = trust
        two.hops = 2
        #expect(two.client(peer: "127.0.0.1", headers: [("X-Forwarded-For", "6.6.6.6, 203.0.113.7, 10.1.1.1")]).address == "203.0.113.7")
        #expect(two.client(peer: "127.0.0.1", headers: [("X-Forwarded-For", "203.0.113.7")]).address == "127.0.0.1",
                "fewer hops than proxies: the header is not believed")
        #expect(one.client(peer: "192.0.2.9", headers: forged).address == "192.0.2.9", "an untrusted peer still is itself")
    }

    @Test func forwardedHopsSayWhatTheClientAskedFor() {
        var trust = self.trust
        trust.header = .forwarded
        let h = [("X-Forwarded-For", "6.6.6.6"),
                 ("Forwarded", #"for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711";proto=HTTPS;host="nav.example""#),
                 ("Forwarded", "for=10.0.0.5;proto=http")]
        #expect(trust.client(peer: "127.0.0.1", headers: h) == .init(address: "2001:db8:cafe::17", scheme: "https", host: "nav.example"))
        #expect(trust.client(peer: "127.0.0.1", headers: [("Forwarded", "for=unknown")]).address == "127.0.0.1")
        #expect(trust.client(peer: "10.9.9.9", headers: [("Forwarded", "For=\"192.0.2.1\"")]).address == "192.0.2.1", "names are case-insensitive")
        #expect(trust.client(peer: "127.0.0.1", headers: [("X-Forwarded-For", "203.0.113.7"), ("X-Forwarded-Host", "evil.example")])
                == .init(address: "127.0.0.1"), "the other family is ignored")
    }

    /// By default (the family nginx's recipe sets) a `Forwarded` header is ignored,
    /// whatever it claims: nginx hands a client's own through untouched.
    @Test func aForwardedHeaderIsIgnoredUnlessNamed() {
        #expect(trust.header == .xForwardedFor)
        let spoofed = [("Forwarded", "for=198.51.100.1;host=evil.example;proto=https"), ("X-Forwarded-For", "203.0.113.7"),
                       ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "nav.example")]
        #expect(trust.client(peer: "127.0.0.1", headers: spoofed) == .init(address: "203.0.113.7", scheme: "https", host: "nav.example"))
        #expect(trust.client(peer: "127.0.0.1", headers: [("Forwarded", "for=198.51.100.1")]) == .init(address: "127.0.0.1"))
        #expect(ProxyTrust.Header(rawValue: "forwarded") == .forwarded && ProxyTrust.Header(rawValue: "x-forwarded-for") == .xForwardedFor)
    }
}
