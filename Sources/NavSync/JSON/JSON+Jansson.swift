import CJansson

/// Why a text is not JSON, and where: jansson's own reason with its line and column
/// (1-based; column counts characters), and the byte offset.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var offset: Int
    public var reason: String

    public var description: String { "line \(line), column \(column): \(reason)" }
}

/// The one file that speaks to jansson. Bytes in, a `JSON` value out.
extension JSON {
    /// Deepest nesting accepted. jansson stops at 2048 itself; converting deeper trees
    /// recursively would only waste stack.
    public static let maxDepth = 512

    /// Deepest nesting of text the server wrote itself and reads back (jansson's own
    /// limit): it was never input, and a flow may nest deeper than input may.
    static let writtenDepth = 2048

    /// Parses one JSON text (any value at the top, as RFC 8259 allows). Duplicate keys
    /// are refused rather than silently resolved; `\u0000` inside strings is allowed.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSON {
        try parse(bytes, depthLimit: maxDepth)
    }

    /// The same, nesting up to `depthLimit` levels (`writtenDepth` for text the server
    /// wrote itself).
    static func parse(_ bytes: some Collection<UInt8>, depthLimit: Int) throws(JSONParseError) -> JSON {
        var error = json_error_t()
        let flags = Int(JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)
        let root: UnsafeMutablePointer<json_t>? =
            bytes.withContiguousStorageIfAvailable { buffer in
                json_loadb(buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                           buffer.count, flags, &error)
            } ?? Array(bytes).withUnsafeBufferPointer { buffer in
                json_loadb(buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                           buffer.count, flags, &error)
            }
        guard let root else {
            let reason = withUnsafeBytes(of: &error.text) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            throw JSONParseError(line: Int(error.line), column: Int(error.column),
                                 offset: Int(error.position), reason: reason)
        }
        defer { json_decref(root) }
        guard let value = convert(root, depth: 0, limit: depthLimit) else {
            throw JSONParseError(line: 1, column: 1, offset: 0,
                                 reason: "nesting deeper than \(depthLimit) levels")
        }
        return value
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        try parse(Array(text.utf8))
    }

    private static func convert(_ v: UnsafeMutablePointer<json_t>, depth: Int, limit: Int) -> JSON? {
        if depth > limit { return nil }
        switch json_type(rawValue: UInt32(navsync_json_type(v))) {
        case JSON_OBJECT:
            var object = JSONObject()
            var iter = json_object_iter(v)
            while let it = iter {
                let keyLength = json_object_iter_key_len(it)
                let key = json_object_iter_key(it).withMemoryRebound(to: UInt8.self, capacity: keyLength) {
                    String(decoding: UnsafeBufferPointer(start: $0, count: keyLength), as: UTF8.self)
                }
                guard let value = convert(json_object_iter_value(it), depth: depth + 1, limit: limit) else { return nil }
                object[key] = value
                iter = json_object_iter_next(v, it)
            }
            return .object(object)
        case JSON_ARRAY:
            let n = json_array_size(v)
            var items: [JSON] = []
            items.reserveCapacity(n)
            for i in 0..<n {
                guard let item = convert(json_array_get(v, i), depth: depth + 1, limit: limit) else { return nil }
                items.append(item)
            }
            return .array(items)
        case JSON_STRING:
            let length = json_string_length(v)
            return .string(json_string_value(v).withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            })
        case JSON_INTEGER: return .int(Int64(json_integer_value(v)))
        case JSON_REAL: return .double(json_real_value(v))
        case JSON_TRUE: return .bool(true)
        case JSON_FALSE: return .bool(false)
        default: return .null
        }
    }
}
