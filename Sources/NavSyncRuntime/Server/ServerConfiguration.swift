import NavSync
import NavSyncServer
import NavSyncLibuv
/// Everything `navsyncd` can be told, with the protocol's documented defaults
/// (docs/protocol.md, "Transport" and README.md, "What is built").
public struct ServerConfiguration: Sendable {
    /// Address to listen on: an IPv4 or IPv6 literal.
    public var host = "127.0.0.1"
    /// TCP port; 0 takes a free one (the start-up line names it).
    public var port = 7420
    /// Per-connection limits and timers (message size, handshake, heartbeat).
    public var connection = ConnectionLimits()
    /// Hard cap on one connection's queued output, in bytes. Past it a send is
    /// refused and the application decides (a lagging member is resynced with a
    /// snapshot; an echo client is dropped). 8 MiB holds thousands of patches.
    public var maxQueueBytes = 8 << 20
    /// SO_SNDBUF of accepted connections, in bytes; nil leaves the kernel's autotuning
    /// (up to a few MiB per socket on Linux). A smaller value bounds what the kernel
    /// holds for a slow reader on top of `maxQueueBytes`, with 10,000 connections that
    /// matters, at the price of throughput on links with a long round trip.
    public var socketSendBuffer: Int?
    /// How long (ms) a closing connection keeps reading (and dropping) input after its
    /// last bytes went out, so the peer reads our close frame instead of a reset.
    public var lingerTimeout: Int64 = 2_000
    /// How long (ms) shutdown waits for close handshakes before dropping connections.
    public var shutdownGrace: Int64 = 3_000
    /// Open connections the server holds; one more is answered 503 and closed. Capped
    /// by the open-files limit at start.
    public var maxConnections = 16_384
    /// Open connections from one address; one more is answered 503 and closed. High
    /// enough for a lab of devices behind one NAT, low enough to stop one host's flood.
    public var maxConnectionsPerIP = 4_096
    /// `--trusted-proxy`: reverse proxies whose `Forwarded` / `X-Forwarded-*` headers
    /// are believed (the client's address, the scheme and host it asked for).
    public var trustedProxies = ProxyTrust()
    /// `--tls-cert` and `--tls-key` (or `--tls-self-signed`): HTTPS and `wss://` on the
    /// port, and nothing in plain text; nil serves plain HTTP and `ws://`.
    public var tls: TLSContext?
    /// permessage-deflate (`--compression`, RFC 7692): offered to every WebSocket client,
    /// messages of at least this many bytes compressed (`--compression-threshold`); nil
    /// turns it off. A broadcast is compressed once for all its members.
    public var compressionThreshold: Int? = 256
    /// `listen(2)` backlog (`--backlog`): by default the kernel's cap, `somaxconn`.
    public var backlog: Int32 = kernelListenBacklog()
    public var logLevel = Logger.Level.info

    public init() {}
}
