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
    }

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

    /// What `joined` lists: the listed members (the joiner always among them) and how
    /// many others there are.
    func joinedListing(for joiner: Int, detail: Int) -> (members: [Member], others: Int?) {
        var order = listing(detail: detail)
        if !order.contains(joiner) { order.append(joiner) }
        let others = members.count - order.count
        return (order.compactMap { members[$0] }, others > 0 ? others : nil)
    }
}
