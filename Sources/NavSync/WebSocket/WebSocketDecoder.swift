/// RFC 6455 frames in, whole messages and control frames out: one state machine fed
/// with whatever the socket delivered (a byte at a time, or many frames at once).
///
/// Payload bytes are unmasked and, for text, UTF-8 checked as they arrive, so an
/// invalid byte or an oversized message fails at once, not when the message is done.
/// After an error the decoder stays failed and ignores further input.
public struct WebSocketDecoder: Sendable {
    public enum Role: Sendable {
        /// Decodes what a client sends: every frame must be masked.
        case server
        /// Decodes what a server sends: no frame may be masked.
        case client
    }

    public enum Event: Sendable, Equatable {
        case text([UInt8])
        case binary([UInt8])
        case ping([UInt8])
        case pong([UInt8])
        /// A close frame: its code (nil when it had none) and reason.
        case close(code: UInt16?, reason: String)
    }

    struct Header {
        var fin: Bool
        var opcode: Opcode
        var mask: (UInt8, UInt8, UInt8, UInt8)?
        var length: Int
    }

    enum State {
        /// Collecting the 2–14 header bytes.
        case header
        /// Inside a frame's payload.
        case payload(Header, remaining: Int, maskOffset: Int)
        case failed(WebSocketError)
    }

    public let role: Role
    /// Largest message (all fragments together) accepted, in bytes; larger fails with
    /// 1009 as soon as a frame header announces it (a compressed one also once inflated
    /// past it).
    public let maxMessage: Int
    /// With permessage-deflate negotiated: what inflates messages sent with RSV1.
    /// Without, RSV1 is a protocol error like the other reserved bits.
    public let inflater: (any WebSocketInflating)?

    private var state = State.header
    private var headerBytes: [UInt8] = []
    /// The data message being assembled across fragments, and its opcode.
    private var message: [UInt8] = []
    private var messageOpcode: Opcode?
    /// The message being assembled was sent compressed (RSV1 on its first frame): its
    /// text is checked once inflated.
    private var compressed = false
    private var utf8 = UTF8Validator()
    /// A control frame's payload (they may arrive between fragments of a message).
    private var control: [UInt8] = []

    public init(role: Role, maxMessage: Int, inflater: (any WebSocketInflating)? = nil) {
        self.role = role
        self.maxMessage = maxMessage
        self.inflater = inflater
    }

    public var failure: WebSocketError? {
        if case .failed(let e) = state { return e }
        return nil
    }

    /// Feeds bytes; returns the events they complete, then the error that stopped the
    /// decoder, if any (events before the bad frame are still delivered).
    public mutating func feed(_ bytes: [UInt8]) -> (events: [Event], error: WebSocketError?) {
        bytes.withUnsafeBytes { feed($0) }
    }

    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> (events: [Event], error: WebSocketError?) {
        var events: [Event] = []
        var input = bytes[...]
        while true {
            switch state {
            case .failed(let e):
                return (events, e)
            case .header:
                guard !input.isEmpty else { return (events, nil) }
                let needed = headerLength - headerBytes.count
                let take = input.prefix(needed)
                headerBytes.append(contentsOf: take)
                input = input.dropFirst(take.count)
                if headerBytes.count == headerLength { beginFrame(&events) }
            case .payload(let header, let remaining, let maskOffset):
                if remaining == 0 {
                    finishFrame(header, &events)
                    continue
                }
                guard !input.isEmpty else { return (events, nil) }
                let n = min(remaining, input.count)
                consume(UnsafeRawBufferPointer(rebasing: input.prefix(n)), header, maskOffset)
                input = input.dropFirst(n)
                if case .failed = state { continue }
                state = .payload(header, remaining: remaining - n, maskOffset: (maskOffset + n) & 3)
            }
        }
    }

    /// Header bytes needed so far: 2, then 2/4/10 for the length, plus 4 for a mask.
    private var headerLength: Int {
        guard headerBytes.count >= 2 else { return 2 }
        let masked = headerBytes[1] & 0x80 != 0
        let extra: Int
        switch headerBytes[1] & 0x7F {
        case 126: extra = 2
        case 127: extra = 8
        default: extra = 0
        }
        return 2 + extra + (masked ? 4 : 0)
    }

    private mutating func fail(_ e: WebSocketError) { state = .failed(e) }

    private mutating func beginFrame(_ events: inout [Event]) {
        let b0 = headerBytes[0], b1 = headerBytes[1]
        defer { headerBytes.removeAll(keepingCapacity: true) }
        let rsv1 = b0 & 0x40 != 0
        guard b0 & 0x30 == 0, !rsv1 || inflater != nil else { return fail(.reservedBits) }
        guard let opcode = Opcode(rawValue: b0 & 0x0F) else { return fail(.reservedOpcode(b0 & 0x0F)) }
        if rsv1 && (opcode.isControl || opcode == .continuation) { return fail(.compressedBitMisplaced) }
        let fin = b0 & 0x80 != 0
        let masked = b1 & 0x80 != 0
        guard masked == (role == .server) else { return fail(.badMasking) }

        var length: UInt64 = UInt64(b1 & 0x7F)
        var offset = 2
        if length == 126 {
            length = UInt64(headerBytes[2]) << 8 | UInt64(headerBytes[3])
            offset = 4
            guard length >= 126 else { return fail(.nonMinimalLength) }
        } else if length == 127 {
            length = headerBytes[2..<10].reduce(0) { $0 << 8 | UInt64($1) }
            offset = 10
            guard length & (1 << 63) == 0 else { return fail(.lengthTopBit) }
            guard length > 0xFFFF else { return fail(.nonMinimalLength) }
        }
        let mask = masked ? (headerBytes[offset], headerBytes[offset + 1], headerBytes[offset + 2], headerBytes[offset + 3]) : nil

        if opcode.isControl {
            guard fin else { return fail(.fragmentedControlFrame) }
            guard length <= 125 else { return fail(.controlFrameTooLong) }
            control.removeAll(keepingCapacity: true)
        } else if opcode == .continuation {
            guard messageOpcode != nil else { return fail(.unexpectedContinuation) }
        } else {
            guard messageOpcode == nil else { return fail(.expectedContinuation) }
            messageOpcode = opcode
            compressed = rsv1
            message.removeAll(keepingCapacity: true)
            utf8 = UTF8Validator()
        }
        if !opcode.isControl {
            // Overflow-safe: both sides are at most 2^63 - 1 and maxMessage is small. A
            // compressed message is held to maxMessage once inflated; on the wire it may
            // be a little larger (what does not compress grows by block headers: 2.5 KB for
            // 1 MiB of random bytes from a client with zlib memLevel 5).
            let limit = UInt64(compressed ? maxMessage + maxMessage / 128 + 1024 : maxMessage)
            guard length <= limit, UInt64(message.count) + length <= limit else {
                return fail(.messageTooLarge(limit: maxMessage))
            }
        }
        state = .payload(Header(fin: fin, opcode: opcode, mask: mask, length: Int(length)), remaining: Int(length), maskOffset: 0)
    }

    /// Appends payload bytes to the message (or control payload), unmasking them in
    /// place and checking text as it goes: one copy, no temporary arrays.
    private mutating func consume(_ chunk: UnsafeRawBufferPointer, _ header: Header, _ maskOffset: Int) {
        let isControl = header.opcode.isControl
        let start = isControl ? control.count : message.count
        if isControl { control.append(contentsOf: chunk) } else { message.append(contentsOf: chunk) }
        if let m = header.mask {
            let key = UInt32(m.0) | UInt32(m.1) << 8 | UInt32(m.2) << 16 | UInt32(m.3) << 24
            if isControl {
                control.withUnsafeMutableBytes { Self.unmask(UnsafeMutableRawBufferPointer(rebasing: $0[start...]), key, maskOffset) }
            } else {
                message.withUnsafeMutableBytes { Self.unmask(UnsafeMutableRawBufferPointer(rebasing: $0[start...]), key, maskOffset) }
            }
        }
        if !isControl && messageOpcode == .text && !compressed {
            let ok = message.withUnsafeBytes { utf8.feed(UnsafeRawBufferPointer(rebasing: $0[start...])) }
            if !ok { fail(.invalidUTF8) }
        }
    }

    /// XORs with the masking key (RFC 6455 section 5.3), eight bytes at a time.
    static func unmask(_ bytes: UnsafeMutableRawBufferPointer, _ key: UInt32, _ offset: Int) {
        guard !bytes.isEmpty else { return }
        // The key rotated so that byte 0 of `bytes` lines up with key byte `offset`.
        let rotated = offset == 0 ? key : (key >> (8 * UInt32(offset))) | (key << (32 - 8 * UInt32(offset)))
        let wide = UInt64(rotated) | UInt64(rotated) << 32
        var i = 0
        let base = bytes.baseAddress!
        while i + 8 <= bytes.count {
            let v = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            base.storeBytes(of: v ^ wide, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < bytes.count {
            bytes[i] ^= UInt8(truncatingIfNeeded: rotated >> (8 * UInt32(i & 3)))
            i += 1
        }
    }

    private mutating func finishFrame(_ header: Header, _ events: inout [Event]) {
        state = .header
        switch header.opcode {
        case .ping: events.append(.ping(control))
        case .pong: events.append(.pong(control))
        case .close:
            guard control.count != 1 else { return fail(.closePayloadOneByte) }
            guard control.count >= 2 else { return events.append(.close(code: nil, reason: "")) }
            let code = UInt16(control[0]) << 8 | UInt16(control[1])
            guard CloseCode.isValidOnWire(code) else { return fail(.invalidCloseCode(code)) }
            let reason = Array(control[2...])
            guard UTF8Validator.isValid(reason) else { return fail(.invalidUTF8) }
            events.append(.close(code: code, reason: String(decoding: reason, as: UTF8.self)))
        case .text, .binary, .continuation:
            guard header.fin else { return }
            if compressed, let inflater {
                switch inflater.inflate(message, limit: maxMessage) {
                case .failure(let e): return fail(e)
                case .success(let inflated): message = inflated
                }
                if messageOpcode == .text { guard UTF8Validator.isValid(message) else { return fail(.invalidUTF8) } }
                compressed = false
            }
            if messageOpcode == .text {
                guard utf8.isComplete else { return fail(.invalidUTF8) }
                events.append(.text(message))
            } else {
                events.append(.binary(message))
            }
            messageOpcode = nil
            message = []
        }
    }
}
