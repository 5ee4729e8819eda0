import NavSyncLibuv
import Dispatch
@preconcurrency import Glibc
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

/// A server on port 0 running its loop on its own thread, for loopback tests.
struct TestServer {
    let running: Server.Running
    var port: Int { running.port }

    init(_ configure: (inout ServerConfiguration) -> Void = { _ in },
         application: @escaping @Sendable () -> ServerApplication = { EchoApplication() }) throws {
        var config = ServerConfiguration()
        config.port = 0
        config.logLevel = .off
        configure(&config)
        running = try Server.startInBackground(configuration: config, application: application)
    }

    func stop() { running.stop() }

    /// One HTTP exchange on a fresh connection: the whole response text.
    func http(_ request: String) -> String {
        guard let c = try? RawClient(port: port) else { return "" }
        c.send(Array(request.utf8))
        return String(decoding: c.readToEOF(), as: UTF8.self)
    }

    func metric(_ name: String) -> Int? {
        let text = http("GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Int(line.split(separator: " ")[1])
        }
        return nil
    }

    /// Polls until `condition` holds or `seconds` pass.
    func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
        let deadline = Date.monotonic + seconds
        while Date.monotonic < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }
}

enum Date {
    static var monotonic: Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

struct SocketError: Error {}

/// A blocking TCP client that speaks raw bytes, so tests can send exactly the frames
/// they mean, broken ones included. Reads time out after 5 s.
final class RawClient {
    let fd: Int32
    var decoder = WebSocketDecoder(role: .client, maxMessage: 8 << 20)
    var pendingEvents: [WebSocketDecoder.Event] = []
    var leftover: [UInt8] = []

    init(port: Int, timeout: Int = 5, receiveBuffer: Int32? = nil, ipv6: Bool = false) throws {
        fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            // Before connect, so the window is small from the start: a slow reader.
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let rc: Int32
        if ipv6 {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = in_port_t(UInt16(port).bigEndian)
            addr.sin6_addr = in6addr_loopback
            rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        guard rc == 0 else { Glibc.close(fd); throw SocketError() }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    /// Sends everything; false if the connection failed first (EPIPE, reset).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// One recv: nil at EOF, error or timeout.
    func read() -> [UInt8]? {
        if !leftover.isEmpty { defer { leftover = [] }; return leftover }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(buffer[0..<n]) : nil
    }

    func readToEOF() -> [UInt8] {
        var all: [UInt8] = []
        while let chunk = read() { all += chunk }
        return all
    }

    /// Reads an HTTP response head; bytes after it stay for the frame decoder.
    func readHead() -> String {
        var bytes: [UInt8] = []
        while true {
            if let r = bytes.firstRange(of: [13, 10, 13, 10]) {
                leftover = Array(bytes[r.upperBound...])
                return String(decoding: bytes[..<r.lowerBound], as: UTF8.self)
            }
            guard let chunk = read() else { return String(decoding: bytes, as: UTF8.self) }
            bytes += chunk
        }
    }

    /// The WebSocket handshake; returns the response's status line.
    @discardableResult
    func upgrade(path: String = "/ws", extra: String = "") -> String {
        send(Array("GET \(path) HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\(extra)\r\n".utf8))
        return String(readHead().split(separator: "\r\n").first ?? "")
    }

    func sendFrame(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true) {
        send(WebSocketEncoder.frame(opcode, payload, fin: fin, mask: (0x12, 0x34, 0x56, 0x78)))
    }

    /// The next frame event from the server, or nil when the connection ends first.
    func next() -> WebSocketDecoder.Event? {
        while pendingEvents.isEmpty {
            guard let chunk = read() else { return nil }
            let (events, error) = decoder.feed(chunk)
            pendingEvents += events
            if error != nil && pendingEvents.isEmpty { return nil }
        }
        return pendingEvents.removeFirst()
    }

    /// Reads until the server's close frame; returns its code (nil: no close frame).
    func closeCode() -> UInt16?? {
        while let e = next() {
            if case .close(let code, _) = e { return .some(code) }
        }
        return nil
    }

    /// Whether the server closed the TCP connection (recv returns 0) in time.
    func isClosedByPeer() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }
}

extension TestServer {
    /// A session server (demo session ready) on port 0.
    static func sessions(_ configure: @escaping @Sendable (inout HubConfiguration) -> Void = { _ in },
                         lagThreshold: Int = 1 << 20,
                         server: (inout ServerConfiguration) -> Void = { _ in }) throws -> TestServer {
        try TestServer(server) {
            var config = HubConfiguration()
            configure(&config)
            let hub = Hub(configuration: config, flows: [], ids: .counting(epoch: RandomIDs.hex(4) + "-"))
            return SessionServer(hub: hub, lagThreshold: lagThreshold)
        }
    }
}

extension RawClient {
    func sendJSON(_ message: JSON) { sendFrame(.text, message.encoded()) }

    /// The next text message as JSON (nil at close or timeout).
    func nextJSON() -> JSON? {
        while let event = next() {
            if case .text(let bytes) = event { return try? JSON.parse(bytes) }
            if case .close = event { return nil }
        }
        return nil
    }

    /// Reads messages until one of the given type.
    func next(type: String) -> JSON? {
        while let m = nextJSON() { if m["type"] == .string(type) { return m } }
        return nil
    }

    /// A connected, joined client.
    static func member(_ server: TestServer, session: String = "demo", receiveBuffer: Int32? = nil) throws -> (RawClient, JSON) {
        let c = try RawClient(port: server.port, receiveBuffer: receiveBuffer)
        c.upgrade(extra: "Sec-WebSocket-Protocol: navsync.v1\r\n")
        c.sendJSON(["type": "join", "session": .string(session)])
        return (c, c.next(type: "joined") ?? nil)
    }
}

extension RawClient {
    /// The text messages that can be read without waiting.
    func availableJSON() -> [JSON] {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard n > 0 else { break }
            pendingEvents += decoder.feed(Array(buffer[0..<n])).events
        }
        defer { pendingEvents = [] }
        return pendingEvents.compactMap { if case .text(let b) = $0 { return try? JSON.parse(b) } else { return nil } }
    }
}

/// Runs a client loop on a thread of its own, as an app's would: `setUp` makes the
/// clients on the loop's thread and returns what must stay alive; the loop runs until a
/// client calls `loop.stop()` or `timeout` ms pass. Returns whether it stopped in time.
@discardableResult
func runClientLoop(timeout: Int64 = 5_000, _ setUp: @escaping @Sendable (ClientLoop) -> Any) -> Bool {
    let done = DispatchSemaphore(value: 0)
    final class Flag: @unchecked Sendable { var timedOut = false }
    let flag = Flag()
    startThread {
        let loop = ClientLoop()
        let kept = setUp(loop)
        let guardTimer = loop.after(timeout) {
            flag.timedOut = true
            loop.stop()
        }
        withExtendedLifetime(kept) { loop.run() }
        guardTimer.cancel()
        loop.shutdown()
        done.signal()
    }
    return done.wait(timeout: .now() + .milliseconds(Int(timeout) + 5_000)) == .success && !flag.timedOut
}
