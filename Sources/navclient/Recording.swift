// navclient log and navclient replay: a session's recording (docs/protocol.md, "History") to
// standard output, and a recording sent again, in order, onto a session of any server.
import Foundation
import NavSync
import NavSyncLibuv

enum Recording {
    /// `navclient log`: `GET /api/sessions/NAME/log[?from=R]` to standard output.
    static func log(_ o: ClientOptions, from: Int?) -> Int32 {
        let target = "/api/sessions/\(o.session)/log" + (from.map { "?from=\($0)" } ?? "")
        if let tls = o.urls.first(where: \.secure) {
            let https = "https://\(tls.host):\(tls.port)\(target)"
            Stderr.line("navclient log reads over plain HTTP only; for a TLS server: curl --cacert FILE -H 'Authorization: Bearer TOKEN' \(https)")
            return Exit.usage
        }
        // With several servers, the first that answers.
        guard let (status, body) = o.urls.lazy.compactMap({ httpGet(host: $0.host, port: $0.port, target: target, token: o.token) }).first else {
            Stderr.line("navclient log: no server answers at \(o.urls.map { "\($0.host):\($0.port)" }.joined(separator: ", "))")
            return Exit.unreachable
        }
        guard status == 200 else {
            let message = (try? JSON.parse(body))?["message"]?.stringValue ?? String(decoding: body, as: UTF8.self)
            Stderr.line("navclient log: \(status): \(message)")
            return status == 404 ? Exit.unreachable : Exit.commandFailed
        }
        FileHandle.standardOutput.write(Data(body))
        return Exit.ok
    }

    /// One blocking HTTP/1.1 GET (the answer closes the connection): status and body.
    static func httpGet(host: String, port: Int, target: String, token: String?) -> (Int, [UInt8])? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { return nil }
        var request = "GET \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        if let token { request += "Authorization: Bearer \(token)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == bytes.count else { return nil }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            response.append(contentsOf: chunk[0..<n])
        }
        guard let end = response.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: response[..<end.lowerBound], as: UTF8.self)
        guard let status = head.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        return (status, Array(response[end.upperBound...]))
    }

    /// `navclient replay FILE`: creates (or joins) the session, `load`s the recording's
    /// state and id counter, then sends each recorded command in order (a `restore` as
    /// a `load` of the state it carries), paced by the recorded times divided by
    /// `speed` (0: no pause), or one per Enter with `step`. With `verify`, each
    /// revision's result must equal the recording's patch applied to the state before
    /// it; the first that differs is named and ends the replay with status 1.
    static func replay(_ o: ClientOptions, file: String, sessionGiven: Bool, speed: Double, step: Bool, verify: Bool) -> Int32 {
        guard let bytes = FileSystem.read(file) else {
            Stderr.line("navclient replay: cannot read \(file)")
            return Exit.usage
        }
        var lines: [JSON] = []
        for (i, line) in bytes.split(separator: 0x0A).enumerated() where !line.isEmpty {
            guard let json = try? JSON.parse(Array(line)) else {
                Stderr.line("navclient replay: \(file):\(i + 1): not a JSON line")
                return Exit.usage
            }
            lines.append(json)
        }
        guard let header = lines.first, header["format"] == "navsync-log/1", let state = header["state"], let nextID = header["nextId"],
              let flow = header["flow"]?["name"]?.stringValue else {
            Stderr.line("navclient replay: \(file) is not a navsync recording (its first line must have format navsync-log/1, flow, state, nextId)")
            return Exit.usage
        }
        var options = o
        if !sessionGiven, let name = header["session"]?.stringValue { options.session = name }
        options.create = true
        options.flow = flow
        final class Outcome: @unchecked Sendable { var code = Exit.ok }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        Task {
            outcome.code = await run(options, header: header, state: state, nextID: nextID, lines: Array(lines.dropFirst()),
                                     speed: speed, step: step, verify: verify)
            done.signal()
        }
        done.wait()
        return outcome.code
    }

    private static func run(_ o: ClientOptions, header: JSON, state: JSON, nextID: JSON, lines: [JSON],
                            speed: Double, step: Bool, verify: Bool) async -> Int32 {
        let client = SessionClient.running(o.sessionOptions(reconnect: false))
        defer { Task { await client.close() } }
        var expected = state
        do {
            _ = try await client.send([["op": "load", "state": state, "nextId": nextID]])
        } catch {
            Stderr.line("navclient replay: the recording's state was refused: \(describe(error))")
            return error.code == .unknownSession || error.code == .forbidden ? Exit.unreachable : Exit.commandFailed
        }
        var previousTS = lines.first?["ts"]?.intValue
        let started = ContinuousClock.now
        for (i, line) in lines.enumerated() {
            let rev = line["rev"]?.intValue ?? Int64(i + 1)
            if step {
                Stderr.line("revision \(rev): \(CommandLanguage.describe(historyEntry: line)) (Enter sends it)")
                _ = readLine()
            } else if speed > 0, let ts = line["ts"]?.intValue, let before = previousTS, ts > before {
                try? await Task.sleep(for: .milliseconds(Double(ts - before) / speed))
            }
            previousTS = line["ts"]?.intValue ?? previousTS
            var ops = line["ops"]?.arrayValue ?? []
            if let carried = line["state"] { ops = [["op": "load", "state": carried]] }
            var sent: Ack?
            while sent == nil {
                do {
                    sent = try await client.send(ops)
                } catch where error.code == .rateLimited {
                    // The server's --rate: wait for the bucket to refill, then send it again.
                    try? await Task.sleep(for: .milliseconds(100))
                } catch {
                    Stderr.line("navclient replay: revision \(rev) of the recording was refused: \(describe(error))")
                    return Exit.commandFailed
                }
            }
            let ack = sent!
            guard verify else { continue }
            do {
                let patch = try (line["patch"]?.arrayValue ?? []).map { try PatchOperation(json: $0) }
                expected = try expected.applying(patch)
            } catch {
                Stderr.line("navclient replay: revision \(rev): the recording's patch does not apply to the revision before it: \(error)")
                return Exit.commandFailed
            }
            let now = (try? await client.state(at: ack.rev)) ?? .null
            if now != expected {
                Stderr.line("navclient replay: revision \(rev) differs from the recording (the state after it is not the recorded patch applied)")
                return Exit.commandFailed
            }
        }
        let seconds = Double((ContinuousClock.now - started).components.attoseconds) / 1e18 + Double((ContinuousClock.now - started).components.seconds)
        Stderr.line("navclient replay: \(lines.count) revisions replayed onto '\(o.session)'\(verify ? ", each equal to the recording" : "") in \(String(format: "%.2f", seconds)) s (\(Int(Double(lines.count) / max(seconds, 0.001))) commands/s)")
        return Exit.ok
    }
}
