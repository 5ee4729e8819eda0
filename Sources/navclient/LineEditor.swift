import NavSync
/// The prompt's line editor as a value: key bytes in, the line and what to do out.
/// Knows readline's common keys: arrows, Home/End, Ctrl-A/E/U/W/K, history, Tab.
public struct LineEditor: Sendable {
    public private(set) var line: [Character] = []
    public private(set) var cursor = 0
    public private(set) var history: [String] = []
    private var historyIndex: Int?
    private var escape: [UInt8] = []
    private var pendingUTF8: [UInt8] = []

    public init() {}

    public enum Action: Sendable, Equatable {
        case redraw
        case submit(String)
        case complete(String)   // the text before the cursor; call `complete(with:)`
        case interrupt          // Ctrl-C
        case endOfInput         // Ctrl-D on an empty line
        case pageUp             // PgUp: scroll what is shown back
        case pageDown           // PgDn
    }

    public var text: String { String(line) }

    public mutating func feed(_ bytes: [UInt8]) -> [Action] {
        var actions: [Action] = []
        for b in bytes {
            if let a = key(b) { actions.append(a) }
        }
        return actions
    }

    private mutating func key(_ b: UInt8) -> Action? {
        if !escape.isEmpty || b == 0x1B {
            escape.append(b)
            return escapeSequence()
        }
        switch b {
        case 0x0D, 0x0A:
            let submitted = text
            if !submitted.trimmingSpacesOnly.isEmpty && history.last != submitted { history.append(submitted) }
            line = []
            cursor = 0
            historyIndex = nil
            return .submit(submitted)
        case 0x09: return .complete(String(line[..<cursor]))
        case 0x03: line = []; cursor = 0; return .interrupt
        case 0x04:
            if line.isEmpty { return .endOfInput }
            if cursor < line.count { line.remove(at: cursor) }
        case 0x7F, 0x08:
            if cursor > 0 { line.remove(at: cursor - 1); cursor -= 1 }
        case 0x01: cursor = 0
        case 0x05: cursor = line.count
        case 0x02: cursor = max(0, cursor - 1)
        case 0x06: cursor = min(line.count, cursor + 1)
        case 0x0B: line.removeSubrange(cursor...)
        case 0x15: line.removeSubrange(..<cursor); cursor = 0
        case 0x17:
            var start = cursor
            while start > 0 && line[start - 1] == " " { start -= 1 }
            while start > 0 && line[start - 1] != " " { start -= 1 }
            line.removeSubrange(start..<cursor)
            cursor = start
        case 0x10: historyStep(-1)
        case 0x0E: historyStep(1)
        case 0x20...0x7E: insert(Character(Unicode.Scalar(b)))
        case 0x80...0xFF:
            pendingUTF8.append(b)
            if let s = String(validating: pendingUTF8, as: UTF8.self) {
                pendingUTF8 = []
                for c in s { insert(c) }
            } else if pendingUTF8.count >= 4 {
                pendingUTF8 = []
            }
        default: return nil
        }
        return .redraw
    }

    private mutating func escapeSequence() -> Action? {
        // ESC [ X, ESC O X, or ESC [ n ~
        guard escape.count >= 2 else { return nil }
        guard escape[1] == UInt8(ascii: "[") || escape[1] == UInt8(ascii: "O") else { escape = []; return nil }
        guard escape.count >= 3 else { return nil }
        let last = escape.last!
        if (0x30...0x39).contains(last) || last == UInt8(ascii: ";") {
            if escape.count > 8 { escape = [] }
            return nil
        }
        defer { escape = [] }
        switch (last, escape.count) {
        case (UInt8(ascii: "A"), _): historyStep(-1)
        case (UInt8(ascii: "B"), _): historyStep(1)
        case (UInt8(ascii: "C"), _): cursor = min(line.count, cursor + 1)
        case (UInt8(ascii: "D"), _): cursor = max(0, cursor - 1)
        case (UInt8(ascii: "H"), _): cursor = 0
        case (UInt8(ascii: "F"), _): cursor = line.count
        case (UInt8(ascii: "~"), _):
            switch escape[2] {
            case UInt8(ascii: "1"), UInt8(ascii: "7"): cursor = 0
            case UInt8(ascii: "4"), UInt8(ascii: "8"): cursor = line.count
            case UInt8(ascii: "3"): if cursor < line.count { line.remove(at: cursor) }
            case UInt8(ascii: "5"): return .pageUp
            case UInt8(ascii: "6"): return .pageDown
            default: return nil
            }
        default: return nil
        }
        return .redraw
    }

    private mutating func insert(_ c: Character) {
        line.insert(c, at: cursor)
        cursor += 1
    }

    private mutating func historyStep(_ delta: Int) {
        guard !history.isEmpty else { return }
        var i = (historyIndex ?? history.count) + delta
        i = max(0, min(history.count, i))
        historyIndex = i == history.count ? nil : i
        line = i == history.count ? [] : Array(history[i])
        cursor = line.count
    }

    /// Applies completions of the word before the cursor: one fills it in (and a space),
    /// several fill in their common prefix. Returns the choices to show, if several.
    public mutating func complete(with choices: [String]) -> [String] {
        let before = String(line[..<cursor])
        let word = before.last == " " ? "" : String(before.split(separator: " ").last ?? "")
        guard !choices.isEmpty else { return [] }
        var common = choices[0]
        for c in choices.dropFirst() { while !c.hasPrefix(common) { common.removeLast() } }
        let addition = Array(common.dropFirst(word.count)) + (choices.count == 1 && !common.hasSuffix("=") ? [" "] : [])
        line.insert(contentsOf: addition, at: cursor)
        cursor += addition.count
        return choices.count > 1 ? choices : []
    }
}

extension String {
    var trimmingSpacesOnly: String { String(drop { $0 == " " }) }
}
