/// The acks of the last `capacity` commands of each client identity (DESIGN.md section
/// 5): a command id seen again gets its original ack instead of running twice.
public struct IdempotencyTable: Sendable {
    /// Acks remembered per client identity; the oldest is forgotten first. 1024 covers
    /// far more commands than a client has in flight across a reconnect.
    public let capacity: Int
    private var clients: [String: ClientAcks] = [:]

    struct ClientAcks {
        /// Ids in acknowledgement order, oldest first; `head` skips forgotten ones.
        var order: [CommandID] = []
        var head = 0
        var acks: [CommandID: Ack] = [:]

        mutating func remember(_ ack: Ack, capacity: Int) {
            if acks.updateValue(ack, forKey: ack.id) == nil { order.append(ack.id) }
            while acks.count > capacity {
                acks[order[head]] = nil
                head += 1
            }
            if head > capacity {
                order.removeFirst(head)
                head = 0
            }
        }
    }

    public init(capacity: Int = 1024) { self.capacity = capacity }

    public func ack(client: String, id: CommandID) -> Ack? { clients[client]?.acks[id] }

    public mutating func remember(client: String, _ ack: Ack) {
        let capacity = self.capacity
        clients[client, default: ClientAcks()].remember(ack, capacity: capacity)
    }

    /// Every remembered ack, per client, oldest first (for snapshots).
    public var entries: [(client: String, acks: [Ack])] {
        clients.keys.sorted().map { client in
            let c = clients[client]!
            return (client, c.order[c.head...].compactMap { c.acks[$0] })
        }
    }
}
