/// The acks of at least the last `capacity` commands of each client identity (
/// docs/protocol.md, "Operations"): a command id seen again gets its original ack instead of running twice.
public struct IdempotencyTable: Sendable {
    /// Acks remembered per client identity: at least the last `capacity`, at most twice
    /// that; the oldest are forgotten first. 1024 covers far more commands than a client
    /// has in flight across a reconnect.
    public let capacity: Int
    /// Each client identity's acks, found by name through `index`. The identity of the
    /// last command is kept at hand: commands come in runs from one sender, and a string
    /// compare is cheaper than hashing the name twice per command.
    private var clients: [ClientAcks] = []
    private var index: [String: Int] = [:]
    private var last: (client: String, at: Int)?

    private func position(of client: String) -> Int? {
        if let last, last.client == client { return last.at }
        return index[client]
    }

    /// One client's acks in two generations: new ones go to `current`; when it holds
    /// `capacity`, it becomes `previous` and the old `previous` is forgotten whole. So
    /// the last `capacity` to `2 × capacity` acks are remembered, and none is ever
    /// deleted one by one (a dictionary delete rehashes the entries after it: it was
    /// the costliest step of a command's bookkeeping).
    struct ClientAcks {
        var current = Generation()
        var previous = Generation()
        /// The largest integer id ever remembered: clients mostly number their commands
        /// upwards, and an integer id above it cannot be in either generation, so the
        /// lookup every new command makes needs no hashing.
        var largestInt = Int64.min

        /// Acks in acknowledgement order, found by id: an integer id above every one
        /// before it (the common case) by binary search in `rising`, any other id
        /// through `index`, so most commands insert no ack into a hash table (a
        /// noticeable share of a push/pop command's time).
        struct Generation {
            var acks: [Entry] = []
            /// Rising integer ids and where their acks are.
            var rising: [(id: Int64, at: Int)] = []
            var index: [CommandID: Int] = [:]

            func position(of id: CommandID) -> Int? {
                if case .int(let n) = id, let last = rising.last, n <= last.id, n >= rising[0].id {
                    var low = 0, high = rising.count - 1
                    while low <= high {
                        let mid = (low + high) / 2
                        if rising[mid].id == n { return rising[mid].at }
                        if rising[mid].id < n { low = mid + 1 } else { high = mid - 1 }
                    }
                }
                return index.isEmpty ? nil : index[id]
            }

            subscript(id: CommandID) -> Entry? { position(of: id).map { acks[$0] } }

            mutating func reserve(_ capacity: Int) {
                acks.reserveCapacity(capacity)
                rising.reserveCapacity(capacity)
            }
        }

        mutating func remember(_ entry: consuming Entry, capacity: Int) {
            let id = entry.ack.id
            if case .int(let n) = id, n > largestInt {
                largestInt = n
                current.rising.append((n, current.acks.count))
            } else if let at = current.position(of: id) {
                current.acks[at] = consume entry
                return
            } else {
                current.index[id] = current.acks.count
            }
            current.acks.append(consume entry)
            if current.acks.count >= capacity {
                previous = current
                current = Generation()
                current.reserve(capacity)
            }
        }

        /// Oldest first; an id in both generations (remembered again) counts as the newer.
        var entries: [Entry] {
            previous.acks.filter { current.position(of: $0.ack.id) == nil } + current.acks
        }
    }

    /// An acknowledged command: its ack, and what tells a resend from a reuse of the id,
    /// its fingerprint (`Command.fingerprint`), computed only when a resend needs it (most
    /// ids are never sent twice) from what is kept: the command's operations as the text
    /// history holds them (the same bytes, shared), or, when history keeps no text of
    /// them, the command itself; or the fingerprint a snapshot kept; nil when unknown (a
    /// snapshot written before fingerprints were kept). Holding every command's parsed
    /// operations for the table's thousand ids per client was most of a revision's memory.
    public struct Entry: Sendable, Equatable {
        public var ack: Ack
        // A constant, set by the initializers: as a `var` defaulting to nil, the
        // optimizer built every entry twice and copied one.
        let source: Source

        enum Source: Sendable {
            /// What the fingerprint needs of the command, not the whole command: with it
            /// every entry was 128 bytes, not 88, in tables of a thousand or more per
            /// client (boxed instead, it cost a lone stack edit an allocation).
            case command(ops: [JSON], base: Int?, onConflict: ConflictPolicy)
            /// The operations' JSON text: the first `count` bytes of `text`.
            case text([UInt8], count: Int, base: Int?, onConflict: ConflictPolicy)
            case stored(UInt64?)
        }

        public var fingerprint: UInt64? {
            switch source {
            case .command(let ops, let base, let onConflict):
                return Command.fingerprint(ops: .array(ops), base: base.map { .int(Int64($0)) }, onConflict: .string(onConflict.rawValue))
            case .stored(let f): return f
            case .text(let text, let count, let base, let onConflict):
                guard let ops = try? JSON.parse(Array(text[..<count])) else { return nil }
                return Command.fingerprint(ops: ops, base: base.map { .int(Int64($0)) }, onConflict: .string(onConflict.rawValue))
            }
        }

        public init(ack: Ack, fingerprint: UInt64?) {
            self.ack = ack
            source = .stored(fingerprint)
        }

        public init(ack: Ack, command: Command) { self.init(ack: ack, command: command, opsText: nil) }

        /// A command whose operations history holds as text (`opsText`: the text, and
        /// how many of its bytes are the operations).
        init(ack: Ack, command: Command, opsText: (text: [UInt8], count: Int)?) {
            self.ack = ack
            if let opsText {
                source = .text(opsText.text, count: opsText.count, base: command.base, onConflict: command.onConflict)
            } else {
                source = .command(ops: command.ops, base: command.base, onConflict: command.onConflict)
            }
        }

        public static func == (a: Entry, b: Entry) -> Bool { a.ack == b.ack && a.fingerprint == b.fingerprint }
    }

    public init(capacity: Int = 1024) { self.capacity = capacity }

    public func entry(client: String, id: CommandID) -> Entry? {
        guard let at = position(of: client) else { return nil }
        // Fields read in place: calling a method on `clients[at]` copied the client's
        // tables (eight reference counts per command).
        if case .int(let n) = id, n > clients[at].largestInt { return nil }
        return clients[at].current[id] ?? clients[at].previous[id]
    }

    public func ack(client: String, id: CommandID) -> Ack? { entry(client: client, id: id)?.ack }

    public mutating func remember(client: String, _ ack: Ack, fingerprint: UInt64?) {
        remember(Entry(ack: ack, fingerprint: fingerprint), client: client)
    }

    public mutating func remember(client: String, _ ack: Ack, command: Command) {
        remember(client: client, ack, command: command, opsText: nil)
    }

    /// The same, the command's operations kept as the text history holds (nil: none).
    mutating func remember(client: String, _ ack: Ack, command: Command, opsText: (text: [UInt8], count: Int)?) {
        remember(Entry(ack: ack, command: command, opsText: opsText), client: client)
    }

    private mutating func remember(_ entry: consuming Entry, client: String) {
        let at: Int
        if let known = position(of: client) { at = known } else {
            at = clients.count
            clients.append(ClientAcks())
            index[client] = at
        }
        last = (client, at)
        clients[at].remember(consume entry, capacity: capacity)
    }

    /// Every remembered command, per client, oldest first (for snapshots).
    public var entries: [(client: String, acks: [Entry])] {
        index.sorted { $0.key < $1.key }.map { client, at in (client, clients[at].entries) }
    }
}
