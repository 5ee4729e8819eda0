import Testing
@testable import NavSync
@testable import NavSyncServer
@testable import NavSyncRuntime
import TestSupport

/// The core's plain-Swift parser (what apps and the pure core use) and jansson (what the
/// server parses its hot path with) give the same answer on the same bytes: the same
/// value, or both a refusal.
@Suite("JSON parsers agree")
struct JSONParserParityTests {
    enum Answer: Equatable, CustomStringConvertible {
        case value(JSON)
        case refused
        var description: String {
            switch self {
            case .value(let v): return v.encodedString()
            case .refused: return "refused"
            }
        }
    }

    static func core(_ bytes: [UInt8]) -> Answer {
        (try? JSON.parse(bytes)).map(Answer.value) ?? .refused
    }

    static func jansson(_ bytes: [UInt8]) -> Answer {
        (try? Jansson.parse(bytes)).map(Answer.value) ?? .refused
    }

    /// Hand-written vectors, one per rule; each says what both must answer.
    static let vectors: [(String, [UInt8], Answer)] = [
        ("a number at the top", Array("42".utf8), .value(42)),
        ("space around", Array(" \t\r\n[1] \n".utf8), .value([1])),
        ("integer stays an integer", Array("[3, -0, 9223372036854775807, -9223372036854775808]".utf8),
         .value([3, 0, .int(.max), .int(.min)])),
        ("a fraction or exponent is a real", Array("[3.0, 1e2, -2.5E-1]".utf8), .value([.double(3), .double(100), .double(-0.25)])),
        ("integer beyond Int64", Array("9223372036854775808".utf8), .refused),
        ("negative integer beyond Int64", Array("-9223372036854775809".utf8), .refused),
        ("real overflow", Array("1e400".utf8), .refused),
        ("leading zero", Array("012".utf8), .refused),
        ("bare minus", Array("-".utf8), .refused),
        ("dot without digits", Array("1.".utf8), .refused),
        ("plus sign", Array("+1".utf8), .refused),
        ("duplicate keys", Array(#"{"a":1,"a":2}"#.utf8), .refused),
        ("NUL escaped in a value", Array(#"["a\u0000b"]"#.utf8), .value(["a\u{0}b"])),
        ("NUL escaped in a key", Array(#"{"foo\u0000bar":42}"#.utf8), .refused),
        ("a raw NUL after the value (JSONTestSuite n_multidigit_number_then_00)", Array("123".utf8) + [0], .refused),
        ("a raw NUL inside a string", [0x22, 0x61, 0x00, 0x22], .refused),
        ("raw control character in a string", [0x22, 0x09, 0x22], .refused),
        ("invalid UTF-8 byte", [0x22, 0xFF, 0x22], .refused),
        ("overlong encoding", [0x22, 0xC0, 0xAF, 0x22], .refused),
        ("encoded surrogate", [0x22, 0xED, 0xA0, 0x80, 0x22], .refused),
        ("beyond U+10FFFF", [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], .refused),
        ("truncated sequence", [0x22, 0xE2, 0x82, 0x22], .refused),
        ("valid multi-byte", Array("\"é€😀\"".utf8), .value("é€😀")),
        ("escaped surrogate pair", Array(#""\ud83d\ude00""#.utf8), .value("😀")),
        ("lone high surrogate", Array(#""\ud83d""#.utf8), .refused),
        ("lone low surrogate", Array(#""\ude00""#.utf8), .refused),
        ("bad escape", Array(#""\x41""#.utf8), .refused),
        ("short \\u escape", Array(#""\u12""#.utf8), .refused),
        ("escapes", Array(#""\"\\\/\b\f\n\r\t""#.utf8), .value("\"\\/\u{8}\u{c}\n\r\t")),
        ("trailing comma in an array", Array("[1,]".utf8), .refused),
        ("trailing comma in an object", Array(#"{"a":1,}"#.utf8), .refused),
        ("text after the value", Array("[1] x".utf8), .refused),
        ("two values", Array("1 2".utf8), .refused),
        ("empty input", [], .refused),
        ("only space", Array("  ".utf8), .refused),
        ("single quotes", Array("['a']".utf8), .refused),
        ("a key that is not a string", Array("{1:2}".utf8), .refused),
        ("unterminated string", Array(#""abc"#.utf8), .refused),
        ("literals", Array("[true,false,null]".utf8), .value([true, false, nil])),
        ("misspelt literal", Array("[tru]".utf8), .refused),
        ("capitalised literal", Array("True".utf8), .refused),
        ("byte order mark", [0xEF, 0xBB, 0xBF] + Array("1".utf8), .refused),
        ("nesting at the limit", Array(String(repeating: "[", count: JSON.maxDepth) + String(repeating: "]", count: JSON.maxDepth)).map { $0.asciiValue! },
         .value((0..<(JSON.maxDepth - 1)).reduce(JSON.array([])) { inner, _ in .array([inner]) })),
        ("nesting past the limit", Array(String(repeating: "[", count: JSON.maxDepth + 1) + String(repeating: "]", count: JSON.maxDepth + 1)).map { $0.asciiValue! },
         .refused),
        ("objects past the limit", Array((String(repeating: #"{"a":"#, count: JSON.maxDepth + 1) + "1" + String(repeating: "}", count: JSON.maxDepth + 1)).utf8),
         .refused),
    ]

    @Test(arguments: vectors.indices)
    func vectorsGetTheSameAnswer(_ i: Int) {
        let (what, bytes, expected) = Self.vectors[i]
        #expect(Self.core(bytes) == expected, "core parser: \(what)")
        #expect(Self.jansson(bytes) == expected, "jansson: \(what)")
    }

    /// Random documents, and each mutated at random (a byte changed, dropped, doubled or
    /// cut off): whatever one parser answers, the other answers too.
    @Test func randomTextsAndTheirMutationsGetTheSameAnswer() {
        var rng = SeededRandom(seed: 0x4A53_4F4E)
        let alphabet: [UInt8] = Array(#"{}[]:,"\ 0123456789.eE+-truefalsn/bu"#.utf8) + [0x00, 0x09, 0x0A, 0xC3, 0xA9, 0xED, 0xA0, 0xF0, 0x9F, 0x98, 0x80, 0xFF]
        var agreed = 0, refused = 0
        for _ in 0..<3_000 {
            let doc = Self.randomJSON(&rng, depth: 0).encoded()
            var texts = [doc]
            for _ in 0..<4 {
                var m = doc
                let at = Int.random(in: 0..<max(m.count, 1), using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0 where !m.isEmpty: m[at] = alphabet.randomElement(using: &rng)!
                case 1 where !m.isEmpty: m.remove(at: at)
                case 2 where !m.isEmpty: m.insert(m[at], at: at)
                default: m = Array(m.prefix(at))
                }
                texts.append(m)
            }
            for t in texts {
                let a = Self.core(t), b = Self.jansson(t)
                #expect(a == b, "\(String(decoding: t, as: UTF8.self).debugDescription): core \(a), jansson \(b)")
                agreed += 1
                if a == .refused { refused += 1 }
            }
        }
        #expect(agreed == 15_000 && refused > 3_000)
    }

    static func randomJSON(_ rng: inout SeededRandom, depth: Int) -> JSON {
        switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int64.random(in: -1_000_000...1_000_000, using: &rng))
        case 3: return .double(Double(Int.random(in: -10_000...10_000, using: &rng)) / 8)
        case 4: return .string(String((0..<Int.random(in: 0..<6, using: &rng)).map { _ in "aé\"\\\n😀 \u{1}".randomElement(using: &rng)! }))
        case 5: return .array((0..<Int.random(in: 0..<4, using: &rng)).map { _ in randomJSON(&rng, depth: depth + 1) })
        default:
            var o = JSONObject()
            for k in 0..<Int.random(in: 0..<4, using: &rng) { o["k\(k)"] = randomJSON(&rng, depth: depth + 1) }
            return .object(o)
        }
    }
}
