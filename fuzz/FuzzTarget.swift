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
    if let text = String(validating: bytes, as: UTF8.self) {
        _ = ParsedURL(text)
        _ = try? Flow.demo.expand(url: text)
        _ = try? CommandLanguage.parse(text, flow: .demo, state: nil)
    }
    return 0
}
