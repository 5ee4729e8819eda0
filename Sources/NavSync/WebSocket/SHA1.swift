/// SHA-1 (RFC 3174), for `Sec-WebSocket-Accept` only (RFC 6455 section 4.2.2). Not for
/// anything that needs collision resistance.
public enum SHA1 {
    public static func hash(_ message: [UInt8]) -> [UInt8] {
        var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        // The message, a 1 bit, zeros to 56 bytes past a block boundary, the bit length.
        let bitLength = UInt64(message.count) &* 8
        var data = message
        data.reserveCapacity((message.count + 8) / 64 * 64 + 64)
        data.append(0x80)
        data.append(contentsOf: repeatElement(0, count: (119 - message.count % 64) % 64))
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }

        // The schedule on the stack, and the four kinds of round as four loops: an
        // array per call and a switch per round were most of a handshake's hashing.
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 80) { w in
            data.withUnsafeBufferPointer { data in
                for chunk in stride(from: 0, to: data.count, by: 64) {
                    for i in 0..<16 {
                        let b = chunk + i * 4
                        w[i] = UInt32(data[b]) << 24 | UInt32(data[b + 1]) << 16 | UInt32(data[b + 2]) << 8 | UInt32(data[b + 3])
                    }
                    for i in 16..<80 { w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1) }
                    var (a, b, c, d, e) = h
                    func round(_ f: UInt32, _ k: UInt32, _ i: Int) {
                        let t = rotl(a, 5) &+ f &+ e &+ k &+ w[i]
                        (e, d, c, b, a) = (d, c, rotl(b, 30), a, t)
                    }
                    for i in 0..<20 { round((b & c) | (~b & d), 0x5A82_7999, i) }
                    for i in 20..<40 { round(b ^ c ^ d, 0x6ED9_EBA1, i) }
                    for i in 40..<60 { round((b & c) | (b & d) | (c & d), 0x8F1B_BCDC, i) }
                    for i in 60..<80 { round(b ^ c ^ d, 0xCA62_C1D6, i) }
                    h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
                }
            }
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(20)
        func put(_ v: UInt32) {
            for shift in stride(from: 24, through: 0, by: -8) { digest.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
        }
        put(h.0); put(h.1); put(h.2); put(h.3); put(h.4)
        return digest
    }

    private static func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { x << n | x >> (32 - n) }
}
