import CSSL

/// TLS on one connection, driven by the caller's own I/O: OpenSSL reads ciphertext
/// from one memory BIO and writes to another, never to the socket (no blocking, no
/// thread). The caller feeds what the socket read (`receive`), hands plaintext to
/// `write`, and sends what `takeOutput` gives: handshake messages, records, alerts.
///
/// OpenSSL's error queue belongs to the thread, and every connection of a loop shares
/// it: `SSL_get_error` reads it first, so an error one connection left there (a write
/// after its own close_notify: "protocol is shutdown") made another connection's next
/// read fail. Each call here starts with the queue empty and leaves it empty.
package final class TLSStream {
    private let ssl: OpaquePointer
    private let input: OpaquePointer
    private let output: OpaquePointer
    /// The handshake finished: application data flows.
    private(set) var isEstablished = false
    /// The owner's output sealed into records: what its socket gets. Here, not in every
    /// connection: one without TLS holds no second queue.
    package var sealed = OutputQueue()

    package enum Failure: Error, CustomStringConvertible {
        /// The peer spoke plain HTTP to the TLS port.
        case plainHTTP
        /// A broken or refused handshake, a bad record, a failed certificate check.
        case failed(String)
        /// The peer ended TLS (close_notify).
        case closed

        package var description: String {
            switch self {
            case .plainHTTP: "plain HTTP on the TLS port"
            case .failed(let why): "TLS: \(why)"
            case .closed: "TLS closed by the peer"
            }
        }
    }

    /// A server's side, or a client's that checks the certificate names `host` (a DNS
    /// name, sent as SNI too, or an IP address).
    package init(context: TLSContext, host: String? = nil) {
        ssl = SSL_new(context.ctx)
        input = BIO_new(BIO_s_mem())
        output = BIO_new(BIO_s_mem())
        navsync_bio_set_eof_is_retry(input)
        navsync_bio_set_eof_is_retry(output)
        SSL_set_bio(ssl, input, output)   // the SSL owns both BIOs now
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let host {
                let param = SSL_get0_param(ssl)
                if X509_VERIFY_PARAM_set1_ip_asc(param, host) != 1 {
                    _ = navsync_ssl_set_server_name(ssl, host)
                    SSL_set1_host(ssl, host)
                }
                ERR_clear_error()
            }
        }
    }

    deinit { SSL_free(ssl) }

    /// Starts a client's handshake (its ClientHello is then in the output).
    package func start() { _ = try? step() }

    /// Ciphertext from the socket in; the plaintext it completes appended to `plain`.
    /// Handshake replies wait in the output.
    package func receive(_ bytes: UnsafeRawBufferPointer, into plain: inout [UInt8]) throws(Failure) {
        guard bytes.count > 0 else { return }
        _ = BIO_write(input, bytes.baseAddress, Int32(bytes.count))
        if !isEstablished {
            try step()
            guard isEstablished else { return }
        }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            ERR_clear_error()
            let n = chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n > 0 {
                plain.append(contentsOf: chunk[0..<Int(n)])
                continue
            }
            switch SSL_get_error(ssl, n) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return
            case SSL_ERROR_ZERO_RETURN:
                ERR_clear_error()
                throw .closed
            default: throw .failed(Self.reason(ssl: ssl, rc: n))
            }
        }
    }

    /// Drives the handshake; throws when it failed.
    @discardableResult
    private func step() throws(Failure) -> Bool {
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            isEstablished = true
            return true
        }
        let e = SSL_get_error(ssl, rc)
        if e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE { return false }
        if e == SSL_ERROR_SSL, navsync_reason(ERR_peek_error()) == SSL_R_HTTP_REQUEST {
            ERR_clear_error()
            throw .plainHTTP
        }
        throw .failed(Self.reason(ssl: ssl, rc: rc))
    }

    /// Why a call failed, from this connection's errors (the queue is drained).
    private static func reason(ssl: OpaquePointer, rc: Int32) -> String {
        let verify = SSL_get_verify_result(ssl)
        let code = SSL_get_error(ssl, rc)
        let queued = OpenSSL.errors()
        if verify != X509_V_OK {
            return "certificate verify failed: " + String(cString: X509_verify_cert_error_string(verify))
        }
        return queued.isEmpty ? "handshake failed (error \(code))" : String(queued.dropFirst(2))
    }

    /// Plaintext out: sealed into records in the output (the handshake must be done).
    /// Nothing is sealed once this side sent its close_notify (OpenSSL would refuse it
    /// with an error in the thread's queue).
    package func write(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0, isEstablished, !isShutDown else { return }
        ERR_clear_error()
        _ = SSL_write(ssl, bytes.baseAddress, Int32(bytes.count))   // a memory BIO takes it all
        ERR_clear_error()
    }

    /// This side sent its close_notify.
    private(set) var isShutDown = false

    /// Ends TLS politely: a close_notify alert in the output, after every record
    /// written before it.
    package func shutdown() {
        guard isEstablished, !isShutDown else { return }
        isShutDown = true
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    package var hasOutput: Bool { navsync_bio_pending(output) > 0 }

    /// What is to be sent, taken out.
    package func takeOutput() -> [UInt8] {
        let n = Int(navsync_bio_pending(output))
        guard n > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: n) { buffer, count in
            count = Int(max(0, BIO_read(output, buffer.baseAddress, Int32(n))))
        }
    }
}
