// libFuzzer entry point: every parser that takes bytes from the network, fed the same
// input, and `load`'s state validation. Built by scripts/fuzz (not part of the package).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // WebSocket frames, both roles, whole and byte at a time.
    var server = WebSocketDecoder(role: .server, maxMessage: 1 << 16)
    _ = server.feed(bytes)
    var client = WebSocketDecoder(role: .client, maxMessage: 1 << 16)
    for b in bytes.prefix(512) { _ = client.feed([b]) }
    // HTTP requests.
    var http = HTTPParser()
    http.feed(bytes)
    while case .request = http.next() {}
    // Protocol messages, and commands through a sequencer.
    let request = ClientRequest(bytes: bytes)
    if case .success(.command(_, let object)) = request.message {
        var seq = Sequencer(flow: .demo, epoch: "f")
        _ = seq.submit(object, client: "fuzz")
    }
    // `load` takes a whole document: any JSON as a state, checked against the flow, and
    // applied to a session that already has one.
    if let json = try? JSON.parse(bytes) {
        _ = try? Flow.demo.validate(state: json)
        var seq = Sequencer(flow: .demo, epoch: "f")
        _ = seq.submit(["id": 0, "ops": [["op": "setRoot", "route": "main"]]], client: "fuzz")
        _ = seq.submit(["id": 1, "ops": [["op": "load", "state": json, "nextId": 5]]], client: "fuzz")
    }
    // Journal records and deep links.
    _ = Journal.scan(bytes)
    let text = String(validating: bytes, as: UTF8.self)
    if let text {
        _ = ParsedURL(text)
        _ = try? Flow.demo.expand(url: text)
        _ = try? CommandLanguage.parse(text, flow: .demo, state: nil)
    }
    // The app's backend (docs/backend.md): the hooks file and its secret file, the
    // webhook events kept in webhooks.json, and a hook's answer to a join and to a
    // command, as a hub that asks takes it.
    _ = try? HooksConfiguration.load(bytes: bytes, file: "hooks.json")
    if let text { _ = try? HooksConfiguration.secrets(from: text, file: "secret") }
    if let json = try? JSON.parse(bytes) {
        _ = WebhookEvent(json: json)
        hookAnswers(json)
    }
    return 0
}

/// A hub with both hooks on: a client says hello, joins (the join hook is asked) and
/// sends a command (the command hook is asked); each call is answered with `answer`,
/// and then once more (a late answer), and the client leaves.
func hookAnswers(_ answer: JSON) {
    var hub = Hub(configuration: HubConfiguration(), flows: [.demo], ids: .counting())
    _ = hub.handle(.started, now: 0)
    hub.configureHooks(HooksConfiguration(url: "http://backend.fuzz/hook", join: true, commands: ["*": ["*"]]))
    func answered(_ effects: [Hub.Effect]) {
        for case .hook(let call) in effects {
            _ = hub.handle(.hook(call.id, .answered(answer)), now: 1)
            _ = hub.handle(.hook(call.id, .answered(answer)), now: 1)
        }
    }
    answered(hub.handle(.connected(1, grant: nil), now: 0))
    for message: JSON in [["type": "hello", "name": "fuzz"], ["type": "join", "session": "demo"],
                          ["type": "command", "session": "demo", "id": 1, "ops": [["op": "open", "url": "/product/4"]]]] {
        answered(hub.handle(.request(1, ClientRequest(bytes: message.encoded())), now: 0))
    }
    _ = hub.handle(.disconnected(1), now: 2)
}
