import Testing
@testable import NavSync
@testable import NavSyncServer

/// permessage-deflate's negotiation (RFC 7692 section 7.1) and the decoder's RSV1 rules
/// (docs/protocol.md, "Client messages"), as values; zlib itself is the runtime's (`DeflateTests`).
@Suite("permessage-deflate: negotiation and frames")
struct PerMessageDeflateTests {
    func agreed(_ headers: String...) -> Int? { PerMessageDeflate.negotiate(headers)?.serverWindowBits }

    @Test func theFirstOfferNavsyncdCanHonourIsTaken() {
        #expect(agreed("permessage-deflate") == 15)
        #expect(PerMessageDeflate.negotiate(["permessage-deflate"])?.responseHeader
                == "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
        #expect(agreed("permessage-deflate; client_max_window_bits") == 15)
        #expect(agreed("permessage-deflate; client_no_context_takeover; server_no_context_takeover") == 15)
        #expect(agreed("permessage-deflate; server_max_window_bits=10") == 10)
        #expect(PerMessageDeflate.negotiate(["permessage-deflate; server_max_window_bits=9"])?.responseHeader
                == "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=9")
        #expect(agreed("permessage-deflate; server_max_window_bits=\"12\"") == 12)
        #expect(agreed("Permessage-Deflate; Client_Max_Window_Bits=10") == 15)
        // Declined offers are passed over, in order, across headers and commas.
        #expect(agreed("permessage-deflate; server_max_window_bits=8, permessage-deflate; server_max_window_bits=11") == 11)
        #expect(agreed("x-webkit-deflate-frame", "permessage-deflate") == 15)
        #expect(agreed("permessage-deflate; server_max_window_bits=16, permessage-deflate") == 15)
    }

    @Test func offersWithBadParametersAreDeclined() {
        for offer in ["permessage-deflate; server_max_window_bits=8", "permessage-deflate; server_max_window_bits",
                      "permessage-deflate; server_max_window_bits=7", "permessage-deflate; server_max_window_bits=0x0f",
                      "permessage-deflate; client_max_window_bits=16", "permessage-deflate; client_no_context_takeover=1",
                      "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
                      "permessage-deflate; level=9", "permessage-deflate;", "x-webkit-deflate-frame", ""] {
            #expect(agreed(offer) == nil, "\(offer)")
        }
    }

    @Test func aClientChecksTheAnswer() {
        #expect(PerMessageDeflate.accepted(response: "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
                == .init(serverNoContextTakeover: true, serverWindowBits: 15))
        #expect(PerMessageDeflate.accepted(response: "permessage-deflate; server_max_window_bits=10")
                == .init(serverNoContextTakeover: false, serverWindowBits: 10))
        for bad in ["permessage-deflate, permessage-deflate", "x-custom", "permessage-deflate; foo", "permessage-deflate; server_max_window_bits=20"] {
            #expect(PerMessageDeflate.accepted(response: bad) == nil, "\(bad)")
        }
        // An extension answered that was never offered fails the handshake.
        let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n"
        guard case .refused = ClientHandshake.response(Array(head.utf8), key: "dGhlIHNhbXBsZSBub25jZQ==") else { Issue.record(); return }
        #expect(ClientHandshake.response(Array(head.utf8), key: "dGhlIHNhbXBsZSBub25jZQ==", offeredDeflate: true)
                == .accepted(subprotocol: nil, remaining: [], deflate: .init()))
    }

    /// Inflates by reversing the bytes: enough to see where the decoder calls it.
    final class Reverser: WebSocketInflating, @unchecked Sendable {
        func inflate(_ payload: [UInt8], limit: Int) -> Result<[UInt8], WebSocketError> {
            payload.count > limit ? .failure(.messageTooLarge(limit: limit)) : .success(payload.reversed())
        }
    }

    func frame(_ b0: UInt8, _ payload: [UInt8]) -> [UInt8] { [b0, UInt8(payload.count)] + payload }

    @Test func rsv1MarksACompressedMessage() {
        var plain = WebSocketDecoder(role: .client, maxMessage: 1024)
        #expect(plain.feed(frame(0xC1, Array("olleh".utf8))).error == .reservedBits, "without the extension RSV1 is reserved")
        var d = WebSocketDecoder(role: .client, maxMessage: 1024, inflater: Reverser())
        #expect(d.feed(frame(0xC1, Array("olleh".utf8))).events == [.text(Array("hello".utf8))])
        #expect(d.feed(frame(0x81, Array("as is".utf8))).events == [.text(Array("as is".utf8))], "uncompressed messages still pass")
        // Fragments: RSV1 on the first only; the text is checked once inflated.
        #expect(d.feed(frame(0x41, Array("dl".utf8)) + frame(0x80, Array("row".utf8))).events == [.text(Array("world".utf8))])
        var cont = WebSocketDecoder(role: .client, maxMessage: 1024, inflater: Reverser())
        #expect(cont.feed(frame(0x01, [0x61]) + frame(0xC0, [0x62])).error == .compressedBitMisplaced)
        var control = WebSocketDecoder(role: .client, maxMessage: 1024, inflater: Reverser())
        #expect(control.feed(frame(0xC9, [])).error == .compressedBitMisplaced)
        var bad = WebSocketDecoder(role: .client, maxMessage: 1024, inflater: Reverser())
        #expect(bad.feed(frame(0xC1, [0xC3, 0xA9])).error == .invalidUTF8)   // "é" backwards is not UTF-8
        var large = WebSocketDecoder(role: .client, maxMessage: 4, inflater: Reverser())
        #expect(large.feed(frame(0xC1, Array("12345".utf8))).error == .messageTooLarge(limit: 4), "too large once inflated")
        // Incompressible data grows a little when deflated: a message of exactly the
        // limit may be longer on the wire, and is taken.
        final class Shrinker: WebSocketInflating, @unchecked Sendable {
            func inflate(_ payload: [UInt8], limit: Int) -> Result<[UInt8], WebSocketError> { .success(Array(payload.prefix(limit))) }
        }
        var exact = WebSocketDecoder(role: .client, maxMessage: 100, inflater: Shrinker())
        #expect(exact.feed(frame(0xC1, [UInt8](repeating: 0x61, count: 105))).events == [.text([UInt8](repeating: 0x61, count: 100))])
        var plainLimit = WebSocketDecoder(role: .client, maxMessage: 100, inflater: Shrinker())
        #expect(plainLimit.feed(frame(0x81, [UInt8](repeating: 0x61, count: 105))).error == .messageTooLarge(limit: 100), "uncompressed: the limit itself")
    }
}
