import NavSync
/// Tokens an app's backend mints: a JWT (RFC 7519) in the compact JWS form, signed
/// with HS256, RS256 or ES256, whose claims say who the client is (`sub`), its `role`,
/// the `sessions` it may use, and until when (`exp`, required).
///
/// Pure: parsing, the claims and the clock are here. The signature is the runtime's to
/// check (OpenSSL, `JWTKeys`): it parses a token (`Signed.parse`), checks the signature
/// over `Signed.input`, and passes the hub what it verified (`Verified`), which only the
/// package can make; the hub then judges the claims at the instant it is given.
public enum JWT {
    /// Clock skew forgiven on `exp` and `nbf`: 1 s, the most the contract allows.
    public static let leewayMS: Int64 = 1_000

    /// The algorithms taken. `none`, and any other, are refused.
    public static let algorithms: Set<String> = ["HS256", "RS256", "ES256"]

    /// What a token that is not taken is refused for; the description is what the
    /// client is told (an expired token's says "expired").
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case algorithm(String)
        case signature
        case expired
        case notYetValid
        case audience
        /// `--jwt-audience` is set and the token names no audience at all.
        case noAudience(wanted: String)
        case claim(String)

        public var description: String {
            switch self {
            case .malformed(let why): "malformed token: \(why)"
            case .algorithm(let why): why
            case .signature: "the token's signature does not verify"
            case .expired: "token expired"
            case .notYetValid: "token not valid yet (nbf)"
            case .audience: "the token is for another audience (aud)"
            case .noAudience(let wanted): "the token has no aud claim; this server takes tokens for audience '\(wanted)'"
            case .claim(let why): "token refused: \(why)"
            }
        }
    }

    /// Whether `token` has the shape of a compact JWS (three base64url parts), so a
    /// static token is not mistaken for one.
    public static func looksLike(_ token: String) -> Bool {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return parts.count == 3 && !parts[0].isEmpty && !parts[1].isEmpty
            && token.utf8.allSatisfy { Base64URL.isAlphabet($0) || $0 == UInt8(ascii: ".") }
    }

    /// A compact JWS taken apart, its signature not yet checked.
    public struct Signed: Sendable {
        public let token: String
        public let algorithm: String
        public let keyID: String?
        public let claims: JSON
        /// What the signature signs: the header and claims parts as they were sent.
        public let input: [UInt8]
        public let signature: [UInt8]

        /// The parts of `token`, or why it is not a JWT this server takes (malformed, an
        /// algorithm other than HS256, RS256 and ES256, `crit` headers).
        public static func parse(_ token: String) -> Result<Signed, Refusal> {
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3 else { return .failure(.malformed("a JWT has three parts separated by dots")) }
            guard let headerBytes = Base64URL.decode(parts[0]), let header = try? JSON.parse(headerBytes), let h = header.objectValue else {
                return .failure(.malformed("its header is not base64url JSON"))
            }
            guard let claimBytes = Base64URL.decode(parts[1]), let claims = try? JSON.parse(claimBytes), claims.objectValue != nil else {
                return .failure(.malformed("its claims are not base64url JSON"))
            }
            guard let signature = Base64URL.decode(parts[2]) else { return .failure(.malformed("its signature is not base64url")) }
            guard let alg = h["alg"]?.stringValue else { return .failure(.malformed("its header has no alg")) }
            guard alg != "none" else { return .failure(.algorithm("alg none is not accepted: tokens must be signed")) }
            guard algorithms.contains(alg) else { return .failure(.algorithm("alg \(alg) is not accepted (HS256, RS256 or ES256)")) }
            if h["crit"] != nil { return .failure(.malformed("crit header parameters are not supported")) }
            return .success(Signed(token: token, algorithm: alg, keyID: h["kid"]?.stringValue, claims: claims,
                                   input: Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)), signature: signature))
        }

        /// This token, its signature checked by the runtime's keys: `verified` true when
        /// one of them signed it, nil when no key takes its algorithm.
        package func checked(_ verified: Bool?) -> Result<Verified, Refusal> {
            switch verified {
            case nil: return .failure(.algorithm("no --jwt-key takes alg \(algorithm)"))
            case false?: return .failure(.signature)
            case true?: return .success(Verified(token: token, claims: claims))
            }
        }
    }

    /// A token whose signature one of `--jwt-key`'s keys verified, and its claims: what
    /// the runtime passes the hub (only the package makes one).
    public struct Verified: Sendable, Equatable {
        public let token: String
        public let claims: JSON
        package init(token: String, claims: JSON) { self.token = token; self.claims = claims }
    }

    /// The grant a verified token carries, if its claims hold at `wallMS` (with
    /// `leewayMS` of clock skew).
    public static func grant(_ verified: Verified, settings: JWTSettings, wallMS: Int64) -> Result<AccessPolicy.Grant, Refusal> {
        grant(claims: verified.claims, token: verified.token, settings: settings, wallMS: wallMS)
    }

    /// The claims of a token whose signature verified.
    static func grant(claims: JSON, token: String, settings: JWTSettings, wallMS: Int64) -> Result<AccessPolicy.Grant, Refusal> {
        let leeway = leewayMS
        func seconds(_ name: String) -> Result<Int64?, Refusal> {
            guard let v = claims[name], !v.isNull else { return .success(nil) }
            guard let n = v.numberValue, n.isFinite, abs(n) < 1e15 else { return .failure(.claim("\(name) must be a number of seconds")) }
            return .success(Int64((n * 1000).rounded(.down)))
        }
        let exp: Int64
        switch seconds("exp") {
        case .failure(let e): return .failure(e)
        case .success(nil): return .failure(.claim("exp is required"))
        case .success(let v?): exp = v
        }
        guard wallMS < exp + leeway else { return .failure(.expired) }
        switch seconds("nbf") {
        case .failure(let e): return .failure(e)
        case .success(let nbf?) where wallMS + leeway < nbf: return .failure(.notYetValid)
        default: break
        }
        if case .failure(let e) = seconds("iat") { return .failure(e) }
        if let wanted = settings.audience {
            guard let aud = claims["aud"], !aud.isNull else { return .failure(.noAudience(wanted: wanted)) }
            let listed = aud.stringValue.map { [$0] } ?? aud.arrayValue?.compactMap(\.stringValue) ?? []
            guard listed.contains(wanted) else { return .failure(.audience) }
        }
        guard let roleName = claims["role"]?.stringValue, let role = Hub.Role(rawValue: roleName) else {
            return .failure(.claim("role must be viewer, controller or admin"))
        }
        var sessions: [String]?
        if let s = claims["sessions"], !s.isNull {
            guard let list = s.arrayValue, !list.isEmpty, list.allSatisfy({ $0.stringValue != nil }) else {
                return .failure(.claim("sessions must be a non-empty list of session names or * patterns"))
            }
            sessions = list.compactMap(\.stringValue)
        }
        var subject: String?
        if let sub = claims["sub"], !sub.isNull {
            guard let s = sub.stringValue, !s.isEmpty else { return .failure(.claim("sub must be a non-empty string")) }
            subject = String(s.prefix(128))
        }
        var grant = AccessPolicy.Grant(token: token, role: role, sessions: sessions, label: subject)
        grant.expires = exp
        grant.claims = claims.objectValue
        return .success(grant)
    }
}

/// What the runtime's keys made of a JWT shown: its verified claims, or why not.
public typealias JWTVerification = Result<JWT.Verified, JWT.Refusal>

/// JWTs are taken (`--jwt-key`, whose keys the runtime holds), and `--jwt-audience`.
public struct JWTSettings: Sendable, Equatable {
    /// A token must name this audience in `aud` (nil: `aud` is not checked).
    public var audience: String?

    public init(audience: String? = nil) {
        self.audience = audience
    }
}

/// RFC 4648 section 5, without padding (JWS's encoding).
public enum Base64URL {
    static func isAlphabet(_ c: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(c) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
    }

    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.utf8.allSatisfy(isAlphabet), text.utf8.count % 4 != 1 else { return nil }
        var standard = String(text).replacing("-", with: "+").replacing("_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Base64.decode(standard)
    }

    public static func encode(_ bytes: [UInt8]) -> String {
        var text = Base64.encode(bytes)
        while text.hasSuffix("=") { text.removeLast() }
        return text.replacing("+", with: "-").replacing("/", with: "_")
    }
}
