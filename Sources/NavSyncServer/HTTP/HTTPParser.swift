import NavSync
/// Why a request was refused: the status to answer with and a reason for the body.
public struct HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var reason: String
    public init(_ status: Int, _ reason: String) {
        self.status = status
        self.reason = reason
    }
    public var description: String { "\(status) \(reason)" }
}

/// Limits on what one request may hold. Each bounds the memory a connection can make
/// the server hold before it has proven to be a real client.
public struct HTTPLimits: Sendable, Equatable {
    /// Bytes of the request line; longer is 414. 8 KiB, like nginx's default.
    public var maxRequestLine = 8 * 1024
    /// Bytes of the whole header section; larger is 431.
    public var maxHeaderBytes = 32 * 1024
    /// Header fields; more is 431.
    public var maxHeaders = 100
    /// Body bytes (`POST /api/...`); larger is 413. One protocol message at most.
    public var maxBody = 1 << 20

    public init() {}
}

/// An HTTP/1.1 request parser: bytes in, requests out, no I/O (RFC 9112).
///
/// Feed it what the socket delivered, then call `next()` until it needs more. Pipelined
/// requests come out one by one; the bytes after a request stay buffered (after a
/// WebSocket upgrade, `takeRemaining()` hands them to the frame decoder).
///
/// Strict where leniency is a smuggling risk: bare LF, obsolete line folding, spaces
/// before the colon, `Content-Length` together with `Transfer-Encoding`, and differing
/// `Content-Length`s are refused.
public struct HTTPParser: Sendable {
    public enum Result: Sendable, Equatable {
        case request(HTTPRequest)
        case needMore
        case failed(HTTPError)
    }

    public let limits: HTTPLimits
    private var buffer: [UInt8] = []
    /// Where the search for the end of the header section resumes: byte-at-a-time
    /// input is scanned once, not once per byte.
    private var scanned = 0
    private var failure: HTTPError?

    public init(limits: HTTPLimits = HTTPLimits()) { self.limits = limits }

    public mutating func feed(_ bytes: UnsafeRawBufferPointer) { buffer.append(contentsOf: bytes) }
    public mutating func feed(_ bytes: [UInt8]) { buffer.append(contentsOf: bytes) }

    /// Bytes received after the last request returned.
    public mutating func takeRemaining() -> [UInt8] {
        defer { buffer = []; scanned = 0 }
        return buffer
    }

    public var hasBufferedBytes: Bool { !buffer.isEmpty }

    public mutating func next() -> Result {
        if let failure { return .failed(failure) }
        let result = parse()
        if case .failed(let e) = result { failure = e }
        return result
    }

    private func lineLimitError(_ end: Int?) -> HTTPError? {
        // The request line alone is over its limit before any CRLF was seen.
        guard buffer.count > limits.maxRequestLine else { return nil }
        let lineEnd = buffer.firstIndex(of: 0x0A) ?? buffer.count
        if lineEnd > limits.maxRequestLine { return HTTPError(414, "request line longer than \(limits.maxRequestLine) bytes") }
        return nil
    }

    private mutating func parse() -> Result {
        // Find CRLF CRLF, resuming where the last call stopped.
        var end: Int?
        var i = max(scanned, 0)
        while i < buffer.count {
            let b = buffer[i]
            if b == 0x0A {
                guard i > 0, buffer[i - 1] == 0x0D else { return .failed(HTTPError(400, "bare LF in the header section")) }
                if i >= 3, buffer[i - 2] == 0x0A, buffer[i - 3] == 0x0D { end = i + 1; break }
            }
            i += 1
        }
        guard let headerEnd = end else {
            scanned = max(0, buffer.count)
            if let e = lineLimitError(nil) { return .failed(e) }
            if buffer.count > limits.maxHeaderBytes { return .failed(HTTPError(431, "header section larger than \(limits.maxHeaderBytes) bytes")) }
            return .needMore
        }
        if headerEnd > limits.maxHeaderBytes { return .failed(HTTPError(431, "header section larger than \(limits.maxHeaderBytes) bytes")) }

        // Every line up to the blank one ends in CRLF (bare LF was refused above): each
        // is read where it is, from one LF to the next (no list of lines is made).
        let sectionEnd = headerEnd - 2
        func lineEnd(from start: Int) -> Int {
            var lf = start
            while buffer[lf] != 0x0A { lf += 1 }
            return lf
        }
        var lineCount = 0
        for i in 0..<sectionEnd where buffer[i] == 0x0A { lineCount += 1 }
        let firstEnd = lineEnd(from: 0)
        let requestLine = buffer[0..<(firstEnd - 1)]
        if requestLine.count > limits.maxRequestLine { return .failed(HTTPError(414, "request line longer than \(limits.maxRequestLine) bytes")) }
        var request: HTTPRequest
        switch Self.requestLine(requestLine) {
        case .success(let r): request = r
        case .failure(let e): return .failed(e)
        }
        if lineCount - 1 > limits.maxHeaders { return .failed(HTTPError(431, "more than \(limits.maxHeaders) header fields")) }
        request.headers.reserveCapacity(lineCount - 1)
        var start = firstEnd + 1
        while start < sectionEnd {
            let end = lineEnd(from: start)
            switch Self.headerField(buffer[start..<(end - 1)]) {
            case .success(let field): request.headers.append(field)
            case .failure(let e): return .failed(e)
            }
            start = end + 1
        }
        if request.minorVersion == 1 && request.headers("Host").count != 1 {
            return .failed(HTTPError(400, "an HTTP/1.1 request needs exactly one Host header"))
        }

        // Body framing (RFC 9112 section 6): Content-Length only.
        let lengths = request.headers("Content-Length")
        if !request.headers("Transfer-Encoding").isEmpty {
            if !lengths.isEmpty { return .failed(HTTPError(400, "both Content-Length and Transfer-Encoding")) }
            return .failed(HTTPError(501, "Transfer-Encoding is not supported; send Content-Length"))
        }
        var bodyLength = 0
        if !lengths.isEmpty {
            let values = Set(lengths.flatMap { $0.split(separator: ",").map { $0.trimmingSpaces } })
            guard values.count == 1, let text = values.first, !text.isEmpty, text.count <= 18,
                  text.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(text) else {
                return .failed(HTTPError(400, "invalid Content-Length"))
            }
            bodyLength = n
        }
        if bodyLength > limits.maxBody { return .failed(HTTPError(413, "body larger than \(limits.maxBody) bytes")) }
        guard buffer.count - headerEnd >= bodyLength else {
            scanned = headerEnd - 4   // keep the found end; the body is still arriving
            return .needMore
        }
        request.body = Array(buffer[headerEnd..<(headerEnd + bodyLength)])
        buffer.removeFirst(headerEnd + bodyLength)
        scanned = 0
        return .request(request)
    }

    private static func requestLine(_ line: ArraySlice<UInt8>) -> Swift.Result<HTTPRequest, HTTPError> {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            return .failure(HTTPError(400, "malformed request line"))
        }
        guard parts[0].allSatisfy(isTokenByte) else { return .failure(HTTPError(400, "malformed method")) }
        guard parts[1].allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else { return .failure(HTTPError(400, "malformed request target")) }
        let version = String(decoding: parts[2], as: UTF8.self)
        let minor: Int
        switch version {
        case "HTTP/1.1": minor = 1
        case "HTTP/1.0": minor = 0
        default:
            return .failure(version.hasPrefix("HTTP/") ? HTTPError(505, "HTTP version not supported") : HTTPError(400, "malformed HTTP version"))
        }
        return .success(HTTPRequest(method: String(decoding: parts[0], as: UTF8.self), target: String(decoding: parts[1], as: UTF8.self),
                                    minorVersion: minor, headers: [], body: []))
    }

    private static func headerField(_ line: ArraySlice<UInt8>) -> Swift.Result<(name: String, value: String), HTTPError> {
        guard let first = line.first else { return .failure(HTTPError(400, "empty header line")) }
        if first == 0x20 || first == 0x09 { return .failure(HTTPError(400, "obsolete line folding")) }
        guard let colon = line.firstIndex(of: 0x3A) else { return .failure(HTTPError(400, "header field without a colon")) }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else { return .failure(HTTPError(400, "malformed header name")) }
        var value = line[(colon + 1)...]
        while let f = value.first, f == 0x20 || f == 0x09 { value = value.dropFirst() }
        while let l = value.last, l == 0x20 || l == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            return .failure(HTTPError(400, "control character in header '\(String(decoding: name, as: UTF8.self))'"))
        }
        return .success((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    /// RFC 9110 section 5.6.2 `tchar`.
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): return true
        default: return false
        }
    }
}
