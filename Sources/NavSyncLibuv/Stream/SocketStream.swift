import CUV

/// A socket's bytes both ways, plain or through TLS: the one stream shell of the
/// server's connections (`Connection`) and the client's (`WebSocketClient`). Output is
/// queued as plaintext (`OutputQueue`) and, over TLS, sealed into records once the
/// handshake is done (`TLSStream.sealed`: what the socket then gets); a flush hands all
/// of it to libuv in one write. Input comes out as plaintext.
package struct SocketStream: ~Copyable {
    /// Plaintext output: what the socket gets without TLS.
    private(set) var output = OutputQueue()
    /// With TLS: the session, and the sealed records.
    package let tls: TLSStream?

    package init(tls: TLSStream?) { self.tls = tls }

    /// Output bytes queued or in flight.
    package var queuedBytes: Int { output.queuedBytes + (tls?.sealed.queuedBytes ?? 0) }

    /// Over TLS and still in its handshake: nothing can be said to the peer yet.
    package var isAwaitingTLS: Bool { tls.map { !$0.isEstablished } ?? false }

    /// A write is in flight (libuv calls back when it is done: `finished`).
    package var isWriting: Bool { tls?.sealed.isWriting ?? output.isWriting }

    /// After a write finished: whether there is more to flush now.
    package var hasMoreToWrite: Bool {
        guard let tls else { return output.hasPending }
        return tls.sealed.hasPending || tls.hasOutput || tls.isEstablished && output.hasPending
    }

    package mutating func append(_ buffer: OutgoingBuffer) { output.append(buffer) }

    /// Bytes for the socket as they are, past TLS (a plain-HTTP answer to a peer that
    /// spoke plain HTTP to the TLS port).
    package mutating func appendRaw(_ buffer: OutgoingBuffer) {
        if let tls { tls.sealed.append(buffer) } else { output.append(buffer) }
    }

    /// The socket's bytes as plaintext: over TLS unsealed into `plain` (what a failure
    /// left unread is there too); without, `plain` stays empty and the bytes are the
    /// plaintext, not copied. True when TLS has output now (a handshake message), or
    /// output waited for a handshake just done: a flush is due.
    package mutating func open(_ bytes: UnsafeRawBufferPointer, into plain: inout [UInt8]) throws(TLSStream.Failure) -> Bool {
        guard let tls else { return false }
        try tls.receive(bytes, into: &plain)
        return tls.hasOutput || (tls.isEstablished && output.hasPending)
    }

    package var isTLS: Bool { tls != nil }

    /// Writes what is queued (sealing it first over TLS), if no write is in flight:
    /// `OutputQueue.flush`'s answer (bytes written at once, or libuv's error).
    package mutating func flush(to stream: UnsafeMutablePointer<uv_stream_t>, owner: AnyObject, callback: uv_write_cb) -> Int {
        guard let tls else { return output.flush(to: stream, owner: owner, callback: callback) }
        if tls.isEstablished && output.hasPending { _ = output.drain { tls.write($0) } }
        if tls.hasOutput { tls.sealed.append(OutgoingBuffer(tls.takeOutput())) }
        return tls.sealed.flush(to: stream, owner: owner, callback: callback)
    }

    /// The write in flight is done; returns the bytes it carried.
    package mutating func finished() -> Int { tls?.sealed.finished() ?? output.finished() }

    /// Ends TLS politely (close_notify after what is queued, sealed first: after it
    /// OpenSSL seals nothing more). True when that left something to write.
    package mutating func shutdown() -> Bool {
        guard let tls else { return false }
        if tls.isEstablished && output.hasPending { _ = output.drain { tls.write($0) } }
        tls.shutdown()
        return tls.hasOutput
    }

    /// Whether TLS has bytes of its own to write (an alert, a close_notify).
    package var tlsHasOutput: Bool { tls?.hasOutput ?? false }

    package mutating func discard() {
        output.discard()
        tls?.sealed.discard()
    }

    /// Frees what an idle stream holds for its next write.
    package mutating func trim() {
        output.trim()
        tls?.sealed.trim()
    }
}
