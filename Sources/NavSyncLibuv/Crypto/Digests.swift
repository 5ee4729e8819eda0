import NavSync
import CSSL

/// OpenSSL's digests and base64, where the core has its own (Foundation only, for the
/// app client): the runtime's WebSocket handshakes and the page's ETag use these.
package enum Digests {
    /// `Sec-WebSocket-Accept` for a key (RFC 6455 section 4.2.2).
    @Sendable package static func webSocketAccept(_ key: String) -> String {
        base64(sha1(Array((key + WebSocketHandshake.guid).utf8)))
    }

    /// SHA-1 (the WebSocket handshake's `Sec-WebSocket-Accept`, RFC 6455 section 4.2.2).
    @Sendable package static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 20)
        _ = SHA1(bytes, bytes.count, &digest)
        return digest
    }

    /// Base64 (RFC 4648, padded).
    package static func base64(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: (bytes.count + 2) / 3 * 4 + 1)
        let n = EVP_EncodeBlock(&out, bytes, Int32(bytes.count))
        return String(decoding: out.prefix(Int(n)), as: UTF8.self)
    }
}
