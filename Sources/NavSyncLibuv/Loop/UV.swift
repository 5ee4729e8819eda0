import NavSync
import CUV
@preconcurrency import Glibc

/// Small helpers around the libuv C API: casts between handle types, error text,
/// socket addresses.
package enum UV {
    package static func stream<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutablePointer<uv_stream_t>(OpaquePointer(p))
    }

    package static func handle<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_handle_t> {
        UnsafeMutablePointer<uv_handle_t>(OpaquePointer(p))
    }

    package static func error(_ code: Int32) -> String {
        "\(String(cString: uv_err_name(code))): \(String(cString: uv_strerror(code)))"
    }

    /// Resolves a host to an address without blocking the loop: an IP address at once,
    /// a DNS name on libuv's thread pool (`uv_getaddrinfo`). `done` gets the first
    /// address, or why there is none.
    package static func resolve(_ host: String, port: Int, on loop: UnsafeMutablePointer<uv_loop_t>,
                        _ done: @escaping (Result<Address, ResolveFailure>) -> Void) {
        if let address = Address(host: host, port: port) { return done(.success(address)) }
        let req = UnsafeMutablePointer<uv_getaddrinfo_t>.allocate(capacity: 1)
        req.pointee.data = Unmanaged.passRetained(ResolveRequest(done)).toOpaque()
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        let rc = uv_getaddrinfo(loop, req, { req, status, result in
            let box = Unmanaged<ResolveRequest>.fromOpaque(req!.pointee.data).takeRetainedValue()
            req!.deallocate()
            defer { uv_freeaddrinfo(result) }
            guard status == 0, let info = result, let found = info.pointee.ai_addr else {
                return box.done(.failure(ResolveFailure(description: UV.error(status))))
            }
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: found, count: Int(info.pointee.ai_addrlen))) }
            box.done(.success(Address(storage: storage)))
        }, host, String(port), &hints)
        if rc != 0 {
            Unmanaged<ResolveRequest>.fromOpaque(req.pointee.data).release()
            req.deallocate()
            done(.failure(ResolveFailure(description: error(rc))))
        }
    }

    package struct ResolveFailure: Error, CustomStringConvertible { package var description: String }

    private final class ResolveRequest {
        let done: (Result<Address, ResolveFailure>) -> Void
        init(_ done: @escaping (Result<Address, ResolveFailure>) -> Void) { self.done = done }
    }

    /// A listening or peer address, IPv4 or IPv6.
    package struct Address {
        package var storage = sockaddr_storage()

        /// Parses a numeric IPv4 or IPv6 address ("127.0.0.1", "::1", "0.0.0.0").
        package init?(host: String, port: Int) {
            var storage = sockaddr_storage()
            let ok: Bool = withUnsafeMutablePointer(to: &storage) { p in
                if host.contains(":") {
                    return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { uv_ip6_addr(host, Int32(port), $0) == 0 }
                }
                return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { uv_ip4_addr(host, Int32(port), $0) == 0 }
            }
            guard ok else { return nil }
            self.storage = storage
        }

        package init(storage: sockaddr_storage) { self.storage = storage }

        package var isIPv6: Bool { Int32(storage.ss_family) == AF_INET6 }

        package var port: Int {
            var s = storage
            return withUnsafePointer(to: &s) { p in
                isIPv6 ? p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
                       : p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        }

        package var host: String {
            var s = storage
            var buffer = [CChar](repeating: 0, count: 64)
            _ = withUnsafePointer(to: &s) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_ip_name($0, &buffer, buffer.count) }
            }
            return String(nulTerminated: buffer)
        }

        /// `127.0.0.1:7420` or `[::1]:7420`.
        package var description: String { description(host: host) }

        /// The same, with the host already formatted (formatting it is the most of it).
        package func description(host: String) -> String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

        /// The host of a `description`: `127.0.0.1` of `127.0.0.1:50312`, `::1` of `[::1]:50312`.
        package static func host(ofPeer peer: String) -> String {
            guard let colon = peer.lastIndex(of: ":") else { return peer }
            let host = peer[..<colon]
            return String(host.hasPrefix("[") && host.hasSuffix("]") ? host.dropFirst().dropLast() : host)
        }

        package var isLoopback: Bool {
            isIPv6 ? host == "::1" : host.hasPrefix("127.")
        }

        package func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>) -> R) -> R {
            var s = storage
            return withUnsafePointer(to: &s) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        }
    }
}

/// Starts a thread that runs `body` (used to run a server's loop beside a test or an
/// embedding program; the loop then belongs to that thread).
public func startThread(_ body: sending @escaping () -> Void) {
    final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var tid = pthread_t()
    let rc = pthread_create(&tid, nil, { arg in
        let b = Unmanaged<AnyObject>.fromOpaque(arg!).takeRetainedValue() as! Box
        b.body()
        return nil
    }, box)
    precondition(rc == 0, "pthread_create failed: \(rc)")
    pthread_detach(tid)
}

/// The IP addresses of this machine's interfaces (`uv_interface_addresses`), IPv4
/// first; loopback ones only with `includingLoopback`.
public func interfaceAddresses(includingLoopback: Bool = false) -> [String] {
    var list: UnsafeMutablePointer<uv_interface_address_t>?
    var count: Int32 = 0
    guard uv_interface_addresses(&list, &count) == 0, let list else { return [] }
    defer { uv_free_interface_addresses(list, count) }
    var v4: [String] = [], v6: [String] = []
    for i in 0..<Int(count) {
        let item = list[i]
        if item.is_internal != 0 && !includingLoopback { continue }
        var name = [CChar](repeating: 0, count: 64)
        var a = item.address
        if a.address4.sin_family == sa_family_t(AF_INET) {
            uv_ip4_name(&a.address4, &name, name.count)
            v4.append(String(nulTerminated: name))
        } else {
            uv_ip6_name(&a.address6, &name, name.count)
            v6.append(String(nulTerminated: name).split(separator: "%").first.map(String.init) ?? "")
        }
    }
    var seen = Set<String>()
    return (v4 + v6).filter { !$0.isEmpty && seen.insert($0).inserted }
}

extension String {
    /// The text a C call wrote into `buffer`, up to its NUL.
    init(nulTerminated buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
