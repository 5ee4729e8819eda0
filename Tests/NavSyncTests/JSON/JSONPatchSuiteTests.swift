import Foundation
import Testing
@testable import NavSync
@testable import NavSyncServer

/// The public RFC 6902 suite (tests/vectors/json-patch-tests) against the core's patch
/// applier, which the app client's mirror uses too.
@Suite("JSON Patch: the public suite")
struct JSONPatchSuiteTests {
    static let root = #filePath.split(separator: "/").dropLast(4).joined(separator: "/")

    /// The suite's cases. Read through Foundation, not the core's parser: two disabled
    /// cases hold an object with a duplicate key, which the core refuses (as it should).
    static func cases(_ file: String) throws -> [JSON] {
        let path = "/" + root + "/tests/vectors/json-patch-tests/" + file
        let data = try #require(FileManager.default.contents(atPath: path), "missing \(path)")
        return try #require(json(try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])).arrayValue)
    }

    static func json(_ v: Any) -> JSON {
        switch v {
        case is NSNull: return .null
        case let s as String: return .string(s)
        case let n as NSNumber:
            if type(of: n) == type(of: NSNumber(value: true)) { return .bool(n.boolValue) }
            let kind = String(cString: n.objCType)
            return kind == "d" || kind == "f" ? .double(n.doubleValue) : .int(n.int64Value)
        case let a as [Any]: return .array(a.map(json))
        case let o as [String: Any]: return .object(JSONObject(o.keys.sorted().map { ($0, json(o[$0]!)) }))
        default: preconditionFailure("not JSON: \(v)")
        }
    }

    @Test(arguments: ["tests.json", "spec_tests.json"])
    func everyEnabledCase(file: String) throws {
        var ran = 0
        for t in try Self.cases(file) where t["disabled"] != true {
            guard let doc = t["doc"], let list = t["patch"]?.arrayValue else { continue }
            ran += 1
            let what = t["comment"]?.stringValue ?? list.map { $0.encodedString() }.joined()
            var ops: [PatchOperation] = []
            var decodeError = false
            for o in list {
                if let op = try? PatchOperation(json: o) { ops.append(op) } else { decodeError = true }
            }
            let result: JSON? = decodeError ? nil : try? doc.applying(ops)
            if t["error"] != nil {
                #expect(result == nil, "\(file): \(what): must fail")
            } else {
                #expect(result == (t["expected"] ?? doc), "\(file): \(what)")
            }
        }
        #expect(ran >= (file == "tests.json" ? 90 : 15), "the suite is there")
    }
}
