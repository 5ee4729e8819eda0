import NavSync
import NavSyncLibuv
import CUV
@preconcurrency import Glibc

/// The terminal on a `ClientLoop`: standard input in raw mode (keys as they are typed),
/// its size, resizes (SIGWINCH), and output to standard output.
public final class Terminal {
    private let tty: UnsafeMutablePointer<uv_tty_t>
    private let winch: UnsafeMutablePointer<uv_signal_t>
    unowned let owner: ClientLoop
    public var onInput: (([UInt8]) -> Void)?
    public var onResize: (() -> Void)?
    private var raw = false

    /// nil when standard input or output is not a terminal.
    public init?(loop: ClientLoop) {
        guard isatty(0) != 0, isatty(1) != 0 else { return nil }
        owner = loop
        tty = .allocate(capacity: 1)
        winch = .allocate(capacity: 1)
        guard uv_tty_init(loop.loop, tty, 0, 1) == 0 else {
            tty.deallocate()
            winch.deallocate()
            return nil
        }
        tty.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_signal_init(loop.loop, winch)
        winch.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    public func start() {
        raw = uv_tty_set_mode(tty, UV_TTY_MODE_RAW) == 0
        uv_read_start(UV.stream(tty), { handle, _, buf in
            let me = Unmanaged<Terminal>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
            buf!.pointee = uv_buf_init(me.owner.readBuffer.assumingMemoryBound(to: CChar.self), 4096)
        }, { stream, nread, buf in
            let me = Unmanaged<Terminal>.fromOpaque(stream!.pointee.data).takeUnretainedValue()
            if nread > 0 {
                me.onInput?(Array(UnsafeRawBufferPointer(start: buf!.pointee.base, count: nread)))
            } else if nread < 0 {
                me.onInput?([0x04])   // the terminal went away: as Ctrl-D
            }
        })
        uv_signal_start(winch, { h, _ in
            Unmanaged<Terminal>.fromOpaque(h!.pointee.data).takeUnretainedValue().onResize?()
        }, SIGWINCH)
    }

    /// Columns and rows (80×24 when unknown).
    public var size: (columns: Int, rows: Int) {
        var w: Int32 = 0, h: Int32 = 0
        guard uv_tty_get_winsize(tty, &w, &h) == 0, w > 0, h > 0 else { return (80, 24) }
        return (Int(w), Int(h))
    }

    public func write(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Leaves raw mode and closes the handles (their memory goes in the close callbacks).
    public func stop() {
        if raw { uv_tty_reset_mode() }
        raw = false
        uv_read_stop(UV.stream(tty))
        uv_signal_stop(winch)
        uv_close(UV.handle(tty)) { h in UnsafeMutablePointer<uv_tty_t>(OpaquePointer(h!)).deallocate() }
        uv_close(UV.handle(winch)) { h in UnsafeMutablePointer<uv_signal_t>(OpaquePointer(h!)).deallocate() }
    }
}
