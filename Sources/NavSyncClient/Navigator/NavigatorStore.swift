import Foundation
import NavSync

/// Where a navigator keeps its session between launches (docs/swift.md, "Three states: confirmed, pending, shown"):
/// the confirmed state, the flow, the epoch and the pending commands, so an app
/// launched without a network opens on its last state and navigates.
public protocol NavigatorStore: Sendable {
    /// The session as last saved for this server, or nil.
    func load(session: String, server: WebSocketURL) -> SavedSession?
    /// Keeps the session (replacing what was kept).
    func save(_ saved: SavedSession, server: WebSocketURL)
    /// Forgets the session (the server says it does not exist).
    func remove(session: String, server: WebSocketURL)
}

extension NavigatorStore {
    /// A store that cannot forget keeps the session; the next launch is refused again.
    public func remove(session: String, server: WebSocketURL) {}
}

/// A file per server and session, written whole and atomically (a crash leaves the
/// old file or the new one, never half of one).
public struct FileStore: NavigatorStore {
    /// The folder the files are in (made when first written).
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    /// `navsync` in the app's Application Support folder (on Linux, the XDG data folder).
    public static var standard: FileStore {
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSTemporaryDirectory())
        return FileStore(directory: base.appendingPathComponent("navsync", isDirectory: true))
    }

    /// The file of one server's session: its name made of safe characters only.
    public func file(session: String, server: WebSocketURL) -> URL {
        let raw = "\(server.secure ? "wss" : "ws")_\(server.host)_\(server.port)_\(session)"
        let safe = String(raw.unicodeScalars.map { scalar -> Character in
            let c = Character(scalar)
            return c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "." || c == "_") ? c : "_"
        })
        return directory.appendingPathComponent(safe + ".json")
    }

    public func load(session: String, server: WebSocketURL) -> SavedSession? {
        guard let data = try? Data(contentsOf: file(session: session, server: server)),
              let json = try? JSON.parse(Array(data), depthLimit: JSON.writtenDepth) else { return nil }
        return SavedSession(json: json)
    }

    public func save(_ saved: SavedSession, server: WebSocketURL) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(saved.json.encoded()).write(to: file(session: saved.session, server: server), options: .atomic)
        } catch {
            // Keeping the session is a convenience: a full disk must not stop navigation.
        }
    }

    public func remove(session: String, server: WebSocketURL) {
        try? FileManager.default.removeItem(at: file(session: session, server: server))
    }
}

/// A store in memory, for tests and previews: what a relaunch would read back.
public final class MemoryStore: NavigatorStore, @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [String: SavedSession] = [:]

    public init() {}

    private func key(_ session: String, _ server: WebSocketURL) -> String { "\(server)|\(session)" }

    public func load(session: String, server: WebSocketURL) -> SavedSession? {
        lock.withLock { kept[key(session, server)] }
    }

    public func save(_ saved: SavedSession, server: WebSocketURL) {
        lock.withLock { kept[key(saved.session, server)] = saved }
    }

    public func remove(session: String, server: WebSocketURL) {
        lock.withLock { kept[key(session, server)] = nil }
    }
}
