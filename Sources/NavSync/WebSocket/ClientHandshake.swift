/// Where a client connects: `ws://HOST:PORT/PATH`, `wss://…` over TLS, or a bare
/// `HOST:PORT` (README.md, "What is built").
public struct WebSocketURL: Sendable, Equatable, CustomStringConvertible {
    /// An IP address or a DNS name (resolved when connecting; with TLS, the name the
    /// server's certificate must carry).
    public var host: String
    public var port: Int
    /// Path and query, `/ws` by default.
    public var target: String
    /// `wss://` (or `https://`): TLS, the certificate checked.
    public var secure: Bool

    public static let `default` = WebSocketURL(host: "127.0.0.1", port: 7420, target: "/ws")

    public init(host: String, port: Int, target: String, secure: Bool = false) {
        self.host = host
        self.port = port
        self.target = target
        self.secure = secure
    }

    /// What a user may type for a server: `ws://HOST[:PORT][/path]` or `wss://…`;
    /// `http://HOST[:PORT][/…]` or `https://…`, the address navsyncd prints for browsers
    /// (its WebSocket is `/ws` on the same port); `HOST:PORT[/path]`; or a bare `PORT` on
    /// 127.0.0.1. Without a port, 7420 (443 over TLS). Anything else is nil: an empty
    /// text, a scheme it does not know or a misspelt one (`ws//x`, `http//h:1`), an empty
    /// host, a host with characters no host name or address has, a bad port.
    public init?(_ text: String) {
        var rest = Substring(text)
        var web = false
        var schemed = false
        secure = false
        if let (scheme, isWeb, isSecure) = Self.schemes.first(where: { rest.hasPrefix($0.0) }) {
            rest = rest.dropFirst(scheme.count)
            web = isWeb
            secure = isSecure
            schemed = true
        } else if rest.contains("://") {
            return nil
        } else if !rest.isEmpty, rest.allSatisfy(\.isASCIIDigit) {
            rest = "127.0.0.1:" + rest
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = slash < rest.endIndex ? String(rest[slash...]) : ""
        // `ws//x` and `http//h:1` (a colon forgotten) would read as host `ws` or `http`.
        if path.hasPrefix("//") || authority.isEmpty { return nil }
        // A web address names a page; the WebSocket of that server is /ws.
        target = path.isEmpty || (web && !path.hasPrefix("/ws")) ? "/ws" : path
        var hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            guard !hostPart.isEmpty, hostPart.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." || $0 == "%" || $0.isLetter }) else { return nil }
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portPart = after.dropFirst() } else if !after.isEmpty { return nil }
        } else {
            if let colon = authority.lastIndex(of: ":") {
                hostPart = authority[..<colon]
                portPart = authority[authority.index(after: colon)...]
            } else {
                hostPart = authority
            }
            guard !hostPart.isEmpty, hostPart.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "." || $0 == "_" }) else { return nil }
        }
        // Without a scheme a host needs its port: `localhost` alone is a word, not a server.
        if !schemed && portPart == nil { return nil }
        // Over TLS the name stays as written: the certificate is checked against it.
        if hostPart == "localhost" && !secure { hostPart = "127.0.0.1" }
        host = String(hostPart)
        if let portPart {
            guard let p = Int(portPart), (1...65535).contains(p) else { return nil }
            port = p
        } else {
            port = secure ? 443 : 7420
        }
    }

    /// Each scheme taken, whether it names a web page, and whether it is TLS.
    private static let schemes = [("ws://", false, false), ("wss://", false, true), ("http://", true, false), ("https://", true, true)]

    public var description: String { "\(secure ? "wss" : "ws")://\(host.contains(":") ? "[\(host)]" : host):\(port)\(target)" }

    /// Whether a word on a command line is meant as a server address (a scheme, a bare
    /// port, or HOST:PORT), so one that does not parse is a mistake, not a command.
    public static func looksLikeAddress(_ word: String) -> Bool {
        guard !word.isEmpty, !word.contains(" ") else { return false }
        if word.contains("://") || word.allSatisfy(\.isASCIIDigit) { return true }
        guard let colon = word.lastIndex(of: ":") else { return false }
        let port = word[word.index(after: colon)...]
        return !port.isEmpty && port.allSatisfy(\.isASCIIDigit) || word.hasPrefix("[")
    }

    /// What to say about a word that looks like an address but is not one.
    public static func refusal(_ word: String) -> String {
        "'\(word)' is not a server address: use ws://HOST:PORT/ws or wss://…, http://HOST:PORT/ or https://… (what navsyncd prints as web:), HOST:PORT or PORT"
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// The client side of the opening handshake (RFC 6455 section 4.1).
public enum ClientHandshake {
    /// The upgrade request, with a key made of 16 random bytes.
    public static func request(_ url: WebSocketURL, key: String, subprotocol: String? = "navsync.v1",
                               headers: [(String, String)] = []) -> [UInt8] {
        var text = "GET \(url.target) HTTP/1.1\r\nHost: \(url.host.contains(":") ? "[\(url.host)]" : url.host):\(url.port)\r\n"
        text += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        if let subprotocol { text += "Sec-WebSocket-Protocol: \(subprotocol)\r\n" }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    public enum Result: Sendable, Equatable {
        /// More bytes are needed.
        case needMore
        /// Upgraded; `remaining` are frame bytes that came with the response; `deflate`
        /// what the server answered to a permessage-deflate offer (nil: not taken).
        case accepted(subprotocol: String?, remaining: [UInt8], deflate: PerMessageDeflate.ClientAgreement? = nil)
        /// Refused: the status and the response body's first line, or what was wrong.
        case refused(status: Int, reason: String)
    }

    /// Checks the server's response: 101, `Upgrade: websocket`, and the accept value
    /// for our key (RFC 6455 4.1, items 1–4 of the client's checks).
    public static func response(_ buffer: [UInt8], key: String, offeredDeflate: Bool = false,
                                acceptValue: WebSocketHandshake.AcceptValue = WebSocketHandshake.acceptValue(forKey:)) -> Result {
        // Bytes scanned by hand: the generic `firstRange(of:)` and string splitting were
        // most of a load generator's work when thousands of members connect at once.
        guard let end = headEnd(buffer) else {
            return buffer.count > 16 * 1024 ? .refused(status: 0, reason: "response head too large") : .needMore
        }
        var lines: [Substring] = []
        var start = 0
        for i in 0..<(end - 2) where buffer[i] == 13 && buffer[i + 1] == 10 {
            lines.append(Substring(String(decoding: buffer[start..<i], as: UTF8.self)))
            start = i + 2
        }
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            return .refused(status: 0, reason: "not an HTTP response")
        }
        var headers: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingSpaces))
        }
        func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
        guard status == 101 else {
            let body = String(decoding: buffer[end...], as: UTF8.self)
            let reason = body.split(separator: "\n").first.map(String.init) ?? String(statusLine.count > 2 ? statusLine[2] : "")
            return .refused(status: status, reason: reason)
        }
        guard header("upgrade")?.lowercased() == "websocket" else { return .refused(status: 101, reason: "no 'Upgrade: websocket'") }
        guard header("sec-websocket-accept") == acceptValue(key) else {
            return .refused(status: 101, reason: "wrong Sec-WebSocket-Accept")
        }
        var deflate: PerMessageDeflate.ClientAgreement?
        if let extensions = header("sec-websocket-extensions") {
            // Only what was offered may be answered (RFC 6455 section 4.1, item 5).
            guard offeredDeflate, let agreed = PerMessageDeflate.accepted(response: extensions) else {
                return .refused(status: 101, reason: "the server answered with an extension not offered or not allowed: \(extensions)")
            }
            deflate = agreed
        }
        return .accepted(subprotocol: header("sec-websocket-protocol"), remaining: Array(buffer[end...]), deflate: deflate)
    }

    /// Where the head ends: just past its blank line (CR LF CR LF), if it came.
    private static func headEnd(_ b: [UInt8]) -> Int? {
        var i = 3
        while i < b.count {
            if b[i] == 10, b[i - 1] == 13, b[i - 2] == 10, b[i - 3] == 13 { return i + 1 }
            i += 1
        }
        return nil
    }
}

extension String {
    package func trimmingCharacters() -> String { Substring(self).trimmingSpaces }
}

