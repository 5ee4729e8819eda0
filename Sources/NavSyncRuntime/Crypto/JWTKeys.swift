import NavSync
import NavSyncServer
import NavSyncLibuv
import CSSL

/// The keys of `--jwt-key`, checking JWT signatures with OpenSSL: an HS256 secret (the
/// file's bytes, one trailing newline ignored, at least 32 of them), or an RS256 or
/// ES256 (P-256) public key or certificate in PEM. Several files are several keys (for
/// rotation); a token naming a `kid` is checked with the key of that file name (without
/// its extension) when there is one, else with every key of its algorithm.
///
/// The runtime checks signatures here and passes the hub what verified
/// (`JWT.Verified`); the hub, a value, judges the claims and holds no key.
public final class JWTKeys: @unchecked Sendable {
    struct Key {
        let id: String
        let algorithm: String
        let secret: [UInt8]
        let publicKey: OpaquePointer?
    }

    let keys: [Key]
    public let files: [String]

    /// What each file holds, for the start's log line: "k1.pem (ES256)".
    public var summary: String { zip(files, keys).map { "\($0.0) (\($0.1.algorithm))" }.joined(separator: ", ") }

    public init(files: [String]) throws(TLSError) {
        var keys: [Key] = []
        for file in files {
            guard let bytes = FileSystem.read(file), bytes.count <= 1 << 20 else { throw TLSError("--jwt-key \(file): cannot read it") }
            keys.append(try Self.key(bytes, file: file))
        }
        self.keys = keys
        self.files = files
    }

    deinit { keys.forEach { EVP_PKEY_free($0.publicKey) } }

    private static func key(_ bytes: [UInt8], file: String) throws(TLSError) -> Key {
        let text = String(decoding: bytes, as: UTF8.self)
        var name = String(file.split(separator: "/").last ?? Substring(file))
        if let dot = name.lastIndex(of: "."), dot != name.startIndex { name = String(name[..<dot]) }
        guard text.contains("-----BEGIN ") else {
            var secret = bytes
            if secret.last == 10 { secret.removeLast() }
            guard secret.count >= 32 else {
                throw TLSError("--jwt-key \(file): an HS256 secret needs at least 32 bytes (RFC 7518 section 3.2), it has \(secret.count)")
            }
            return Key(id: name, algorithm: "HS256", secret: secret, publicKey: nil)
        }
        if text.contains("PRIVATE KEY-----") {
            throw TLSError("--jwt-key \(file): holds a private key; give navsyncd the public key (openssl pkey -in KEY -pubout)")
        }
        let bio = BIO_new_mem_buf(bytes, Int32(bytes.count))
        defer { BIO_free(bio) }
        var pkey: OpaquePointer?
        if text.contains("-----BEGIN CERTIFICATE-----") {
            if let cert = PEM_read_bio_X509(bio, nil, nil, nil) {
                pkey = X509_get_pubkey(cert)
                X509_free(cert)
            }
        } else {
            pkey = PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let pkey else { throw TLSError("--jwt-key \(file): not a PEM public key or certificate") }
        switch EVP_PKEY_get_base_id(pkey) {
        case EVP_PKEY_RSA where EVP_PKEY_get_bits(pkey) >= 2048:
            return Key(id: name, algorithm: "RS256", secret: [], publicKey: pkey)
        case EVP_PKEY_EC where EVP_PKEY_get_bits(pkey) == 256:
            return Key(id: name, algorithm: "ES256", secret: [], publicKey: pkey)
        default:
            EVP_PKEY_free(pkey)
            throw TLSError("--jwt-key \(file): takes an RSA key of 2048 bits or more (RS256) or a P-256 key (ES256)")
        }
    }

    /// A token taken apart and its signature checked: its verified claims for the hub,
    /// or why not (malformed, an algorithm not taken or without a key, a bad signature).
    public func verify(_ token: String) -> JWTVerification {
        JWT.Signed.parse(token).flatMap { signed in
            signed.checked(verify(algorithm: signed.algorithm, keyID: signed.keyID, input: signed.input, signature: signed.signature))
        }
    }

    /// Whether one of the keys for `algorithm` (the one named `keyID`, when that is
    /// given and known) signed `input`: nil when no key takes that algorithm.
    public func verify(algorithm: String, keyID: String?, input: [UInt8], signature: [UInt8]) -> Bool? {
        var candidates = keys.filter { $0.algorithm == algorithm }
        guard !candidates.isEmpty else { return nil }
        if let keyID, candidates.contains(where: { $0.id == keyID }) { candidates.removeAll { $0.id != keyID } }
        return candidates.contains { Self.verify($0, input, signature) }
    }

    private static func verify(_ key: Key, _ input: [UInt8], _ signature: [UInt8]) -> Bool {
        switch key.algorithm {
        case "HS256":
            var mac = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            guard HMAC(EVP_sha256(), key.secret, Int32(key.secret.count), input, input.count, &mac, &length) != nil,
                  signature.count == 32 else { return false }
            return CRYPTO_memcmp(mac, signature, 32) == 0
        case "RS256":
            return digestVerify(key.publicKey!, input, signature)
        case "ES256":
            // JWS carries r || s (32 bytes each); OpenSSL wants DER.
            guard signature.count == 64, let sig = ECDSA_SIG_new() else { return false }
            defer { ECDSA_SIG_free(sig) }
            ECDSA_SIG_set0(sig, BN_bin2bn(signature, 32, nil), BN_bin2bn(Array(signature[32...]), 32, nil))
            var der: UnsafeMutablePointer<UInt8>?
            let n = i2d_ECDSA_SIG(sig, &der)
            guard n > 0, let der else { return false }
            defer { CRYPTO_free(der, #file, #line) }
            return digestVerify(key.publicKey!, input, Array(UnsafeBufferPointer(start: der, count: Int(n))))
        default:
            return false
        }
    }

    private static func digestVerify(_ pkey: OpaquePointer, _ input: [UInt8], _ signature: [UInt8]) -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { return false }
        let ok = EVP_DigestVerify(ctx, signature, signature.count, input, input.count) == 1
        ERR_clear_error()
        return ok
    }
}
