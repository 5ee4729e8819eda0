import NavSync
/// Who may do what (docs/protocol.md, "Who may do what (--auth FILE)"): the tokens of an auth file, each with a role
/// and, optionally, the sessions it may use, and JWTs an app's backend signs
/// (`--jwt-key`). Pure: the file's bytes in, decisions out.
public struct AccessPolicy: Sendable {
    public struct Grant: Sendable, Equatable {
        public var token: String
        public var role: Hub.Role
        /// Session names or `*` globs the token may use; nil for all.
        public var sessions: [String]?
        /// Shown in presence and logs instead of the token (a JWT's `sub`).
        public var label: String?
        /// A JWT's `exp`, in ms since the epoch: the connection is closed then unless it
        /// refreshed its token. Nil for a token of the auth file.
        public var expires: Int64?
        /// A JWT's claims, passed to the join hook (docs/backend.md). Nil for a token of the auth file.
        public var claims: JSONObject?

        /// What logs and messages call this grant: its label, never the token.
        public var name: String { label ?? "a \(role.rawValue) token" }

        public init(token: String, role: Hub.Role, sessions: [String]? = nil, label: String? = nil) {
            self.token = token
            self.role = role
            self.sessions = sessions
            self.label = label
        }

        public func allows(session: String) -> Bool {
            guard let patterns = sessions else { return true }
            return patterns.contains { AccessPolicy.glob($0, matches: session) }
        }
    }

    public var grants: [Grant]
    /// `--jwt-key`: signed tokens are taken besides (or instead of) `grants`.
    public var jwt: JWTSettings?

    public init(grants: [Grant], jwt: JWTSettings? = nil) {
        self.grants = grants
        self.jwt = jwt
    }

    /// Why a token shown is not taken.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case unknown
        case jwt(JWT.Refusal)

        public var description: String {
            switch self {
            case .unknown: "that token is not valid here"
            case .jwt(let r): r.description
            }
        }
    }

    /// The grant of a token shown at `wallMS` (ms since the epoch): a token of the auth
    /// file, or else, with `--jwt-key`, a JWT whose signature the runtime checked
    /// (`verification`: what its keys made of this token) and whose claims hold.
    public func check(_ token: String, verification: Result<JWT.Verified, JWT.Refusal>?, wallMS: Int64) -> Result<Grant, Refusal> {
        if let g = grant(for: token) { return .success(g) }
        guard let jwt, JWT.looksLike(token) else { return .failure(.unknown) }
        switch verification {
        case .success(let verified)? where verified.token == token:
            return JWT.grant(verified, settings: jwt, wallMS: wallMS).mapError { .jwt($0) }
        case .failure(let refusal)?: return .failure(.jwt(refusal))
        default: return .failure(.jwt(.signature))   // nothing verified this token
        }
    }

    /// What a policy's tokens are, for the start's log line.
    public var summary: String {
        let file = "\(grants.count) tokens"
        guard jwt != nil else { return file }
        return grants.isEmpty ? "JWTs (--jwt-key)" : file + " and JWTs (--jwt-key)"
    }

    /// Parses an auth file: `{"tokens": [{"token", "role", "sessions"?, "label"?}]}`.
    /// Errors name the file and the place, like flows.
    public static func load(bytes: [UInt8], file: String) throws(FlowError) -> AccessPolicy {
        func fail(_ path: String, _ message: String) -> FlowError { FlowError(file: file, path: path, message: message) }
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw fail("", "not valid JSON: \(error)") }
        // Unknown keys are refused: a typo ("session" for "sessions") would otherwise
        // load and grant every session.
        func onlyKeys(_ o: JSONObject, _ allowed: [String], _ path: String, _ what: String) throws(FlowError) {
            for key in o.keys where !allowed.contains(key) {
                throw fail(path.isEmpty ? key : path + "." + key, "unknown key \"\(key)\" in \(what) (expected \(allowed.joined(separator: ", ")))")
            }
        }
        guard let top = json.objectValue else { throw fail("", "must be an object with \"tokens\"") }
        try onlyKeys(top, ["tokens"], "", "the auth file")
        guard let list = json["tokens"]?.arrayValue else { throw fail("tokens", "must be a list of tokens") }
        var grants: [Grant] = []
        var seen = Set<String>()
        for (i, item) in list.enumerated() {
            let p = "tokens[\(i)]"
            guard let entry = item.objectValue else { throw fail(p, "must be an object {token, role, sessions?, label?}") }
            try onlyKeys(entry, ["token", "role", "sessions", "label"], p, "a token")
            guard let token = item["token"]?.stringValue, token.utf8.count >= 8 else {
                throw fail(p + ".token", "must be a string of at least 8 characters")
            }
            guard seen.insert(token).inserted else { throw fail(p + ".token", "is listed twice") }
            guard let roleName = item["role"]?.stringValue, let role = Hub.Role(rawValue: roleName) else {
                throw fail(p + ".role", "must be viewer, controller or admin")
            }
            var sessions: [String]?
            if let s = item["sessions"], !s.isNull {
                guard let names = s.arrayValue?.compactMap(\.stringValue), names.count == s.arrayValue!.count, !names.isEmpty else {
                    throw fail(p + ".sessions", "must be a non-empty list of session names or * patterns")
                }
                sessions = names
            }
            var label: String?
            if let l = item["label"], !l.isNull {
                guard let s = l.stringValue else { throw fail(p + ".label", "must be a string") }
                label = s
            }
            grants.append(Grant(token: token, role: role, sessions: sessions, label: label))
        }
        return AccessPolicy(grants: grants)
    }

    /// Tokens too weak to stand guard beyond loopback, with why: shorter than 16
    /// characters, or an example token from the docs.
    public var weakTokens: [(index: Int, reason: String)] {
        grants.enumerated().compactMap { i, g in
            if Self.exampleTokens.contains(g.token) { return (i, "is an example token from the docs") }
            if g.token.utf8.count < 16 { return (i, "is shorter than 16 characters") }
            return nil
        }
    }

    /// The tokens the docs and docs/protocol.md show in examples.
    public static let exampleTokens: Set<String> = ["change-me-1", "change-me-2", "change-me-3"]

    /// The grant of a token. Every token is compared in full, in time that depends only
    /// on the lengths, so timing does not reveal how much of a guess was right.
    public func grant(for token: String) -> Grant? {
        let guess = Array(token.utf8)
        var found: Grant?
        for g in grants where Self.constantTimeEqual(Array(g.token.utf8), guess) { found = g }
        return found
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var diff = UInt8(truncatingIfNeeded: a.count ^ b.count)
        for i in 0..<max(a.count, b.count) {
            diff |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return diff == 0
    }

    /// `*` matches any run of characters (session names have no `/`).
    public static func glob(_ pattern: String, matches name: String) -> Bool {
        let p = Array(pattern), n = Array(name)
        var pi = 0, ni = 0, star = -1, mark = 0
        while ni < n.count {
            if pi < p.count && p[pi] != "*" && p[pi] == n[ni] { pi += 1; ni += 1 }
            else if pi < p.count && p[pi] == "*" { star = pi; mark = ni; pi += 1 }
            else if star >= 0 { pi = star + 1; mark += 1; ni = mark }
            else { return false }
        }
        while pi < p.count && p[pi] == "*" { pi += 1 }
        return pi == p.count
    }

    /// The token of a request: `Authorization: Bearer …`, else `?token=` (browsers cannot
    /// set headers on a WebSocket).
    public static func token(of request: HTTPRequest) -> String? {
        if let header = request.header("Authorization") {
            let parts = header.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { return String(parts[1]).trimmingCharacters() }
        }
        return request.query("token")
    }
}
