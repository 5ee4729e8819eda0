/// The limits the model enforces (docs/protocol.md, "Transport" and docs/protocol.md, "Operations: fine points"). Each is a
/// configuration value; the defaults are the protocol's documented ones.
public struct ModelLimits: Sendable, Equatable {
    /// Operations in one command; more is `too_large`. Bounds the work one message buys.
    public var maxOps = 64
    /// Entries in one stack; a push beyond is `invalid_op`. Deeper than any real app.
    public var maxStackDepth = 256
    /// Tabs in one tab bar; beyond is `invalid_op`.
    public var maxTabs = 64
    /// Bytes of one entry's `data`, serialized compactly; beyond is `too_large`. Keeps
    /// view-model state small enough that every patch stays cheap to broadcast.
    public var maxDataBytes = 16 * 1024

    public init() {}
}

/// What one operation did (docs/protocol.md, "Operations: fine points", "Results and revisions").
public enum OpResult: String, Sendable, Equatable {
    /// Changed the document or allocated ids.
    case applied
    /// Changed nothing.
    case noop
    /// Named an entry, coordinator or alert that is gone now.
    case superseded
    /// A guard redirected it (docs/flows.md, "Guards and redirects"): the ack's `redirects` says where.
    case redirected

    /// `[self]`, one array shared by every ack of a one-op command (most commands):
    /// an ack's results are kept by the idempotency table and history, so a fresh array
    /// per command was an allocation and a free.
    var alone: [OpResult] {
        switch self {
        case .applied: Self.appliedAlone
        case .noop: Self.noopAlone
        case .superseded: Self.supersededAlone
        case .redirected: [.redirected]
        }
    }

    private static let appliedAlone: [OpResult] = [.applied]
    private static let noopAlone: [OpResult] = [.noop]
    private static let supersededAlone: [OpResult] = [.superseded]
}
