/// RFC 6455 frames out. Lengths always take their shortest form (section 5.2).
public enum WebSocketEncoder {
    /// One frame. Servers pass no mask (RFC 6455 5.1: server frames are never masked);
    /// clients pass a fresh random key for every frame.
    public static func frame(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true,
                             mask: (UInt8, UInt8, UInt8, UInt8)? = nil) -> [UInt8] {
        var out = header(opcode, length: payload.count, fin: fin, mask: mask)
        if let m = mask {
            let key = [m.0, m.1, m.2, m.3]
            out.reserveCapacity(out.count + payload.count)
            for (i, b) in payload.enumerated() { out.append(b ^ key[i & 3]) }
        } else {
            out.append(contentsOf: payload)
        }
        return out
    }

    public static func header(_ opcode: Opcode, length: Int, fin: Bool = true,
                              mask: (UInt8, UInt8, UInt8, UInt8)? = nil) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | opcode.rawValue]
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        switch length {
        case 0...125: out.append(maskBit | UInt8(length))
        case 126...0xFFFF: out += [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        default:
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: UInt64(length) >> UInt64(shift))) }
        }
        if let m = mask { out += [m.0, m.1, m.2, m.3] }
        return out
    }

    /// Room for the longest header of a server's frame (unmasked, 64-bit length).
    public static let maxServerHeader = 10

    /// Writes the header of an unmasked final frame so that it ends at `end`, where the
    /// payload starts, and returns its length: for a payload written first, behind room
    /// for the header (`OutgoingBuffer(frame:capacity:_:)`). The bytes of `header`.
    package static func writeHeader(_ opcode: Opcode, length: Int, endingAt end: UnsafeMutablePointer<UInt8>) -> Int {
        let size = length <= 125 ? 2 : length <= 0xFFFF ? 4 : 10
        let p = end - size
        p[0] = 0x80 | opcode.rawValue
        switch size {
        case 2: p[1] = UInt8(length)
        case 4: p[1] = 126; p[2] = UInt8(length >> 8); p[3] = UInt8(length & 0xFF)
        default:
            p[1] = 127
            for i in 0..<8 { p[2 + i] = UInt8(truncatingIfNeeded: UInt64(length) >> UInt64(56 - 8 * i)) }
        }
        return size
    }

    /// A close frame with a code and a reason (cut to fit the 125-byte control limit on
    /// a UTF-8 boundary).
    public static func close(_ code: UInt16, reason: String = "", mask: (UInt8, UInt8, UInt8, UInt8)? = nil) -> [UInt8] {
        var payload: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)]
        var r = Array(reason.utf8.prefix(123))
        while !r.isEmpty && !UTF8Validator.isValid(r) { r.removeLast() }
        payload += r
        return frame(.close, payload, mask: mask)
    }
}
