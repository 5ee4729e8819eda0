import NavSync

/// The RFC 6455 opening handshake (section 4.2), server side.
extension WebSocketHandshake {
    /// Whether the request asks to upgrade to WebSocket at all (then it is either
    /// accepted or refused as a handshake, never served as plain HTTP).
    public static func isUpgrade(_ request: HTTPRequest) -> Bool {
        request.lists("Upgrade", "websocket")
    }

    /// What a successful handshake agreed.
    public struct Agreement: Sendable, Equatable {
        /// The 101 response to send.
        public var response: HTTPResponse
        /// The subprotocol chosen from the client's offer, if any.
        public var subprotocol: String?
    }

    /// Checks an upgrade request (RFC 6455 4.2.1) and answers it: GET, HTTP/1.1,
    /// `Connection: Upgrade`, version 13 only (else 426 naming 13), exactly one key of
    /// 16 base64-encoded bytes. The first offered subprotocol that the server supports
    /// is chosen; a client that offers only others is accepted without one.
    public enum Outcome: Sendable, Equatable {
        case accepted(Agreement)
        /// The error response to send before closing.
        case refused(HTTPResponse)
    }

    public static func accept(_ request: HTTPRequest, subprotocols: [String], acceptValue: AcceptValue = acceptValue(forKey:)) -> Outcome {
        guard request.method == "GET" else {
            var r = HTTPResponse.text(405, "a WebSocket handshake must be a GET\n")
            r.headers.append(("Allow", "GET"))
            return .refused(r)
        }
        guard request.minorVersion == 1 else { return .refused(.text(400, "a WebSocket handshake needs HTTP/1.1\n")) }
        guard request.lists("Connection", "upgrade") else { return .refused(.text(400, "missing 'Connection: Upgrade'\n")) }
        let versions = request.headers("Sec-WebSocket-Version")
        guard versions == ["13"] else {
            var r = HTTPResponse.text(426, "only WebSocket version 13 is supported\n")
            r.headers.append(("Sec-WebSocket-Version", "13"))
            return .refused(r)
        }
        let keys = request.headers("Sec-WebSocket-Key")
        guard keys.count == 1 else {
            return .refused(.text(400, keys.isEmpty ? "missing Sec-WebSocket-Key\n" : "more than one Sec-WebSocket-Key\n"))
        }
        guard let nonce = Base64.decode(keys[0]), nonce.count == 16 else {
            return .refused(.text(400, "Sec-WebSocket-Key must be 16 bytes in base64\n"))
        }
        // (Most clients offer none: the list is made only when one is offered.)
        let offers = request.headers("Sec-WebSocket-Protocol")
        let chosen = offers.isEmpty ? nil : offers.flatMap { $0.split(separator: ",").map { $0.trimmingSpaces } }.first { subprotocols.contains($0) }
        var headers: [(String, String)] = [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                           ("Sec-WebSocket-Accept", acceptValue(keys[0]))]
        if let chosen { headers.append(("Sec-WebSocket-Protocol", chosen)) }
        return .accepted(Agreement(response: HTTPResponse(status: 101, headers: headers), subprotocol: chosen))
    }
}
