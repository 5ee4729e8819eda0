/// Deep links (docs/flows.md, "The format" and docs/protocol.md, "Operations: fine points", "Links"): a URL is matched against
/// the flow's patterns and expands to that link's operations with captures substituted.
extension Flow {
    /// Expands a deep link into operations, or fails with `not_found` (no pattern
    /// matches), `bad_params` (a capture does not convert) or the error of a link op.
    public func expand(url: String) throws(NavError) -> (link: FlowLink, ops: [NavOperation]) {
        let (link, values) = try match(url: url)
        return (link, link.ops(filling: values))
    }

    /// The link `url` opens and its captures converted to their params' types, one per
    /// slot of the link (`FlowLink.slots`), nil where the URL does not give the capture.
    func match(url: String) throws(NavError) -> (link: FlowLink, values: [JSON?]) {
        // Most URLs have no escapes: matched on their bytes where they are, with no list
        // or string made but the captures' (`URLBytes`).
        var text = url
        if let found = text.withUTF8({ b in
            URLBytes(b).map { address in Result { () throws(NavError) in try match(url, address) } }
        }) {
            return try found.get()
        }
        guard let parsed = ParsedURL(url) else { throw NavError(.badParams, "'\(url)' is not a valid URL or path") }
        return try match(url, parsed)
    }

    /// The same against the URL's parts, read on its bytes or parsed (a test holds the
    /// two to the same answers).
    func match(_ url: String, _ address: some LinkAddress) throws(NavError) -> (link: FlowLink, values: [JSON?]) {
        guard let link = links.first(where: { $0.matches(address) }) else {
            throw NavError(.notFound, "no link of flow '\(name)' matches '\(url)'")
        }
        guard !link.slots.isEmpty else { return (link, []) }
        // Path captures win over query items; of repeated query items the first wins.
        // (A link has a handful: looked up where they are, no list or table made.)
        let segments = link.segments
        func capture(_ name: String) -> String? {
            for i in segments.indices {
                if case .capture(let n) = segments[i], n == name { return address.segment(i) }
            }
            return address.queryValue(name)
        }
        var converted: [JSON?] = []
        converted.reserveCapacity(link.slots.count)
        for slot in link.slots {
            guard let captured = capture(slot.capture) else {
                converted.append(nil)
                continue
            }
            guard let value = slot.type.convert(capture: captured) else {
                throw NavError(.badParams, "link '\(link.pattern)' op \(slot.op): capture ':\(slot.capture)' = '\(captured)' is not a valid \(slot.type.base.rawValue) for param '\(slot.key)'")
            }
            converted.append(value)
        }
        return (link, converted)
    }

    /// The declared type of a param: on `at`'s type, else on the first type of a kind
    /// the op works on that declares the route.
    func paramType(route: String, param: String, at: String?, op: OpName?) -> ParamType? {
        if let at, let spec = coordinators[at] { return spec.routes[route]?.params[param] }
        let kinds = op?.kinds
        return types(declaring: route).first { kinds?.contains($0.kind) ?? true }?.routes[route]?.params[param]
    }
}

extension FlowLink {
    func matches(_ address: some LinkAddress) -> Bool {
        guard address.segmentCount == segments.count else { return false }
        for i in segments.indices {
            if case .literal(let literal) = segments[i], !address.segment(i, is: literal) { return false }
        }
        return true
    }
}

/// What a link is matched against: a URL's path segments and query items, decoded.
protocol LinkAddress {
    var segmentCount: Int { get }
    func segment(_ i: Int) -> String
    func segment(_ i: Int, is literal: String) -> Bool
    /// The value of the first query item named `name`.
    func queryValue(_ name: String) -> String?
}

extension ParsedURL: LinkAddress {
    var segmentCount: Int { segments.count }
    func segment(_ i: Int) -> String { segments[i] }
    func segment(_ i: Int, is literal: String) -> Bool { segments[i] == literal }
    func queryValue(_ name: String) -> String? { query.first { $0.0 == name }?.1 }
}

/// A URL's path segments and query items as ranges of its bytes, found in one pass:
/// every deep link opened is matched, and `ParsedURL`'s lists and strings cost about as
/// much as the rest of matching. For a URL with no percent-escape (whose parts need no
/// decoding) of at most 8 segments and 8 query items; nil for any other, which is
/// matched through `ParsedURL`.
struct URLBytes: LinkAddress {
    static let capacity = 8
    private let bytes: UnsafeBufferPointer<UInt8>
    private var segments = InlineArray<8, Range<Int>>(repeating: 0..<0)
    private(set) var segmentCount = 0
    private var items = InlineArray<8, (key: Range<Int>, value: Range<Int>)>(repeating: (0..<0, 0..<0))
    private var itemCount = 0

    init?(_ b: UnsafeBufferPointer<UInt8>) {
        guard !b.contains(UInt8(ascii: "%")), let (path, query) = ParsedURL.bounds(b) else { return nil }
        bytes = b
        var segments = self.segments, count = 0
        let pathFits = ParsedURL.forEachPart(of: b[path], separatedBy: UInt8(ascii: "/")) { part in
            guard count < Self.capacity else { return false }
            segments[count] = part.startIndex..<part.endIndex
            count += 1
            return true
        }
        guard pathFits else { return nil }
        (self.segments, segmentCount) = (segments, count)
        guard let query else { return }
        var items = self.items, itemCount = 0
        let queryFits = ParsedURL.forEachPart(of: b[query], separatedBy: UInt8(ascii: "&")) { item in
            guard itemCount < Self.capacity else { return false }
            let (key, value) = ParsedURL.keyAndValue(item)
            items[itemCount] = (key.startIndex..<key.endIndex, value.startIndex..<value.endIndex)
            itemCount += 1
            return true
        }
        guard queryFits else { return nil }
        (self.items, self.itemCount) = (items, itemCount)
    }

    func segment(_ i: Int) -> String { string(segments[i]) }
    func segment(_ i: Int, is literal: String) -> Bool { equal(segments[i], literal) }

    func queryValue(_ name: String) -> String? {
        for i in 0..<itemCount where equal(items[i].key, name) { return string(items[i].value) }
        return nil
    }

    /// (The bytes come from a String and hold no escape: valid UTF-8 as they are.)
    private func string(_ r: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[r]), as: UTF8.self) }

    private func equal(_ r: Range<Int>, _ text: String) -> Bool {
        guard text.utf8.count == r.count else { return false }
        return text.utf8.withContiguousStorageIfAvailable { t in
            t.elementsEqual(UnsafeBufferPointer(rebasing: bytes[r]))
        } ?? text.utf8.elementsEqual(bytes[r])
    }
}

extension FlowLink {
    /// The link's operations with `values` (one per slot, as `Flow.match` gives them)
    /// put in their params; a param whose capture is absent (nil) is left out.
    func ops(filling values: [JSON?]) -> [NavOperation] { Self.ops(compiled, slots, filling: values) }

    /// The same for operations and slots not yet made into a link (its plan's).
    static func ops(_ compiled: [NavOperation], _ slots: [CaptureSlot], filling values: [JSON?]) -> [NavOperation] {
        var ops = compiled
        for (slot, value) in zip(slots, values) { ops[slot.op].setParam(slot.key, to: value, item: slot.item) }
        return ops
    }
}

extension NavOperation {
    /// Sets (or with nil removes) a param of the op's item, or of its item `index`.
    mutating func setParam(_ key: String, to value: JSON?, item index: Int?) {
        func set(_ items: inout [OpenItem]) { items[index!].params[key] = value }
        switch action {
        case .route(var item): item.params[key] = value; action = .route(item)
        case .present(var item, let style): item.params[key] = value; action = .present(item, style: style)
        case .setRoot(var item): item.params[key] = value; action = .setRoot(item)
        case .appendTab(var item): item.params[key] = value; action = .appendTab(item)
        case .insertTab(var item, let at): item.params[key] = value; action = .insertTab(item, index: at)
        case .setStack(var items): set(&items); action = .setStack(items)
        case .setTabs(var items): set(&items); action = .setTabs(items)
        case .setPath(var items, let layer): set(&items); action = .setPath(items, layer: layer)
        default: break
        }
    }
}
