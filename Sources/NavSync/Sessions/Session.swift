/// One session: its sequencer and who is in it.
public struct Session: Sendable {
    public let name: String
    public let flow: Flow
    public var sequencer: Sequencer
    /// Members by connection, in join order.
    public private(set) var members: [Int: Member] = [:]
    public private(set) var memberOrder: [Int] = []

    /// Presence changes since the last `presence` message (DESIGN.md section 14): who
    /// joined (by connection, in order), who left (client ids), whose status changed.
    var joinedSince: [Int] = []
    var leftSince: [String] = []
    var statusSince: [Int] = []
    /// Members listed one by one in the last presence (all of them while the session
    /// has at most `presenceDetail`); others are only counted.
    var listed: Set<Int> = []
    /// Members that are not viewers, in join order (listed first).
    private(set) var leaders: [Int] = []
    var hasPresence: Bool { !joinedSince.isEmpty || !leftSince.isEmpty || !statusSince.isEmpty }

    public init(name: String, flow: Flow, sequencer: Sequencer) {
        self.name = name
        self.flow = flow
        self.sequencer = sequencer
        flowBytes = flow.source.encoded()
    }

    /// The flow as `joined` carries it, encoded once per session, not per join.
    let flowBytes: [UInt8]
    /// The listed members as `joined` carries them, kept while the listing and their
    /// statuses do not change: a join storm encodes them once, not once per join.
    private var listingCache: (order: [Int], members: [Member], bytes: [UInt8])?
    /// The state of one revision, encoded (every state change makes a revision).
    private var stateCache: (epoch: String, rev: Int, json: JSON, bytes: [UInt8])?

    public var summary: SessionSummary {
        SessionSummary(session: name, flow: flow.name, rev: sequencer.rev, members: members.count)
    }

    mutating func add(_ connection: Int, _ member: Member) {
        guard members.updateValue(member, forKey: connection) == nil else { return }
        memberOrder.append(connection)
        joinedSince.append(connection)
        if member.role != "viewer" { leaders.append(connection) }
    }

    /// A member leaves; it is announced as left only if it was announced as there
    /// (its join inside this interval cancels out) and was listed.
    @discardableResult
    mutating func remove(_ connection: Int, detail: Int) -> Member? {
        guard let m = members.removeValue(forKey: connection) else { return nil }
        memberOrder.removeAll { $0 == connection }
        if m.role != "viewer" { leaders.removeAll { $0 == connection } }
        statusSince.removeAll { $0 == connection }
        if let i = joinedSince.firstIndex(of: connection) {
            joinedSince.remove(at: i)
        } else if listed.contains(connection) || members.count < detail {
            leftSince.append(m.client)
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
        // O(detail), not O(members): controllers and admins are kept in their own list,
        // and viewers are taken from the front of the join order.
        var order = Array(leaders.prefix(detail))
        if order.count < detail {
            for c in memberOrder where members[c]!.role == "viewer" {
                order.append(c)
                if order.count == detail { break }
            }
        }
        return order
    }

    /// The presence gathered since the last one, and the listing now; nil when nothing
    /// changed.
    mutating func takePresence(detail: Int) -> ServerMessage.Presence? {
        guard hasPresence else { return nil }
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
        return p.isEmpty && p.others == nil ? nil : p
    }

    public var memberList: [Member] { memberOrder.compactMap { members[$0] } }

    /// What `joined` lists: the listed members (the joiner always among them), how
    /// many others there are, the listing encoded (from the cache when the listing is
    /// the one encoded last: shared, not copied, by a join storm) and the joiner
    /// encoded when it is not in the listing.
    mutating func joinedListing(for joiner: Int, detail: Int) -> (members: [Member], others: Int?, encoded: [UInt8], joiner: [UInt8]?) {
        let order = listing(detail: detail)
        var listed: [Member]
        let bytes: [UInt8]
        if let cache = listingCache, cache.order == order {
            listed = cache.members
            bytes = cache.bytes
        } else {
            listed = order.compactMap { members[$0] }
            bytes = JSON.array(listed.map(\.json)).encoded()
            listingCache = (order, listed, bytes)
        }
        var extra: [UInt8]?
        if !order.contains(joiner), let m = members[joiner] {
            listed.append(m)
            extra = m.json.encoded()
        }
        let others = members.count - listed.count
        return (listed, others > 0 ? others : nil, bytes, extra)
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
