import NavSync
/// One session: its sequencer and who is in it.
public struct Session: Sendable {
    public let name: String
    public let flow: Flow
    public var sequencer: Sequencer
    /// Members by connection, in join order.
    public private(set) var members: [Int: Member] = [:]
    public private(set) var memberOrder: [Int] = []

    /// Presence changes since the last `presence` message (docs/protocol.md, "Server messages, unasked"): who
    /// joined (by connection, in order), who left (client ids), whose status changed.
    var joinedSince: [Int] = []
    var leftSince: [String] = []
    var statusSince: [Int] = []
    /// Members listed one by one in the last presence (all of them while the session
    /// has at most `presenceDetail`); others are only counted.
    var listed: Set<Int> = []
    /// Members that are not viewers, in join order (listed first), and the viewers, in
    /// join order (listed after them, as far as `presenceDetail` goes).
    private(set) var leaders: [Int] = []
    private(set) var viewers: [Int] = []
    /// Past `presenceDetail`, the count of the others as last announced, and when it may
    /// be announced again on its own: a herd of joiners changes only the count, and
    /// that goes to every member at most once per `presenceCountInterval`, not every tick.
    private var announcedOthers: Int?
    private var nextCountAt: Int64 = .min
    private var countPending = false
    /// When a busy tick first held this session's presence back (`Hub.flushPresence`).
    var presenceHeldSince: Int64?
    var hasPresence: Bool { !joinedSince.isEmpty || !leftSince.isEmpty || !statusSince.isEmpty || countPending }

    public init(name: String, flow: Flow, sequencer: Sequencer) {
        self.name = name
        self.flow = flow
        self.sequencer = sequencer
    }

    /// The flow as `joined` carries it: encoded once per flow, not per session or join
    /// (a node of many sessions of one flow would hold as many copies).
    var flowBytes: [UInt8] { flow.encodedSource }
    /// The listed members as `joined` carries them, kept while the listing and their
    /// statuses do not change: a join storm encodes them once, not once per join.
    /// Released at the presence tick after the joins (`takePresence`): held for good,
    /// the listing and its text would cost every member of an idle node.
    private var listingCache: (order: [Int], members: [Member], bytes: [UInt8])?
    /// The state of one revision, encoded (every state change makes a revision);
    /// released with the listing.
    private var stateCache: (epoch: String, rev: Int, json: JSON, bytes: [UInt8])?

    public var summary: SessionSummary {
        SessionSummary(session: name, flow: flow.name, rev: sequencer.rev, members: members.count)
    }

    mutating func add(_ connection: Int, _ member: Member) {
        guard members.updateValue(member, forKey: connection) == nil else { return }
        memberOrder.append(connection)
        joinedSince.append(connection)
        if member.role != "viewer" { leaders.append(connection) } else { viewers.append(connection) }
    }

    /// A member leaves; it is announced as left only if it was announced as there
    /// (its join inside this interval cancels out) and was listed.
    @discardableResult
    mutating func remove(_ connection: Int, detail: Int) -> Member? {
        guard let m = members.removeValue(forKey: connection) else { return nil }
        // Found, then removed by moving the tail: a tight search and one memmove, where
        // `removeAll(where:)` looked at and moved every member (a mass disconnect of
        // 10,000 members was over a billion instructions).
        func drop(_ list: inout [Int]) { if let i = list.firstIndex(of: connection) { list.remove(at: i) } }
        drop(&memberOrder)
        if m.role != "viewer" { drop(&leaders) } else { drop(&viewers) }
        drop(&statusSince)
        if let i = joinedSince.firstIndex(of: connection) {
            joinedSince.remove(at: i)
        } else if listed.contains(connection) || members.count < detail {
            leftSince.append(m.client)
        } else {
            countPending = true   // an unlisted member: only the count changes
        }
        listed.remove(connection)
        return m
    }

    mutating func setStatus(_ connection: Int, rev: Int, focus: String?) {
        if listed.contains(connection) || listingCache?.order.contains(connection) == true { listingCache = nil }
        members[connection]?.rev = rev
        members[connection]?.focus = focus
        if !statusSince.contains(connection) { statusSince.append(connection) }
    }

    /// The members listed one by one: controllers and admins first, then viewers, each
    /// in join order, at most `detail` of them.
    func listing(detail: Int) -> [Int] {
        guard members.count > detail else { return memberOrder }
        // O(detail), not O(members), and no member looked up: the two lists are kept
        // in join order as members come and go.
        var order = Array(leaders.prefix(detail))
        order.append(contentsOf: viewers.prefix(detail - order.count))
        return order
    }

    /// The presence gathered since the last one, and the listing now; nil when nothing
    /// changed.
    mutating func takePresence(detail: Int, now: Int64 = 0, countInterval: Int64 = 0) -> ServerMessage.Presence? {
        guard hasPresence else { return nil }
        // Every join makes presence, so this runs within a tick of the last join: the
        // caches for joins go (a storm rebuilds them once per tick, not per join).
        listingCache = nil
        stateCache = nil
        let order = listing(detail: detail)
        listed = Set(order)
        var p = ServerMessage.Presence(others: members.count > order.count ? members.count - order.count : nil)
        p.joined = joinedSince.filter(listed.contains).compactMap { members[$0] }
        p.left = leftSince
        p.status = statusSince.filter(listed.contains).compactMap { c in
            members[c].flatMap { m in m.rev.map { .init(client: m.client, rev: $0, focus: m.focus) } }
        }
        joinedSince = []
        leftSince = []
        statusSince = []
        if p.isEmpty {
            // Only the count may have changed: said once per interval, and only if it did.
            guard p.others != announcedOthers else {
                countPending = false
                return nil
            }
            guard now >= nextCountAt else {
                countPending = true
                return nil
            }
        }
        countPending = false
        announcedOthers = p.others
        if p.others != nil { nextCountAt = now + countInterval }
        return p.isEmpty && p.others == nil ? nil : p
    }

    public var memberList: [Member] { memberOrder.compactMap { members[$0] } }

    /// What `joined` lists: the listed members (shared with the cache: a join storm
    /// copies no list of members), the joiner when it is not among them, how many
    /// others there are, the listing encoded (from the cache when the listing is the
    /// one encoded last) and the joiner encoded when it is not in the listing.
    mutating func joinedListing(for joiner: Int, detail: Int)
        -> (listed: [Member], unlisted: Member?, others: Int?, encoded: [UInt8], joiner: [UInt8]?) {
        let order = listing(detail: detail)
        if listingCache?.order != order {
            // A listing that grew by one member at the end (every join until `detail`)
            // is extended in place: encoding the whole listing per join made the
            // first `detail` joins quadratic.
            if var cache = listingCache.take(), order.count == cache.order.count + 1, order.starts(with: cache.order),
               let m = members[order[order.count - 1]] {
                cache.order = order
                cache.members.append(m)
                cache.bytes.removeLast()    // "]"
                if cache.members.count > 1 { cache.bytes.append(UInt8(ascii: ",")) }
                m.json.write(into: &cache.bytes)
                cache.bytes.append(UInt8(ascii: "]"))
                listingCache = cache
            } else {
                let listed = order.compactMap { members[$0] }
                listingCache = (order, listed, JSON.array(listed.map(\.json)).encoded())
            }
        }
        let listed = listingCache!.members
        let bytes = listingCache!.bytes
        var unlisted: Member?
        var extra: [UInt8]?
        if !order.contains(joiner), let m = members[joiner] {
            unlisted = m
            extra = m.json.encoded()
        }
        let others = members.count - listed.count - (unlisted == nil ? 0 : 1)
        return (listed, unlisted, others > 0 ? others : nil, bytes, extra)
    }

    /// The state as `joined` carries it, made and encoded once per revision, not per
    /// join.
    mutating func joinedState() -> (json: JSON, bytes: [UInt8]) {
        if let cache = stateCache, cache.epoch == sequencer.epoch, cache.rev == sequencer.rev { return (cache.json, cache.bytes) }
        let json = sequencer.state.json
        let bytes = json.encoded()
        stateCache = (sequencer.epoch, sequencer.rev, json, bytes)
        return (json, bytes)
    }
}
