/// Header values (HTTP/1.1 and the WebSocket handshake, both sides).
extension Substring {
    /// Without leading and trailing spaces and tabs.
    package var trimmingSpaces: String {
        let bytes = utf8
        var start = bytes.startIndex, end = bytes.endIndex
        func blank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        while start < end, blank(bytes[start]) { start = bytes.index(after: start) }
        while start < end, blank(bytes[bytes.index(before: end)]) { end = bytes.index(before: end) }
        return String(self[start..<end])
    }
}
