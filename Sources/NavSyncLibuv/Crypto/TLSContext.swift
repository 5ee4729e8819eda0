import CSSL
@preconcurrency import Glibc

public struct TLSError: Error, CustomStringConvertible {
    public var description: String
    package init(_ what: String) { description = what + OpenSSL.errors() }
}

/// One side's TLS settings (OpenSSL's `SSL_CTX`): the server's certificate and key, or
/// what a client trusts. TLS 1.2 and 1.3 only. Immutable once made: a reload makes a
/// new one, and connections already open keep the one they started with (each `SSL`
/// holds a reference to its context).
public final class TLSContext: @unchecked Sendable {
    package let ctx: OpaquePointer
    public let isServer: Bool
    /// `--tls-cert` and `--tls-key` (nil for a certificate made in memory): what a
    /// reload reads again.
    public let files: (certificate: String, key: String)?

    package init(server: Bool, files: (String, String)? = nil) throws(TLSError) {
        guard let ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else {
            throw TLSError("cannot make a TLS context")
        }
        self.ctx = ctx
        isServer = server
        self.files = files
        navsync_ssl_ctx_tls12_or_later(ctx)
        // An idle connection frees its read and write buffers (some 34 KiB each):
        // thousands of mostly idle members are the usual case here.
        _ = navsync_ssl_ctx_set_mode(ctx, Int(SSL_MODE_RELEASE_BUFFERS))
        navsync_ssl_ctx_no_renegotiation(ctx)
    }

    deinit { SSL_CTX_free(ctx) }

    /// A server's context from PEM files: the certificate (a chain allowed, leaf first)
    /// and its private key, checked to match.
    public static func server(certificate: String, key: String) throws(TLSError) -> TLSContext {
        try OpenSSL.readable(certificate, "the certificate")
        try OpenSSL.readable(key, "the private key")
        let context = try TLSContext(server: true, files: (certificate, key))
        guard SSL_CTX_use_certificate_chain_file(context.ctx, certificate) == 1 else {
            throw TLSError("cannot load the certificate \(certificate)")
        }
        guard SSL_CTX_use_PrivateKey_file(context.ctx, key, SSL_FILETYPE_PEM) == 1 else {
            // OpenSSL checks the pair as it loads the key.
            if navsync_reason(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH {
                ERR_clear_error()
                throw TLSError("the key \(key) does not match the certificate \(certificate)")
            }
            throw TLSError("cannot load the private key \(key)")
        }
        guard SSL_CTX_check_private_key(context.ctx) == 1 else {
            throw TLSError("the key \(key) does not match the certificate \(certificate)")
        }
        return context
    }

    /// The same files read again (SIGHUP), or why they do not load.
    public func reloaded() throws(TLSError) -> TLSContext {
        guard let files else { return self }
        return try .server(certificate: files.certificate, key: files.key)
    }

    /// A client's context: the server's certificate is verified against `caFile` (PEM,
    /// curl's `--cacert`) or else the system's CAs, and its name is checked per
    /// connection. `certificate` and `key`: a client certificate, for servers that ask.
    public static func client(caFile: String? = nil, certificate: String? = nil, key: String? = nil) throws(TLSError) -> TLSContext {
        let context = try TLSContext(server: false)
        if let certificate, let key {
            try OpenSSL.readable(certificate, "the client certificate")
            try OpenSSL.readable(key, "the client key")
            guard SSL_CTX_use_certificate_chain_file(context.ctx, certificate) == 1 else {
                throw TLSError("cannot load the client certificate \(certificate)")
            }
            guard SSL_CTX_use_PrivateKey_file(context.ctx, key, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(context.ctx) == 1 else {
                throw TLSError("cannot load the client key \(key), or it does not match \(certificate)")
            }
        }
        SSL_CTX_set_verify(context.ctx, SSL_VERIFY_PEER, nil)
        if let caFile {
            try OpenSSL.readable(caFile, "the CA file")
            guard SSL_CTX_load_verify_locations(context.ctx, caFile, nil) == 1 else {
                throw TLSError("cannot load the CA file \(caFile)")
            }
        } else if SSL_CTX_set_default_verify_paths(context.ctx) != 1 {
            throw TLSError("cannot load the system's CA certificates")
        }
        return context
    }
}

package enum OpenSSL {
    /// A file OpenSSL is about to read, checked first: OpenSSL itself only says
    /// "error 2147483650; system lib" for a file that is missing or unreadable.
    package static func readable(_ path: String, _ what: String) throws(TLSError) {
        guard access(path, R_OK) != 0 else { return }
        let why = String(cString: strerror(errno))
        ERR_clear_error()
        throw TLSError("cannot read \(what) \(path): \(why)")
    }

    /// OpenSSL's queued errors as text (": reason; reason"), the queue emptied.
    package static func errors() -> String {
        var reasons: [String] = []
        while case let e = ERR_get_error(), e != 0 {
            if let text = ERR_reason_error_string(e) { reasons.append(String(cString: text)) } else { reasons.append("error \(e)") }
        }
        return reasons.isEmpty ? "" : ": " + reasons.joined(separator: "; ")
    }
}
