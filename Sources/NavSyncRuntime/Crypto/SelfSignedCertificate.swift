import NavSyncLibuv
import CSSL
@preconcurrency import Glibc

/// A certificate made for one run (`--tls-self-signed`): an ECDSA P-256 key and a
/// certificate for `localhost` and the given addresses, valid 30 days. Clients trust
/// it by its PEM file (`--cacert`) or by the SHA-256 fingerprint printed at start.
public final class SelfSignedCertificate: @unchecked Sendable {
    let x509: OpaquePointer
    let key: OpaquePointer

    public init(names: [String], addresses: [String]) throws(TLSError) {
        guard let key = navsync_ec_p256_key() else { throw TLSError("cannot make a P-256 key") }
        guard let x509 = X509_new() else {
            EVP_PKEY_free(key)
            throw TLSError("cannot make a certificate")
        }
        self.key = key
        self.x509 = x509
        X509_set_version(x509, 2)
        var serial = [UInt8](repeating: 0, count: 16)
        _ = RAND_bytes(&serial, 16)
        serial[0] &= 0x7F
        let bn = BN_bin2bn(serial, 16, nil)
        BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x509))
        BN_free(bn)
        X509_gmtime_adj(X509_getm_notBefore(x509), -60)
        X509_gmtime_adj(X509_getm_notAfter(x509), 30 * 86_400)
        X509_set_pubkey(x509, key)
        let name = X509_get_subject_name(x509)
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, "navsyncd", -1, -1, 0)
        X509_set_issuer_name(x509, name)
        let alt = (["localhost"] + names).map { "DNS:\($0)" } + addresses.map { "IP:\($0)" }
        guard navsync_x509_add_ext(x509, NID_subject_alt_name, alt.joined(separator: ",")) == 1,
              navsync_x509_add_ext(x509, NID_basic_constraints, "critical,CA:FALSE") == 1,
              navsync_x509_add_ext(x509, NID_ext_key_usage, "serverAuth") == 1,
              X509_sign(x509, key, EVP_sha256()) > 0 else {
            throw TLSError("cannot sign the certificate")
        }
    }

    deinit {
        X509_free(x509)
        EVP_PKEY_free(key)
    }

    /// The certificate in PEM, for clients to trust (`--cacert`).
    public var pem: String {
        let bio = BIO_new(BIO_s_mem())
        defer { BIO_free(bio) }
        PEM_write_bio_X509(bio, x509)
        var data: UnsafeMutablePointer<CChar>?
        let n = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data)
        guard let data, n > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
    }

    /// Writes the certificate (not the key, which stays in memory) to a new private
    /// directory under $TMPDIR, and returns the file's path.
    public func save() throws(TLSError) -> String {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/navsyncd-tls-XXXXXX".utf8CString)
        guard let dir = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TLSError("cannot make a directory in \(base)")
        }
        let path = String(cString: dir) + "/cert.pem"
        let bytes = Array(pem.utf8)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard fd >= 0, bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            if fd >= 0 { close(fd) }
            throw TLSError("cannot write \(path)")
        }
        close(fd)
        return path
    }

    /// `AB:CD:…`, the SHA-256 of the certificate (what browsers show).
    public var fingerprint: String {
        var md = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        X509_digest(x509, EVP_sha256(), &md, &length)
        return md.prefix(Int(length)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: ":")
    }
}

extension TLSContext {
    /// A server's context for a certificate made in memory (`SelfSignedCertificate`).
    public static func server(_ made: SelfSignedCertificate) throws(TLSError) -> TLSContext {
        let context = try TLSContext(server: true)
        guard SSL_CTX_use_certificate(context.ctx, made.x509) == 1, SSL_CTX_use_PrivateKey(context.ctx, made.key) == 1 else {
            throw TLSError("cannot use the self-signed certificate")
        }
        return context
    }
}
