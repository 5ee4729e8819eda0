/// The client side of protocol v1: what the server sends, decoded back into values
/// (the inverse of `ServerMessage.json(id:)`). Used by `SessionMachine`, navclient and
/// the tests. A message of a type this version does not know is `nil`, not an error:
/// servers may add types (docs/protocol.md, "Client messages").
extension ServerMessage {
    /// The message and its request id.
    public struct Received: Sendable, Equatable {
        public var message: ServerMessage
        public var id: JSON?
    }

    /// Decodes one text message; `bad_json` or `bad_request` naming the field when it
    /// is broken, nil for an unknown type.
    public static func decode(_ bytes: [UInt8]) throws(NavError) -> Received? {
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw NavError(.badJSON, "not valid JSON: \(error)") }
        return try decode(json)
    }

    public static func decode(_ json: JSON) throws(NavError) -> Received? {
        guard let o = json.objectValue else { throw NavError(.badRequest, "a message must be a JSON object, got \(json.typeName)") }
        let f = Fields(object: o, code: .badRequest)
        let id = o["id"]
        let message: ServerMessage
        switch try f.string("type") {
        case "welcome":
            let limits = Fields(object: try f.object("limits"), code: .badRequest)
            var model = ModelLimits()
            model.maxOps = try limits.optionalInt("maxOps") ?? model.maxOps
            model.maxStackDepth = try limits.optionalInt("maxStackDepth") ?? model.maxStackDepth
            model.maxTabs = try limits.optionalInt("maxTabs") ?? model.maxTabs
            message = .welcome(.init(client: try f.string("client"), server: try f.string("server"), heartbeat: try f.int("heartbeat"),
                                     limits: ProtocolLimits(maxMessage: try limits.optionalInt("maxMessage") ?? 1 << 20, model: model)))
        case "joined":
            let session = try f.string("session")
            let catchUp: CatchUp
            if let state = o["state"] {
                catchUp = .state(state)
            } else {
                catchUp = .patches(try f.array("patches").map { p throws(NavError) in
                    try patch(Fields(object: try object(p, "patches[]"), code: .badRequest))
                })
            }
            message = .joined(.init(session: session, epoch: try f.string("epoch"), rev: try f.int("rev"), flow: o["flow"] ?? .null,
                                    members: try f.array("members").map { m throws(NavError) in try member(m) },
                                    others: try f.optionalInt("others"), catchUp: catchUp))
        case "left":
            message = .left(session: try f.string("session"))
        case "patch":
            message = .patch(session: try f.string("session"), try patch(f))
        case "ack":
            let results = try f.array("results").map { r throws(NavError) in
                guard let s = r.stringValue, let result = OpResult(rawValue: s) else {
                    throw NavError(.badRequest, "'results' holds an unknown result \(r)")
                }
                return result
            }
            message = .ack(session: try f.string("session"), Ack(id: try CommandID(field: id), rev: try f.int("rev"), results: results,
                                                                  duplicate: try f.optionalBool("duplicate") ?? false,
                                                                  redirects: (o["redirects"]?.arrayValue ?? []).compactMap(Redirect.init(json:)),
                                                                  created: (o["created"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(EntryID.init) }))
        case "error":
            let code = try f.string("code")
            var guarded: NavError.Guarded?
            if let g = o["guard"]?.stringValue {
                let chain = (o["chain"]?.arrayValue ?? []).compactMap { step -> NavError.RedirectStep? in
                    guard let g = step["guard"]?.stringValue, let r = step["route"]?.stringValue, let l = step["link"]?.stringValue else { return nil }
                    return .init(guard: g, route: r, link: l)
                }
                guarded = .init(guard: g, route: o["route"]?.stringValue ?? "", entry: o["entry"]?.stringValue ?? "", chain: chain)
            }
            message = .error(NavError(ErrorCode(rawValue: code) ?? .internal, try f.string("message"),
                                      op: try f.optionalInt("op"), rev: try f.optionalInt("rev"), guarded: guarded,
                                      retryAfter: try f.optionalInt("retryAfter"), details: o["details"]))
        case "synced":
            message = .synced(session: try f.string("session"), rev: try f.int("rev"))
        case "snapshot":
            guard let state = o["state"] else { throw NavError(.badRequest, "missing field 'state'") }
            if try f.optionalBool("historic") == true {
                message = .historic(session: try f.string("session"), rev: try f.int("rev"), state: state)
            } else {
                message = .snapshot(session: try f.string("session"), rev: try f.int("rev"), state: state)
            }
        case "history":
            message = .history(session: try f.string("session"), rev: try f.int("rev"), earliest: try f.int("earliest"),
                               entries: try f.array("entries").map { e throws(NavError) in
                guard let entry = HistoryEntry(json: e) else { throw NavError(.badRequest, "a history entry lacks rev, ts, client, cmd, ops or results") }
                return entry
            })
        case "sessions":
            message = .sessions(try f.array("sessions").map { s throws(NavError) in
                let g = Fields(object: try object(s, "sessions[]"), code: .badRequest)
                return SessionSummary(session: try g.string("session"), flow: try g.string("flow"), rev: try g.int("rev"), members: try g.int("members"))
            })
        case "pong":
            message = .pong
        case "auth":
            message = .auth(role: try f.string("role"), expires: try f.optionalInt("expires").map(Int64.init))
        case "deleted":
            message = .deleted(session: try f.string("session"), by: try f.string("by"))
        case "presence":
            let session = try f.string("session")
            var p = Presence(others: try f.optionalInt("others"))
            if o["joined"] != nil { p.joined = try f.array("joined").map { m throws(NavError) in try member(m) } }
            if o["left"] != nil {
                p.left = try f.array("left").map { c throws(NavError) in
                    guard let s = c.stringValue else { throw NavError(.badRequest, "'left' holds a client id that is not a string") }
                    return s
                }
            }
            if o["status"] != nil {
                p.status = try f.array("status").map { j throws(NavError) in
                    let s = Fields(object: try object(j, "status[]"), code: .badRequest)
                    return Presence.Status(client: try s.string("client"), rev: try s.int("rev"), focus: try s.optionalString("focus"))
                }
            }
            message = .presence(session: session, p)
        default:
            return nil
        }
        return Received(message: message, id: id)
    }

    private static func object(_ j: JSON, _ what: String) throws(NavError) -> JSONObject {
        guard let o = j.objectValue else { throw NavError(.badRequest, "\(what) must be an object, got \(j.typeName)") }
        return o
    }

    private static func patch(_ f: Fields) throws(NavError) -> Patch {
        let ops = try f.array("ops").map { op throws(NavError) in
            do { return try PatchOperation(json: op) } catch { throw NavError(.badRequest, "'ops' holds a bad JSON Patch operation: \(error)") }
        }
        return Patch(rev: try f.int("rev"), by: try f.string("by"), cmd: try CommandID(field: f.object["cmd"]), ops: ops)
    }

    package static func member(_ j: JSON) throws(NavError) -> Member {
        let f = Fields(object: try object(j, "a member"), code: .badRequest)
        let client = try f.string("client")
        return Member(client: client, name: try f.optionalString("name") ?? client, role: try f.optionalString("role") ?? "",
                      rev: try f.optionalInt("rev"), focus: try f.optionalString("focus"), user: try f.optionalString("user"))
    }
}
