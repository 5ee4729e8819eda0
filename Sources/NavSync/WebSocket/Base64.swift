/// Base64 (RFC 4648 section 4, with padding), for the WebSocket handshake.
public enum Base64 {
    /// A literal in read-only memory (a global array is initialized lazily, checked and
    /// retained at every use).
    private static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    public static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Self.alphabet.utf8Start
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i], b1 = i + 1 < bytes.count ? bytes[i + 1] : 0, b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 3) << 4 | b1 >> 4)])
            out.append(i + 1 < bytes.count ? alphabet[Int((b1 & 15) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(b2 & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Strict decoding: length a multiple of 4, padding only at the end, no whitespace.
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { chars -> [UInt8]? in
            guard chars.count % 4 == 0 else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(chars.count / 4 * 3)
            var i = 0
            while i < chars.count {
                // Four characters, six bits each; `=` only as the last one or two of all.
                var bits: UInt32 = 0
                var padding = 0
                for j in 0..<4 {
                    let c = chars[i + j]
                    if c == UInt8(ascii: "=") {
                        guard i + 4 == chars.count, j >= 2 else { return nil }
                        padding += 1
                        bits <<= 6
                    } else {
                        guard padding == 0, let v = value(c) else { return nil }
                        bits = bits << 6 | UInt32(v)
                    }
                }
                out.append(UInt8(truncatingIfNeeded: bits >> 16))
                if padding < 2 { out.append(UInt8(truncatingIfNeeded: bits >> 8)) }
                if padding < 1 { out.append(UInt8(truncatingIfNeeded: bits)) }
                i += 4
            }
            return out
        }
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 65...90: return c - 65
        case 97...122: return c - 71
        case 48...57: return c + 4
        case 43: return 62
        case 47: return 63
        default: return nil
        }
    }
}
