import NavSyncLibuv
import CCurl
import CUV
@preconcurrency import Glibc

/// Outgoing HTTP on the libuv loop, through libcurl's multi-socket interface (the shape
/// of curl's `docs/examples/multi-uv.c`): curl says which sockets to watch
/// (`CURLMOPT_SOCKETFUNCTION`, one `uv_poll_t` each) and when to wake it
/// (`CURLMOPT_TIMERFUNCTION`, one `uv_timer_t`); the loop calls
/// `curl_multi_socket_action` and `curl_multi_info_read` reports finished transfers.
/// TLS (system CAs, `caFile`), keep-alive, timeouts, proxies from the environment
/// (`https_proxy`, `no_proxy`) and threaded name resolution are curl's: nothing here
/// blocks the loop. One client per loop; all calls on the loop's thread.
public final class HTTPClient {
    struct Response: Sendable {
        var status: Int
        var body: [UInt8]
    }

    /// Why a request got no response: curl's error (a timeout, a refused connection, a
    /// TLS failure…) or a body past `maxBody`.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let loop: UnsafeMutablePointer<uv_loop_t>
    private let multi: UnsafeMutableRawPointer
    private let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    /// An extra CA (PEM) for `https://`, beside the system's.
    let caFile: String?
    /// Transfers in flight, by the number curl keeps as their private pointer.
    private var transfers: [Int: Transfer] = [:]
    private var nextTransfer = 0
    private var closed = false

    /// Requests in flight.
    var inFlight: Int { transfers.count }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// libcurl's global setup, which must run before any other thread starts: navsyncd
    /// calls it first thing (a client made later finds it done).
    public static func setUp() { _ = globalInit }

    init(loop: UnsafeMutablePointer<uv_loop_t>, caFile: String? = nil) {
        _ = Self.globalInit
        self.loop = loop
        self.caFile = caFile
        multi = curl_multi_init()
        uv_timer_init(loop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let me = Unmanaged.passUnretained(self).toOpaque()
        navsync_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, me)
        navsync_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, me)
        navsync_multi_socket_function(multi) { _, fd, what, userp, socketp in
            Unmanaged<HTTPClient>.fromOpaque(userp!).takeUnretainedValue().watch(fd, what: what, poll: socketp)
            return 0
        }
        navsync_multi_timer_function(multi) { _, ms, userp in
            let client = Unmanaged<HTTPClient>.fromOpaque(userp!).takeUnretainedValue()
            if ms < 0 { uv_timer_stop(client.timer) } else {
                uv_timer_start(client.timer, { t in
                    Unmanaged<HTTPClient>.fromOpaque(t!.pointee.data).takeUnretainedValue().act(CURL_SOCKET_TIMEOUT, 0)
                }, UInt64(ms), 0)
            }
            return 0
        }
    }

    /// A transfer: the easy handle and what it must keep alive until it ends.
    private final class Transfer {
        let easy: UnsafeMutableRawPointer
        let body: UnsafeMutableBufferPointer<UInt8>
        var headers: UnsafeMutablePointer<curl_slist>?
        var received: [UInt8] = []
        let maxBody: Int
        var tooLarge = false
        let done: (Result<Response, Failure>) -> Void

        init(easy: UnsafeMutableRawPointer, body: [UInt8], maxBody: Int, done: @escaping (Result<Response, Failure>) -> Void) {
            self.easy = easy
            self.body = .allocate(capacity: max(body.count, 1))
            _ = self.body.initialize(from: body)
            self.maxBody = maxBody
            self.done = done
        }

        deinit {
            body.deallocate()
            curl_slist_free_all(headers)
        }
    }

    /// POSTs `body` to `url` with `headers` ("Name: value"); `done` is called on the loop
    /// once, with the status and body of any answer, or why there is none.
    func post(_ url: String, headers: [String], body: [UInt8], timeoutMS: Int, maxBody: Int = 1 << 20,
              done: @escaping (Result<Response, Failure>) -> Void) {
        guard !closed, let easy = curl_easy_init() else { return done(.failure(Failure(description: "the HTTP client is closed"))) }
        let t = Transfer(easy: easy, body: body, maxBody: maxBody, done: done)
        nextTransfer += 1
        let key = nextTransfer
        transfers[key] = t
        navsync_easy_setopt_string(easy, CURLOPT_URL, url)
        navsync_easy_setopt_long(easy, CURLOPT_POST, 1)
        navsync_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(t.body.baseAddress!))
        navsync_easy_setopt_long(easy, CURLOPT_POSTFIELDSIZE, body.count)
        navsync_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutMS)
        navsync_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, timeoutMS)
        navsync_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        // Only the endpoint configured answers: redirects are not followed.
        navsync_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        // The extra CA beside the system's (OpenSSL takes the file and the directory both).
        if let caFile {
            navsync_easy_setopt_string(easy, CURLOPT_CAINFO, caFile)
            navsync_easy_setopt_string(easy, CURLOPT_CAPATH, "/etc/ssl/certs")
        }
        navsync_easy_setopt_string(easy, CURLOPT_USERAGENT, "navsyncd")
        for h in headers + ["Expect:"] { t.headers = curl_slist_append(t.headers, h) }
        navsync_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(t.headers))
        navsync_easy_setopt_pointer(easy, CURLOPT_PRIVATE, UnsafeMutableRawPointer(bitPattern: key))
        navsync_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, Unmanaged.passUnretained(t).toOpaque())
        navsync_easy_setopt_write(easy) { data, size, count, userp in
            let t = Unmanaged<Transfer>.fromOpaque(userp!).takeUnretainedValue()
            let n = size * count
            guard t.received.count + n <= t.maxBody else {
                t.tooLarge = true
                return 0   // curl ends the transfer (CURLE_WRITE_ERROR)
            }
            data!.withMemoryRebound(to: UInt8.self, capacity: n) { t.received.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
            return n
        }
        let rc = curl_multi_add_handle(multi, easy)
        if rc != CURLM_OK {
            transfers[key] = nil
            curl_easy_cleanup(easy)
            done(.failure(Failure(description: String(cString: curl_multi_strerror(rc)))))
        }
    }

    /// curl wants this socket watched for `what` (or no longer).
    private func watch(_ fd: curl_socket_t, what: Int32, poll existing: UnsafeMutableRawPointer?) {
        if what == CURL_POLL_REMOVE {
            guard let existing else { return }
            let poll = existing.assumingMemoryBound(to: uv_poll_t.self)
            uv_poll_stop(poll)
            curl_multi_assign(multi, fd, nil)
            uv_close(UV.handle(poll)) { h in h!.deallocate() }
            return
        }
        let poll: UnsafeMutablePointer<uv_poll_t>
        if let existing { poll = existing.assumingMemoryBound(to: uv_poll_t.self) } else {
            poll = .allocate(capacity: 1)
            uv_poll_init_socket(loop, poll, fd)
            poll.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            curl_multi_assign(multi, fd, UnsafeMutableRawPointer(poll))
        }
        var events: Int32 = 0
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { events |= Int32(UV_READABLE.rawValue) }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { events |= Int32(UV_WRITABLE.rawValue) }
        uv_poll_start(poll, events) { p, status, events in
            let client = Unmanaged<HTTPClient>.fromOpaque(p!.pointee.data).takeUnretainedValue()
            var flags: Int32 = 0
            if status < 0 { flags = CURL_CSELECT_ERR } else {
                if events & Int32(UV_READABLE.rawValue) != 0 { flags |= CURL_CSELECT_IN }
                if events & Int32(UV_WRITABLE.rawValue) != 0 { flags |= CURL_CSELECT_OUT }
            }
            var fd: uv_os_fd_t = -1
            uv_fileno(UV.handle(p!), &fd)
            client.act(fd, flags)
        }
    }

    /// Lets curl work on a socket (or its timeout), then hands out finished transfers.
    private func act(_ fd: curl_socket_t, _ flags: Int32) {
        var running: Int32 = 0
        curl_multi_socket_action(multi, fd, flags, &running)
        finish()
    }

    private func finish() {
        var left: Int32 = 0
        while let msg = curl_multi_info_read(multi, &left) {
            guard msg.pointee.msg == CURLMSG_DONE, let easy = msg.pointee.easy_handle else { continue }
            let result = navsync_msg_result(msg)
            var keyPointer: UnsafeMutableRawPointer?
            navsync_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &keyPointer)
            var status = 0
            navsync_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            curl_multi_remove_handle(multi, easy)
            curl_easy_cleanup(easy)
            let key = Int(bitPattern: keyPointer)
            guard let t = transfers.removeValue(forKey: key) else { continue }
            if t.tooLarge {
                t.done(.failure(Failure(description: "the answer is over \(t.maxBody) bytes")))
            } else if result != CURLE_OK {
                t.done(.failure(Failure(description: String(cString: curl_easy_strerror(result)))))
            } else {
                t.done(.success(Response(status: status, body: t.received)))
            }
        }
    }

    /// Ends every transfer (without calling their `done`) and closes the handles.
    func close() {
        guard !closed else { return }
        closed = true
        for (_, t) in transfers {
            curl_multi_remove_handle(multi, t.easy)
            curl_easy_cleanup(t.easy)
        }
        transfers = [:]
        curl_multi_cleanup(multi)
        uv_timer_stop(timer)
        uv_close(UV.handle(timer)) { h in h!.deallocate() }
    }
}
