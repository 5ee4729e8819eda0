/// The RFC 6455 opening handshake (section 4.2): what both sides compute. The server
/// side, checking a request and answering it, is in NavSyncServer.
public enum WebSocketHandshake {
    /// RFC 6455 1.3: appended to the key before hashing.
    public static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`: base64(SHA-1(key + guid)). The
    /// core's own, Foundation only (`SHA1`, `Base64`); the runtime passes OpenSSL's.
    public typealias AcceptValue = @Sendable (_ key: String) -> String

    public static func acceptValue(forKey key: String) -> String {
        Base64.encode(SHA1.hash(Array((key + guid).utf8)))
    }
}
