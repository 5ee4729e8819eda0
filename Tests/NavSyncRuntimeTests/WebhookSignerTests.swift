import Testing
@testable import NavSyncRuntime
import NavSync
import NavSyncServer

@Suite("Webhook signatures")
struct WebhookSignerTests {
    /// Standard Webhooks' own example: its secret, id, timestamp and payload give this signature.
    @Test func theStandardWebhooksVector() throws {
        let keys = try HooksConfiguration.secrets(from: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", file: "s")
        let signer = WebhookSigner(keys: keys)
        #expect(signer.signature(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1614265330, body: Array(#"{"test": 2432232314}"#.utf8))
                == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func everyKeySignsWhileRotating() throws {
        let a = [UInt8](repeating: 1, count: 32), b = [UInt8](repeating: 2, count: 32)
        let both = WebhookSigner(keys: [a, b]).signature(id: "m", timestamp: 1, body: [])
        let parts = both.split(separator: " ").map(String.init)
        #expect(parts == [WebhookSigner(keys: [a]).signature(id: "m", timestamp: 1, body: []),
                          WebhookSigner(keys: [b]).signature(id: "m", timestamp: 1, body: [])])
        let headers = WebhookSigner(keys: [a]).headers(id: "m", body: [], timestamp: 5)
        #expect(headers.contains("webhook-id: m") && headers.contains("webhook-timestamp: 5") && headers.contains("Content-Type: application/json"))
    }
}
