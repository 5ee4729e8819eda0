/// Why a text is not JSON, and where: line and column (1-based; the column counts
/// bytes), the byte offset, and the reason.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var offset: Int
    public var reason: String

    public init(line: Int, column: Int, offset: Int, reason: String) {
        self.line = line; self.column = column; self.offset = offset; self.reason = reason
    }

    public var description: String { "line \(line), column \(column): \(reason)" }
}

/// The core's JSON parser: RFC 8259 in plain Swift, so the pure core and the app
/// client link no C library. The server parses its hot path (commands, flows) with
/// jansson instead (`NavSyncRuntime`'s `Jansson`); both give the same answers on the
/// same bytes, which `JSONParserParityTests` holds them to:
///
/// - any value at the top (RFC 8259 section 2), surrounded by space, tab, CR or LF only;
/// - duplicate keys are refused rather than silently resolved;
/// - `\u0000` is allowed inside string values but not inside keys (jansson keeps keys as
///   C strings), and a raw NUL byte anywhere is not JSON;
/// - an integer literal (no fraction, no exponent) is an `.int`, one beyond Int64 is
///   refused; anything else is a `.double`, refused when it overflows to infinity;
/// - UTF-8 is checked as RFC 3629 says (no overlong forms, surrogates or code points
///   above U+10FFFF), and so are `\u` escapes (a lone surrogate is refused);
/// - nesting deeper than the limit is refused before it can exhaust the stack.
struct JSONParser: ~Copyable {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var i = 0
    private let depthLimit: Int

    private init(_ bytes: UnsafeBufferPointer<UInt8>, depthLimit: Int) {
        self.bytes = bytes
        self.depthLimit = depthLimit
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, depthLimit: Int) throws(JSONParseError) -> JSON {
        var p = JSONParser(bytes, depthLimit: depthLimit)
        p.skipSpace()
        guard p.i < bytes.count else { throw p.error("'[' or '{' expected", at: p.i) }
        let value = try p.value(depth: 0)
        p.skipSpace()
        guard p.i == bytes.count else { throw p.error("end of file expected", at: p.i) }
        return value
    }

    // MARK: Values

    private mutating func value(depth: Int) throws(JSONParseError) -> JSON {
        guard i < bytes.count else { throw error("unexpected end of input", at: i) }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string(key: false))
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("invalid token", at: i)
        }
    }

    private mutating func object(depth: Int) throws(JSONParseError) -> JSON {
        guard depth <= depthLimit else { throw error("nesting deeper than \(depthLimit) levels", at: i) }
        i += 1   // {
        var object = JSONObject()
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(object) }
        while true {
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("string or '}' expected", at: i) }
            let keyAt = i
            let key = try string(key: true)
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("':' expected", at: i) }
            i += 1
            skipSpace()
            let v = try value(depth: depth)
            guard object.insertNew(key, v) else { throw error("duplicate object key", at: keyAt) }
            skipSpace()
            guard i < bytes.count else { throw error("'}' expected", at: i) }
            if bytes[i] == UInt8(ascii: ",") { i += 1; skipSpace(); continue }
            guard bytes[i] == UInt8(ascii: "}") else { throw error("'}' expected", at: i) }
            i += 1
            return .object(object)
        }
    }

    private mutating func array(depth: Int) throws(JSONParseError) -> JSON {
        guard depth <= depthLimit else { throw error("nesting deeper than \(depthLimit) levels", at: i) }
        i += 1   // [
        var items: [JSON] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
        while true {
            items.append(try value(depth: depth))
            skipSpace()
            guard i < bytes.count else { throw error("']' expected", at: i) }
            if bytes[i] == UInt8(ascii: ",") { i += 1; skipSpace(); continue }
            guard bytes[i] == UInt8(ascii: "]") else { throw error("']' expected", at: i) }
            i += 1
            return .array(items)
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw error("invalid token", at: i) }
        for k in 0..<n where bytes[i + k] != word.utf8Start[k] { throw error("invalid token", at: i) }
        i += n
    }

    // MARK: Numbers (RFC 8259 section 6)

    private mutating func number() throws(JSONParseError) -> JSON {
        let start = i
        var negative = false
        if bytes[i] == UInt8(ascii: "-") { negative = true; i += 1 }
        guard i < bytes.count, isDigit(bytes[i]) else { throw error("invalid token", at: start) }
        // Integers accumulate negatively, so that Int64.min fits.
        var value: Int64 = 0
        var overflow = false
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if i < bytes.count, isDigit(bytes[i]) { throw error("invalid token", at: start) }
        } else {
            while i < bytes.count, isDigit(bytes[i]) {
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.subtractingReportingOverflow(Int64(bytes[i] &- 48))
                overflow = overflow || o1 || o2
                value = s
                i += 1
            }
        }
        var isReal = false
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard i < bytes.count, isDigit(bytes[i]) else { throw error("invalid token", at: start) }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
            isReal = true
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, isDigit(bytes[i]) else { throw error("invalid token", at: start) }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
            isReal = true
        }
        if !isReal {
            if negative { guard !overflow else { throw error("too big negative integer", at: start) }; return .int(value) }
            guard !overflow, value != .min else { throw error("too big integer", at: start) }
            return .int(-value)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else { throw error("real number overflow", at: start) }
        return .double(d)
    }

    private func isDigit(_ b: UInt8) -> Bool { b &- 48 < 10 }

    // MARK: Strings (RFC 8259 section 7)

    private mutating func string(key: Bool) throws(JSONParseError) -> String {
        i += 1   // "
        let start = i
        var ascii = true
        // The usual string: no escape. Found by one scan, decoded in one step.
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[start..<i])
                if !ascii, !UTF8Validator.isValid(run) { throw error("invalid UTF-8 in string", at: start) }
                i += 1
                return String(decoding: run, as: UTF8.self)
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw error(b == 0 ? "NUL byte in input" : "control character in string", at: i) }
            if b >= 0x80 { ascii = false }
            i += 1
        }
        guard i < bytes.count else { throw error("premature end of input in string", at: start - 1) }
        // With escapes: the bytes so far, then piece by piece.
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<i]))
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case UInt8(ascii: "\""):
                if !ascii, !UTF8Validator.isValid(out) { throw error("invalid UTF-8 in string", at: start) }
                i += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try escape(into: &out, key: key)
            case ..<0x20:
                throw error(b == 0 ? "NUL byte in input" : "control character in string", at: i)
            default:
                if b >= 0x80 { ascii = false }
                out.append(b)
                i += 1
            }
        }
        throw error("premature end of input in string", at: start - 1)
    }

    private mutating func escape(into out: inout [UInt8], key: Bool) throws(JSONParseError) {
        let at = i
        i += 1
        guard i < bytes.count else { throw error("premature end of input in string", at: at) }
        let c = bytes[i]
        i += 1
        switch c {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(c)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4(at: at)
            if scalar >= 0xD800 && scalar <= 0xDBFF {
                guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                    throw error("invalid Unicode '\\u\(hexText(scalar))'", at: at)
                }
                i += 2
                let low = try hex4(at: at)
                guard low >= 0xDC00 && low <= 0xDFFF else { throw error("invalid Unicode '\\u\(hexText(scalar))\\u\(hexText(low))'", at: at) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                throw error("invalid Unicode '\\u\(hexText(scalar))'", at: at)
            }
            if scalar == 0 && key { throw error("NUL byte in object key not supported", at: at) }
            out.append(contentsOf: Unicode.UTF8.encode(Unicode.Scalar(scalar)!)!)
        default:
            throw error("invalid escape", at: at)
        }
    }

    private mutating func hex4(at: Int) throws(JSONParseError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw error("invalid escape", at: at) }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            let d: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - 48
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - 87
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - 55
            default: throw error("invalid escape", at: at)
            }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }

    private func hexText(_ v: UInt32) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }

    // MARK: Whitespace and errors

    private mutating func skipSpace() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    /// The error at the token that starts at byte `offset`, told as jansson tells it
    /// (so both parsers read the same): the reason, "near" the token, and the line and
    /// column of the token's last byte (column 0 for empty input).
    private func error(_ reason: String, at offset: Int) -> JSONParseError {
        var end = min(offset, bytes.count)
        let near: String
        if end == bytes.count {
            near = "end of file"
        } else {
            if bytes[end] == UInt8(ascii: "\"") {
                end += 1
                while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
                end = min(end + 1, bytes.count)
            } else if isWordByte(bytes[end]) {
                while end < bytes.count, isWordByte(bytes[end]) { end += 1 }
            } else {
                end += 1
            }
            near = "'" + String(decoding: UnsafeBufferPointer(rebasing: bytes[offset..<end]), as: UTF8.self) + "'"
        }
        var line = 1
        var column = 0
        for b in UnsafeBufferPointer(rebasing: bytes[0..<end]) {
            if b == 0x0A { line += 1; column = 0 } else if b & 0xC0 != 0x80 { column += 1 }
        }
        return JSONParseError(line: line, column: column, offset: offset, reason: reason + " near " + near)
    }

    /// Bytes of a bare token (a number or a word), read whole for an error message.
    private func isWordByte(_ b: UInt8) -> Bool {
        isDigit(b) || (b | 0x20 >= UInt8(ascii: "a") && b | 0x20 <= UInt8(ascii: "z")) || b == UInt8(ascii: "-")
            || b == UInt8(ascii: "+") || b == UInt8(ascii: ".")
    }
}

extension JSON {
    /// Deepest nesting accepted from input. Converting deeper trees would only waste
    /// stack, and no message or flow needs more.
    public static let maxDepth = 512

    /// Deepest nesting of text the server wrote itself and reads back (jansson's own
    /// limit): it was never input, and a flow may nest deeper than input may.
    public static let writtenDepth = 2048

    /// Parses one JSON text (any value at the top, as RFC 8259 allows), with the rules
    /// of `JSONParser`.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSON {
        try parse(bytes, depthLimit: maxDepth)
    }

    /// The same, nesting up to `depthLimit` levels (`writtenDepth` for text the server
    /// wrote itself).
    public static func parse(_ bytes: some Collection<UInt8>, depthLimit: Int) throws(JSONParseError) -> JSON {
        let run = { (buffer: UnsafeBufferPointer<UInt8>) in
            Result { () throws(JSONParseError) -> JSON in try JSONParser.parse(buffer, depthLimit: depthLimit) }
        }
        return try (bytes.withContiguousStorageIfAvailable(run) ?? Array(bytes).withUnsafeBufferPointer(run)).get()
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        var text = text
        return try text.withUTF8 { buffer in
            Result { () throws(JSONParseError) -> JSON in try JSONParser.parse(buffer, depthLimit: maxDepth) }
        }.get()
    }
}
