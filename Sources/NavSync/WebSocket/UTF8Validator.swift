/// Incremental UTF-8 validation (RFC 3629 section 4), byte by byte across frame
/// boundaries, so a text message fails on its first invalid byte (RFC 6455 section 8.1)
/// rather than when it is complete. Refuses overlong forms, surrogates and code points
/// above U+10FFFF.
public struct UTF8Validator: Sendable {
    /// Continuation bytes still expected for the current code point.
    private var remaining = 0
    /// Allowed range of the next continuation byte (narrower after E0, ED, F0, F4).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    public init() {}

    /// Whether everything fed so far ends on a code point boundary.
    public var isComplete: Bool { remaining == 0 }

    /// Feeds bytes; false at the first byte that cannot be valid UTF-8.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let n = bytes.count
        while i < n {
            // ASCII fast path: eight bytes with no high bit set need no state.
            if remaining == 0 && i + 8 <= n {
                let v = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if v & 0x8080_8080_8080_8080 == 0 {
                    i += 8
                    continue
                }
            }
            guard feed(bytes[i]) else { return false }
            i += 1
        }
        return true
    }

    public mutating func feed(_ byte: UInt8) -> Bool {
        if remaining > 0 {
            guard byte >= lower && byte <= upper else { return false }
            remaining -= 1
            lower = 0x80
            upper = 0xBF
            return true
        }
        switch byte {
        case 0x00...0x7F: return true
        case 0xC2...0xDF: remaining = 1
        case 0xE0: remaining = 2; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: remaining = 2
        case 0xED: remaining = 2; upper = 0x9F
        case 0xF0: remaining = 3; lower = 0x90
        case 0xF1...0xF3: remaining = 3
        case 0xF4: remaining = 3; upper = 0x8F
        default: return false
        }
        return true
    }

    public static func isValid(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { isValid($0) }
    }

    public static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var v = UTF8Validator()
        return v.feed(UnsafeRawBufferPointer(bytes)) && v.isComplete
    }
}
