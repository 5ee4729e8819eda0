import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

@Suite("JSON bridge and encoder")
struct JSONTests {
    /// Strings are escaped eight bytes at a time where nothing needs it: every byte that
    /// does is found at every offset and length, as a byte-by-byte escaper finds it.
    @Test func stringsEscapeAsByteByByte() throws {
        func reference(_ s: String) -> [UInt8] {
            var out: [UInt8] = [34]
            for b in s.utf8 {
                switch b {
                case 0x22: out += [92, 34]
                case 0x5C: out += [92, 92]
                case 0x0A: out += Array("\\n".utf8)
                case 0x0D: out += Array("\\r".utf8)
                case 0x09: out += Array("\\t".utf8)
                case 0x08: out += Array("\\b".utf8)
                case 0x0C: out += Array("\\f".utf8)
                case ..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out += Array("\\u00".utf8) + [hex[Int(b >> 4)], hex[Int(b & 15)]]
                default: out.append(b)
                }
            }
            return out + [34]
        }
        let specials: [String] = ["\"", "\\", "\n", "\u{0}", "\u{1f}", "\u{7f}", " ", "!", "#", "[", "]", "é", "€", "😀", "\u{20}", "~"]
        var checked = 0
        for length in 0..<24 {
            for at in 0..<max(length, 1) {
                for special in specials {
                    var chars = Array(repeating: "a", count: length)
                    if length > 0 { chars[at] = special }
                    let s = chars.joined()
                    let encoded = JSON.string(s).encoded()
                    #expect(encoded == reference(s), "\(s.debugDescription)")
                    #expect(try JSON.parse(encoded) == .string(s))
                    checked += 1
                }
            }
        }
        #expect(checked > 4000)
        // Two of them in one string, at every pair of places: the scan goes on after an
        // escape, by words and by bytes again.
        for length in 2..<20 {
            for at in 0..<length {
                for at2 in 0..<length where at2 != at {
                    for (special, special2) in [("\"", "\n"), ("\\", "\u{1}"), ("é", "\""), ("\u{0}", "\u{1f}")] {
                        var chars = Array(repeating: "a", count: length)
                        chars[at] = special
                        chars[at2] = special2
                        let s = chars.joined()
                        #expect(JSON.string(s).encoded() == reference(s), "\(s.debugDescription)")
                    }
                }
            }
        }
    }

    @Test func parsesEveryKindOfValue() throws {
        let v = try JSON.parse(#"{"a":[1,-2,2.5,"x\ny",null,true,false],"b":{"c":{}},"u":"\u00e9\u0000"}"#)
        #expect(v["a"] == [1, -2, 2.5, "x\ny", nil, true, false])
        #expect(v["b"] == ["c": [:]])
        #expect(v["u"] == .string("é\u{0}"))
    }

    @Test func keepsIntegersAndRealsApart() throws {
        #expect(try JSON.parse("3") == .int(3))
        #expect(try JSON.parse("3.0") == .double(3.0))
        #expect(try JSON.parse("3.0").encodedString() == "3.0")
        #expect(JSON.double(0.1).encodedString() == "0.1")
        #expect(JSON.int(Int64.min).encodedString() == "-9223372036854775808")
        for n: Int64 in [0, 7, -7, 9, 10, 99, 100, 1_000_000, -1_000_001, Int64.max, Int64.min + 1] {
            #expect(JSON.int(n).encodedString() == String(n))
        }
        // Every length, odd and even (the writer puts two digits per step), both signs.
        var power: Int64 = 1
        for _ in 0..<19 {
            for n in [power - 1, power, power + 1, 5 * power, power &* 10 - 1] where n >= 0 {
                #expect(JSON.int(n).encodedString() == String(n))
                #expect(JSON.int(-n).encodedString() == String(-n))
            }
            power = power.multipliedReportingOverflow(by: 10).partialValue
        }
        var rng = SeededRandom(seed: 13)
        for _ in 0..<2000 {
            let n = Int64(bitPattern: rng.next()) >> Int64(rng.next() % 63)
            #expect(JSON.int(n).encodedString() == String(n))
        }
        // Past the writer's first buffer: it grows and keeps every byte.
        let long = String(repeating: "ab\"c", count: 3000)
        #expect(try JSON.parse(JSON.array([.string(long), .int(1)]).encoded()) == .array([.string(long), .int(1)]))
    }

    @Test func malformedInputGivesLineColumnAndReason() {
        let cases: [(String, Int, Int)] = [
            ("{\"a\": 1,\n  \"b\": }", 2, 8),
            ("[1, 2", 1, 5),
            ("", 1, 0),
            ("{\"a\":1} x", 1, 9),
        ]
        for (text, line, column) in cases {
            #expect(throws: JSONParseError.self) { try JSON.parse(text) }
            do { _ = try JSON.parse(text) } catch {
                #expect(error.line == line, "\(text): \(error)")
                #expect(error.column == column, "\(text): \(error)")
                #expect(!error.reason.isEmpty)
            }
        }
    }

    @Test func refusesDuplicateKeysInvalidUTF8AndHugeIntegers() {
        #expect(throws: JSONParseError.self) { try JSON.parse(#"{"a":1,"a":2}"#) }
        #expect(throws: JSONParseError.self) { try JSON.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSON.parse("99999999999999999999") }
        #expect(throws: JSONParseError.self) { try JSON.parse("NaN") }
    }

    @Test func deepNestingIsRefusedNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParseError.self) { try JSON.parse(deep) }
    }

    @Test func encodingIsCompactEscapedAndRoundTrips() throws {
        let v: JSON = ["q": "a\"b\\c\u{1}\t", "n": [1, 2.25, nil], "e": [:]]
        let text = v.encodedString()
        #expect(text == #"{"q":"a\"b\\c\u0001\t","n":[1,2.25,null],"e":{}}"#)
        #expect(try JSON.parse(text) == v)
    }

    @Test func keyOrderIsInsertionOrderOrSorted() {
        let v: JSON = ["b": 1, "a": ["d": 1, "c": 2]]
        #expect(v.encodedString() == #"{"b":1,"a":{"d":1,"c":2}}"#)
        #expect(v.encodedString(sortedKeys: true) == #"{"a":{"c":2,"d":1},"b":1}"#)
        #expect(v.normalized.encodedString() == v.encodedString(sortedKeys: true))
    }

    @Test func objectEqualityIgnoresOrder() {
        let a: JSON = ["x": 1, "y": 2]
        let b: JSON = ["y": 2, "x": 1]
        #expect(a == b)
    }

    @Test func mergePatchFollowsRFC7386() {
        // RFC 7386 Appendix A, a selection.
        let cases: [(JSON, JSON, JSON)] = [
            (["a": "b"], ["a": "c"], ["a": "c"]),
            (["a": "b"], ["b": "c"], ["a": "b", "b": "c"]),
            (["a": "b"], ["a": nil], [:]),
            (["a": ["b": "c"]], ["a": ["b": "d", "c": nil]], ["a": ["b": "d"]]),
            (["a": [["b": "c"]]], ["a": [1]], ["a": [1]]),
            (["e": nil], ["a": 1], ["e": nil, "a": 1]),
            ([:], ["a": ["bb": ["ccc": nil]]], ["a": ["bb": [:]]]),
        ]
        for (target, patch, result) in cases {
            #expect(target.mergePatched(with: patch) == result)
        }
    }
}

@Suite("JSON Patch (RFC 6902)")
struct JSONPatchTests {
    func patch(_ text: String) throws -> [PatchOperation] {
        try JSON.parse(text).arrayValue!.map { try PatchOperation(json: $0) }
    }

    @Test func appendixAExamples() throws {
        // RFC 6902 Appendix A.1, A.2, A.3, A.4, A.6, A.7, A.10, A.16
        #expect(try JSON.parse(#"{"foo":"bar"}"#).applying(patch(#"[{"op":"add","path":"/baz","value":"qux"}]"#))
                == ["foo": "bar", "baz": "qux"])
        #expect(try JSON.parse(#"{"foo":["bar","baz"]}"#).applying(patch(#"[{"op":"add","path":"/foo/1","value":"qux"}]"#))
                == ["foo": ["bar", "qux", "baz"]])
        #expect(try JSON.parse(#"{"baz":"qux","foo":"bar"}"#).applying(patch(#"[{"op":"remove","path":"/baz"}]"#))
                == ["foo": "bar"])
        #expect(try JSON.parse(#"{"foo":["bar","qux","baz"]}"#).applying(patch(#"[{"op":"remove","path":"/foo/1"}]"#))
                == ["foo": ["bar", "baz"]])
        #expect(try JSON.parse(#"{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}"#)
                    .applying(patch(#"[{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]"#))
                == ["foo": ["bar": "baz"], "qux": ["corge": "grault", "thud": "fred"]])
        #expect(try JSON.parse(#"{"foo":["all","grass","cows","eat"]}"#)
                    .applying(patch(#"[{"op":"move","from":"/foo/1","path":"/foo/3"}]"#))
                == ["foo": ["all", "cows", "eat", "grass"]])
        #expect(try JSON.parse(#"{"foo":"bar"}"#).applying(patch(#"[{"op":"add","path":"/child","value":{"grandchild":{}}}]"#))
                == ["foo": "bar", "child": ["grandchild": [:]]])
        #expect(try JSON.parse(#"{"foo":["bar"]}"#).applying(patch(#"[{"op":"add","path":"/foo/-","value":["abc","def"]}]"#))
                == ["foo": ["bar", ["abc", "def"]]])
    }

    @Test func errorsAreReportedNotCrashes() throws {
        let doc: JSON = ["foo": ["bar"], "a~b": 1, "c/d": 2]
        #expect(throws: JSONPatchError.self) { try doc.applying(patch(#"[{"op":"remove","path":"/nope"}]"#)) }
        #expect(throws: JSONPatchError.self) { try doc.applying(patch(#"[{"op":"add","path":"/foo/5","value":1}]"#)) }
        #expect(throws: JSONPatchError.self) { try doc.applying(patch(#"[{"op":"replace","path":"/foo/01","value":1}]"#)) }
        #expect(throws: JSONPatchError.self) { try doc.applying(patch(#"[{"op":"test","path":"/foo/0","value":"baz"}]"#)) }
        #expect(throws: JSONPatchError.self) { try doc.applying(patch(#"[{"op":"move","from":"/foo","path":"/foo/0"}]"#)) }
        #expect(throws: JSONPatchError.self) { try patch(#"[{"op":"frobnicate","path":"/x"}]"#) }
        #expect(throws: JSONPatchError.self) { try patch(#"[{"op":"add","path":"/x"}]"#) }
        #expect(try doc.value(at: "/a~0b") == 1)
        #expect(try doc.value(at: "/c~1d") == 2)
    }

    @Test func diffOfDataIsKeyByKey() throws {
        let a: JSON = ["name": "x", "form": ["a": 1, "b": [1, 2]], "gone": true]
        let b: JSON = ["name": "x", "form": ["a": 2, "b": [1, 2], "c": nil], "new": "y"]
        var ops: [PatchOperation] = []
        a.diff(to: b, at: "", into: &ops)
        #expect(try a.applying(ops) == b)
        #expect(ops.count == 4)   // remove gone, replace form/a, add form/c, add new
    }
}
