/// One session: its sequencer and who is in it.
public struct Session: Sendable {
    public let name: String
    public let flow: Flow
    public var sequencer: Sequencer
    /// Members by connection, in join order.
    public private(set) var members: [Int: Member] = [:]
    public private(set) var memberOrder: [Int] = []

    public init(name: String, flow: Flow, sequencer: Sequencer) {
        self.name = name
        self.flow = flow
        self.sequencer = sequencer
    }

    public var summary: SessionSummary {
        SessionSummary(session: name, flow: flow.name, rev: sequencer.rev, members: members.count)
    }

    mutating func add(_ connection: Int, _ member: Member) {
        if members.updateValue(member, forKey: connection) == nil { memberOrder.append(connection) }
    }

    @discardableResult
    mutating func remove(_ connection: Int) -> Member? {
        guard let m = members.removeValue(forKey: connection) else { return nil }
        memberOrder.removeAll { $0 == connection }
        return m
    }

    mutating func setStatus(_ connection: Int, rev: Int, focus: String?) {
        members[connection]?.rev = rev
        members[connection]?.focus = focus
    }

    public var memberList: [Member] { memberOrder.compactMap { members[$0] } }
}
