import NavSync
import NavSyncServer
/// Random identities for a running server: client ids and session epochs. The hub
/// takes generators, so tests pass counters instead.
public enum RandomIDs {
    public static func hex(_ bytes: Int) -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in
            let b = UInt8.random(in: 0...255, using: &g)
            return String(b >> 4, radix: 16) + String(b & 15, radix: 16)
        }.joined()
    }
}
