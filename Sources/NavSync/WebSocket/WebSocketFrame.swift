/// RFC 6455 section 5.2 opcodes.
public enum Opcode: UInt8, Sendable {
    case continuation = 0x0, text = 0x1, binary = 0x2
    case close = 0x8, ping = 0x9, pong = 0xA

    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// RFC 6455 section 7.4 close codes navsync sends, and which codes a peer may send.
public enum CloseCode {
    public static let normal: UInt16 = 1000
    public static let goingAway: UInt16 = 1001
    public static let protocolError: UInt16 = 1002
    public static let unsupportedData: UInt16 = 1003
    public static let invalidPayload: UInt16 = 1007
    public static let policyViolation: UInt16 = 1008
    public static let tooLarge: UInt16 = 1009
    public static let internalError: UInt16 = 1011
    public static let tryAgainLater: UInt16 = 1013

    /// Codes a close frame may carry (RFC 6455 7.4.1 and 7.4.2): 1000–1003, 1007–1011,
    /// and 3000–4999 for libraries and applications. 1004–1006 and 1015 are never sent.
    public static func isValidOnWire(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1011, 3000...4999: return true
        default: return false
        }
    }
}

/// Why a peer's frames were refused, each mapped to the close code RFC 6455 gives it.
public enum WebSocketError: Error, Sendable, Equatable, CustomStringConvertible {
    case reservedBits
    case reservedOpcode(UInt8)
    /// Client frames must be masked (RFC 6455 5.1); server frames must not be.
    case badMasking
    /// A 16- or 64-bit length that would fit a shorter form (RFC 6455 5.2).
    case nonMinimalLength
    /// A 64-bit length with the most significant bit set (RFC 6455 5.2).
    case lengthTopBit
    case controlFrameTooLong
    case fragmentedControlFrame
    case unexpectedContinuation
    case expectedContinuation
    case messageTooLarge(limit: Int)
    case invalidUTF8
    case closePayloadOneByte
    case invalidCloseCode(UInt16)
    /// A compressed message (permessage-deflate) whose data does not inflate.
    case badCompression
    /// RSV1 on a control or continuation frame (RFC 7692 section 6.1).
    case compressedBitMisplaced

    public var closeCode: UInt16 {
        switch self {
        case .messageTooLarge: return CloseCode.tooLarge
        case .invalidUTF8, .badCompression: return CloseCode.invalidPayload
        default: return CloseCode.protocolError
        }
    }

    public var description: String {
        switch self {
        case .reservedBits: return "reserved bits set without an extension"
        case .reservedOpcode(let op): return "reserved opcode \(op)"
        case .badMasking: return "wrong masking for this direction"
        case .nonMinimalLength: return "payload length not in its shortest form"
        case .lengthTopBit: return "64-bit payload length with the top bit set"
        case .controlFrameTooLong: return "control frame payload over 125 bytes"
        case .fragmentedControlFrame: return "fragmented control frame"
        case .unexpectedContinuation: return "continuation frame without a message to continue"
        case .expectedContinuation: return "new data frame inside a fragmented message"
        case .messageTooLarge(let limit): return "message larger than \(limit) bytes"
        case .invalidUTF8: return "text is not valid UTF-8"
        case .closePayloadOneByte: return "close frame with a 1-byte payload"
        case .invalidCloseCode(let code): return "invalid close code \(code)"
        case .badCompression: return "compressed message is not valid deflate data"
        case .compressedBitMisplaced: return "RSV1 (compressed) on a control or continuation frame"
        }
    }
}
