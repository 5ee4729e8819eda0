import NavSync
/// `navsyncd --hooks FILE` (docs/backend.md): where the app's backend is asked before a
/// join or a chosen command (hooks), and told what happened (webhooks). Pure: the
/// file's bytes in, a value out, every mistake named by its place in the file. The
/// secret file is read by the runtime and given here as its lines (`secrets(from:)`).
public struct HooksConfiguration: Sendable, Equatable {
    /// The hook endpoint (`http://` or `https://`); nil when only webhooks are wanted.
    public var url: String?
    /// The file holding the signing secrets (`whsec_…`, one per line), as written.
    public var secretFile: String
    /// An extra CA (PEM) for `https://` endpoints, beside the system's.
    public var caFile: String?
    /// How long a hook or a webhook batch may take, in milliseconds.
    public var timeoutMS: Int
    /// Whether joins go to the join hook.
    public var join: Bool
    /// Flow name (or `*`) to the op names whose commands go to the command hook
    /// (`*`: every command of the flow).
    public var commands: [String: [String]]
    /// Request headers of the upgrade passed to the join hook, lowercased.
    public var headers: [String]
    /// How long a session stays empty before `session.vacated`, in milliseconds.
    public var vacatedDelayMS: Int
    /// Without `--data`: events held per endpoint at most (the oldest go first past it).
    public var maxQueue: Int
    public var webhooks: [Endpoint]

    /// One webhook endpoint: where batches go, which event types and sessions.
    public struct Endpoint: Sendable, Equatable {
        public var url: String
        public var events: Set<String>
        /// Session names or `*` globs.
        public var sessions: [String]

        public init(url: String, events: Set<String> = HooksConfiguration.eventTypes, sessions: [String] = ["*"]) {
            self.url = url; self.events = events; self.sessions = sessions
        }

        public func wants(_ type: String, session: String) -> Bool {
            events.contains(type) && sessions.contains { AccessPolicy.glob($0, matches: session) }
        }
    }

    /// Every webhook event type (docs/backend.md, "Webhooks").
    public static let eventTypes: Set<String> = ["revision", "session.created", "session.deleted", "session.reset",
                                                  "session.occupied", "session.vacated"]

    public init(url: String? = nil, secretFile: String = "", caFile: String? = nil, timeoutMS: Int = 2000, join: Bool = false,
                commands: [String: [String]] = [:], headers: [String] = [], vacatedDelayMS: Int = 5000, maxQueue: Int = 100_000,
                webhooks: [Endpoint] = []) {
        self.url = url; self.secretFile = secretFile; self.caFile = caFile; self.timeoutMS = timeoutMS; self.join = join
        self.commands = commands; self.headers = headers; self.vacatedDelayMS = vacatedDelayMS; self.maxQueue = maxQueue
        self.webhooks = webhooks
    }

    /// One line for the log: what is asked and told, never the secret.
    public var summary: String {
        var parts: [String] = []
        if let url {
            var asked: [String] = []
            if join { asked.append("joins") }
            let rules = commands.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.joined(separator: ","))" }
            if !rules.isEmpty { asked.append("commands (\(rules.joined(separator: "; ")))") }
            parts.append("hooks at \(url) for \(asked.isEmpty ? "nothing" : asked.joined(separator: " and "))")
        }
        if !webhooks.isEmpty { parts.append("webhooks to \(webhooks.map(\.url).joined(separator: ", "))") }
        return parts.joined(separator: "; ")
    }

    /// Whether a command of this flow with these op names goes to the command hook.
    public func wantsCommandHook(flow: String, ops: [String]) -> Bool {
        guard url != nil, let listed = commands[flow] ?? commands["*"], !listed.isEmpty else { return false }
        return listed.contains("*") || ops.contains { listed.contains($0) }
    }

    public static func load(bytes: [UInt8], file: String) throws(FlowError) -> HooksConfiguration {
        func fail(_ path: String, _ message: String) -> FlowError { FlowError(file: file, path: path, message: message) }
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw fail("", "not valid JSON: \(error)") }
        guard let top = json.objectValue else { throw fail("", "must be an object with \"secretFile\" and \"url\" or \"webhooks\"") }
        let keys = ["url", "secretFile", "caFile", "timeoutMs", "join", "commands", "headers", "webhooks", "vacatedDelayMs", "maxQueue"]
        // Unknown keys are refused: a typo ("command" for "commands") would otherwise
        // load and ask the backend about nothing.
        for key in top.keys where !keys.contains(key) {
            throw fail(key, "unknown key \"\(key)\" (expected \(keys.joined(separator: ", ")))")
        }
        func url(_ value: JSON?, _ path: String) throws(FlowError) -> String {
            guard let s = value?.stringValue else { throw fail(path, "must be an http:// or https:// URL") }
            let lower = s.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), s.count > 8, !s.contains(" ") else {
                throw fail(path, "must be an http:// or https:// URL, got \"\(s)\"")
            }
            return s
        }
        func positive(_ key: String, _ fallback: Int, max: Int) throws(FlowError) -> Int {
            guard let v = top[key], !v.isNull else { return fallback }
            guard case .int(let n) = v, n >= 1, n <= Int64(max) else { throw fail(key, "must be an integer from 1 to \(max)") }
            return Int(n)
        }
        var c = HooksConfiguration()
        if let u = top["url"], !u.isNull { c.url = try url(u, "url") }
        guard let secret = top["secretFile"]?.stringValue, !secret.isEmpty else {
            throw fail("secretFile", "is required: the file of the secret every request is signed with (a line \"whsec_\" + base64)")
        }
        c.secretFile = secret
        if let ca = top["caFile"], !ca.isNull {
            guard let s = ca.stringValue, !s.isEmpty else { throw fail("caFile", "must be the path of a PEM file") }
            c.caFile = s
        }
        c.timeoutMS = try positive("timeoutMs", 2000, max: 60_000)
        c.vacatedDelayMS = try positive("vacatedDelayMs", 5000, max: 86_400_000)
        c.maxQueue = try positive("maxQueue", 100_000, max: 100_000_000)
        if let j = top["join"], !j.isNull {
            guard case .bool(let b) = j else { throw fail("join", "must be true or false") }
            c.join = b
        }
        if let m = top["commands"], !m.isNull {
            guard let o = m.objectValue else { throw fail("commands", "must map flow names (or \"*\") to lists of op names") }
            for (flow, value) in o {
                let path = "commands.\(flow)"
                guard let list = value.arrayValue else { throw fail(path, "must be a list of op names (\"*\": every op)") }
                var names: [String] = []
                for (i, item) in list.enumerated() {
                    guard let name = item.stringValue, name == "*" || OpName(wire: name) != nil || name == "restore" || name == "load" else {
                        throw fail("\(path)[\(i)]", "must be an op name (push, open, update…) or \"*\", got \(item)")
                    }
                    names.append(OpName(wire: name)?.rawValue ?? name)
                }
                c.commands[flow] = names
            }
        }
        if c.join || c.commands.values.contains(where: { !$0.isEmpty }), c.url == nil {
            throw fail("url", "is required for \"join\" and \"commands\": the endpoint the hooks are posted to")
        }
        if let h = top["headers"], !h.isNull {
            guard let list = h.arrayValue else { throw fail("headers", "must be a list of request header names") }
            for (i, item) in list.enumerated() {
                guard let name = item.stringValue, !name.isEmpty, name.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: ":") }) else {
                    throw fail("headers[\(i)]", "must be a header name, like \"Cookie\"")
                }
                c.headers.append(name.lowercased())
            }
        }
        if let w = top["webhooks"], !w.isNull {
            guard let list = w.arrayValue else { throw fail("webhooks", "must be a list of {url, events?, sessions?}") }
            for (i, item) in list.enumerated() {
                let p = "webhooks[\(i)]"
                guard let o = item.objectValue else { throw fail(p, "must be an object {url, events?, sessions?}") }
                for key in o.keys where !["url", "events", "sessions"].contains(key) {
                    throw fail("\(p).\(key)", "unknown key \"\(key)\" (expected url, events, sessions)")
                }
                var endpoint = Endpoint(url: try url(o["url"], "\(p).url"))
                if let e = o["events"], !e.isNull {
                    guard let names = e.arrayValue, !names.isEmpty else { throw fail("\(p).events", "must be a non-empty list of event types") }
                    var set = Set<String>()
                    for (j, n) in names.enumerated() {
                        guard let s = n.stringValue, eventTypes.contains(s) else {
                            throw fail("\(p).events[\(j)]", "must be one of \(eventTypes.sorted().joined(separator: ", ")), got \(n)")
                        }
                        set.insert(s)
                    }
                    endpoint.events = set
                }
                if let s = o["sessions"], !s.isNull {
                    guard let names = s.arrayValue?.compactMap(\.stringValue), !names.isEmpty, names.count == s.arrayValue!.count else {
                        throw fail("\(p).sessions", "must be a non-empty list of session names or * patterns")
                    }
                    endpoint.sessions = names
                }
                c.webhooks.append(endpoint)
            }
        }
        if c.url == nil, c.webhooks.isEmpty { throw fail("", "asks for nothing: give \"url\" (hooks) or \"webhooks\"") }
        return c
    }

    /// The signing keys of a secret file's text: one `whsec_` + base64 (24 to 64 bytes)
    /// per line; several while rotating (each signs). Errors name the line, never the secret.
    public static func secrets(from text: String, file: String) throws(FlowError) -> [[UInt8]] {
        var keys: [[UInt8]] = []
        // (Lines end in LF or CRLF: "\r\n" is one Character, a newline like "\n".)
        for (i, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingSpaces
            if line.isEmpty { continue }
            let place = "line \(i + 1)"
            guard line.hasPrefix("whsec_") else { throw FlowError(file: file, path: place, message: "must start with \"whsec_\" (whsec_ + base64 of 24 to 64 random bytes)") }
            guard let key = Base64.decode(String(line.dropFirst(6))), (24...64).contains(key.count) else {
                throw FlowError(file: file, path: place, message: "must be whsec_ + base64 of 24 to 64 random bytes (openssl rand -base64 32)")
            }
            keys.append(key)
        }
        guard !keys.isEmpty else { throw FlowError(file: file, path: "", message: "holds no secret: one line whsec_ + base64 of 24 to 64 random bytes") }
        return keys
    }
}
