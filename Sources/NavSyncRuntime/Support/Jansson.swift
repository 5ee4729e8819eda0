import CJansson
@preconcurrency import Glibc
import NavSync
import NavSyncServer

/// The server's JSON parser for its hot path (commands, flows): jansson, bytes in, a
/// `JSON` value out. The one file that speaks to jansson.
///
/// It gives the same answers as the core's `JSON.parse` on the same bytes
/// (`JSONParserParityTests`): any value at the top, duplicate keys refused, `\u0000`
/// inside string values allowed and inside keys refused, integers beyond Int64 and
/// reals that overflow refused, and nesting past the limit refused.
public enum Jansson {
    /// Parses one JSON text, nesting up to `depthLimit` levels.
    public static func parse(_ bytes: some Collection<UInt8>, depthLimit: Int = JSON.maxDepth) throws(JSONParseError) -> JSON {
        let run = { (buffer: UnsafeBufferPointer<UInt8>) in
            Result { () throws(JSONParseError) -> JSON in try parse(buffer, depthLimit: depthLimit) }
        }
        return try (bytes.withContiguousStorageIfAvailable(run) ?? Array(bytes).withUnsafeBufferPointer(run)).get()
    }

    static func parse(_ buffer: UnsafeBufferPointer<UInt8>, depthLimit: Int) throws(JSONParseError) -> JSON {
        // A raw NUL is never JSON (inside a string it would be an unescaped control
        // character); jansson stops reading at one after a complete value ("123\0").
        if let base = buffer.baseAddress, let nul = memchr(base, 0, buffer.count) {
            throw JSONParseError(line: 1, column: 1, offset: UnsafeRawPointer(nul) - UnsafeRawPointer(base), reason: "NUL byte in input")
        }
        var error = json_error_t()
        let flags = Int(JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)
        let root = json_loadb(buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                              buffer.count, flags, &error)
        guard let root else {
            let reason = withUnsafeBytes(of: &error.text) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            throw JSONParseError(line: Int(error.line), column: Int(error.column), offset: Int(error.position), reason: reason)
        }
        defer { json_decref(root) }
        guard let value = convert(root, depth: 0, limit: depthLimit) else {
            throw JSONParseError(line: 1, column: 1, offset: 0, reason: "nesting deeper than \(depthLimit) levels")
        }
        return value
    }

    /// jansson's tree as a `JSON` value; nil past the depth limit. A container's depth
    /// counts as the core parser counts it: the top-level object or array is level 1.
    private static func convert(_ v: UnsafeMutablePointer<json_t>, depth: Int, limit: Int) -> JSON? {
        switch json_type(rawValue: UInt32(navsync_json_type(v))) {
        case JSON_OBJECT:
            guard depth < limit else { return nil }
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
            guard depth < limit else { return nil }
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
