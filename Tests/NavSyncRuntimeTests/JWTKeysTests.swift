import Testing
@preconcurrency import Glibc
@testable import NavSync
@testable import NavSyncServer
@testable import NavSyncRuntime

/// `--jwt-key` files checked by OpenSSL: RFC 7515's HS256 example, and the keys refused.
/// (RS256 and ES256 tokens signed by PyJWT: tests/integration/jwt.sh.)
@Suite("JWT keys")
struct JWTKeysTests {
    static func file(_ name: String, _ bytes: [UInt8]) -> String {
        let path = "/tmp/navsync-jwtkeys-\(getpid())-\(name)"
        let f = fopen(path, "wb")!
        _ = fwrite(bytes, 1, bytes.count, f)
        fclose(f)
        return path
    }

    /// RFC 7515 appendix A.1: the JWS and its key.
    static let token = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    static let key = Base64URL.decode("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")!

    @Test func rfc7515HS256() throws {
        let keys = try JWTKeys(files: [Self.file("a1.key", Self.key)])
        let parts = Self.token.split(separator: ".")
        let input = Array("\(parts[0]).\(parts[1])".utf8)
        let signature = Base64URL.decode(parts[2])!
        #expect(keys.verify(algorithm: "HS256", keyID: nil, input: input, signature: signature) == true)
        var forged = signature
        forged[0] ^= 1
        #expect(keys.verify(algorithm: "HS256", keyID: nil, input: input, signature: forged) == false)
        #expect(keys.verify(algorithm: "HS256", keyID: nil, input: input + [0x20], signature: signature) == false)
        #expect(keys.verify(algorithm: "ES256", keyID: nil, input: input, signature: signature) == nil, "no key of that kind")
        // The token itself, verified by the keys and passed on as the hub gets it: its
        // claims carry no role, and it expired in 2011.
        let verified = try #require(try? keys.verify(Self.token).get())
        #expect(verified.token == Self.token && verified.claims["iss"] == "joe")
        #expect(JWT.grant(verified, settings: JWTSettings(), wallMS: 1_300_819_300_000) == .failure(.claim("role must be viewer, controller or admin")))
        #expect(JWT.grant(verified, settings: JWTSettings(), wallMS: 1_796_299_200_000) == .failure(.expired))
        let forgedToken = "\(parts[0]).\(parts[1]).\(Base64URL.encode(forged))"
        #expect(keys.verify(forgedToken) == .failure(.signature))
        #expect(keys.verify("a.b") == .failure(.malformed("a JWT has three parts separated by dots")))
    }

    @Test func keysThatAreRefused() {
        func why(_ bytes: String) -> String {
            do { _ = try JWTKeys(files: [Self.file("k", Array(bytes.utf8))]); return "loaded" } catch { return error.description }
        }
        #expect(why("too short\n").contains("at least 32 bytes"))
        #expect(why(String(repeating: "s", count: 32) + "\n") == "loaded", "one trailing newline is not part of the secret")
        #expect(why("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").contains("-pubout"))
        #expect(why("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n").contains("not a PEM public key"))
        #expect((try? JWTKeys(files: ["/nonexistent/k.pem"])) == nil)
    }
}
