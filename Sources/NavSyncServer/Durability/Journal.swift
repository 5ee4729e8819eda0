import NavSync
/// The append-only journal of a session (docs/protocol.md, "Durable sessions (--data DIR)"): one record per applied
/// command, with its revision, client identity and the command itself, so replaying
/// the journal from a snapshot reproduces the session exactly (ids included).
///
/// A record on disk: `length` (UInt32, little endian, of the payload), `crc32` (UInt32,
/// little endian, of the payload), then the payload, compact JSON
/// `{"rev", "client", "command"}`. Pure: bytes in, records out.
public struct JournalRecord: Sendable, Equatable {
    public var rev: Int
    public var client: String
    public var command: Command
    /// Who and when, for history (docs/protocol.md, "History"): the sender's name and server time in ms.
    public var name: String?
    public var ts: Int64

    public init(rev: Int, client: String, command: Command, name: String? = nil, ts: Int64 = 0) {
        self.rev = rev
        self.client = client
        self.command = command
        self.name = name
        self.ts = ts
    }

    /// Largest payload accepted when reading: a command is at most one protocol message.
    public static let maxPayload = 16 << 20

    /// A record's checksum: the core's CRC-32 by default; the runtime passes zlib's.
    public typealias Checksum = (UnsafeRawBufferPointer) -> UInt32

    public func encoded(checksum: Checksum = CRC32.checksum) -> [UInt8] {
        var o: JSONObject = ["rev": .int(Int64(rev)), "client": .string(client), "command": command.json]
        if let name { o["name"] = .string(name) }
        if ts != 0 { o["ts"] = .int(ts) }
        let payload = JSON.object(o).encoded()
        let crc = payload.withUnsafeBytes(checksum)
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + 8)
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: UInt32(payload.count) >> UInt32(shift))) }
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        return out + payload
    }

    init?(payload: [UInt8]) {
        guard let json = try? JSON.parse(payload), let rev = json["rev"]?.intValue, let client = json["client"]?.stringValue,
              let object = json["command"]?.objectValue, let command = try? Command(json: object) else { return nil }
        self.init(rev: Int(rev), client: client, command: command, name: json["name"]?.stringValue, ts: json["ts"]?.intValue ?? 0)
    }
}

/// What reading a journal found.
public struct JournalScan: Sendable, Equatable {
    public enum Problem: Sendable, Equatable {
        /// The last record is incomplete or does not check (a crash mid-write): cut it
        /// off at `offset` and carry on.
        case tornTail(offset: Int)
        /// A record in the middle does not check, with records after it: refuse to
        /// start (naming the offset) unless repairing, which cuts everything from here.
        case corrupt(offset: Int)
    }

    public var records: [JournalRecord]
    /// Where each record starts, in bytes from the file's start.
    public var offsets: [Int]
    /// Bytes of whole, checked records from the start: where appending continues.
    public var validLength: Int
    public var problem: Problem?
}

public enum Journal {
    /// Reads every whole record, up to the end or to zeros written ahead. A bad record at
    /// the end is a torn tail; a bad record followed by at least one good one is
    /// corruption in the middle.
    public static func scan(_ bytes: [UInt8], checksum: JournalRecord.Checksum = CRC32.checksum) -> JournalScan {
        var records: [JournalRecord] = []
        var offsets: [Int] = []
        var offset = 0
        while offset < bytes.count {
            guard let (record, next) = record(at: offset, in: bytes, checksum: checksum) else {
                // Zeros written ahead of the records (journals grow in zeroed chunks).
                if bytes[offset...].allSatisfy({ $0 == 0 }) {
                    return JournalScan(records: records, offsets: offsets, validLength: offset, problem: nil)
                }
                // Is there a good record anywhere after this one? Then this is corruption.
                let resumes = (offset + 1..<bytes.count).contains { record(at: $0, in: bytes, checksum: checksum) != nil }
                return JournalScan(records: records, offsets: offsets, validLength: offset,
                                   problem: resumes ? .corrupt(offset: offset) : .tornTail(offset: offset))
            }
            records.append(record)
            offsets.append(offset)
            offset = next
        }
        return JournalScan(records: records, offsets: offsets, validLength: offset, problem: nil)
    }

    /// The record starting at `offset`, and where the next one starts, if it checks.
    static func record(at offset: Int, in bytes: [UInt8], checksum: JournalRecord.Checksum = CRC32.checksum) -> (JournalRecord, Int)? {
        guard offset + 8 <= bytes.count else { return nil }
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << UInt32(8 * $1) } }
        let length = Int(u32(offset))
        guard length > 0, length <= JournalRecord.maxPayload, offset + 8 + length <= bytes.count else { return nil }
        let payload = Array(bytes[(offset + 8)..<(offset + 8 + length)])
        guard payload.withUnsafeBytes(checksum) == u32(offset + 4), let record = JournalRecord(payload: payload) else { return nil }
        return (record, offset + 8 + length)
    }
}

extension Sequencer {
    /// Applies journal records after a snapshot, in order; each must land on its
    /// recorded revision, or the data does not belong together.
    public mutating func replay(_ records: [JournalRecord]) throws(SnapshotError) {
        for r in records where r.rev > rev {
            guard r.rev == rev + 1 else { throw SnapshotError("the journal jumps from revision \(rev) to \(r.rev)") }
            guard case .applied(let ack, _) = submitJournaling(r.command, client: r.client, refused: [:],
                                                               sender: Sender(name: r.name ?? r.client, ts: r.ts), trusted: true).outcome,
                  ack.rev == r.rev else {
                throw SnapshotError("journal record for revision \(r.rev) (command \(r.command.id)) does not apply")
            }
        }
    }
}
