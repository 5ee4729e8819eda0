import NavSync
import NavSyncServer
import NavSyncLibuv
/// The HTTP API (docs/protocol.md, "HTTP") carried out: the routes, the origin and token
/// checks are `HTTPAPI`'s (pure, in NavSyncServer); this fills in what the server is and
/// the instant, checks a JWT's signature, and does what the answer says.
extension SessionServer {
    /// What the API needs to know of this server now.
    func site(_ server: Server) -> HTTPAPI.Site {
        HTTPAPI.Site(webSocketURL: server.webSocketURL, allowedOrigins: allowedOrigins + clusterOrigins, host: server.host,
                     port: server.port, localAddresses: localAddresses, scheme: server.tlsContext == nil ? "http" : "https",
                     clusterNode: cluster?.node, notReady: cluster?.notReady, hasBackend: backend != nil)
    }

    /// A request as the API sees it: its connection's proxy, its JWT checked, the wall clock.
    func asked(_ request: HTTPRequest, on connection: Connection) -> HTTPAPI.Asked {
        HTTPAPI.Asked(request, connection: connection.id, forwarded: connection.forwarded,
                      verified: AccessPolicy.token(of: request).flatMap(verification(of:)), wallMS: unixMilliseconds())
    }

    public func respond(to request: HTTPRequest, on connection: Connection) -> HTTPResponse? {
        let server = connection.server
        switch HTTPAPI(site: site(server)).answer(asked(request, on: connection), hub: hub) {
        case .response(let response):
            return response
        case .page(let page):
            return WebPage.of(page).response(for: request)
        case .metrics:
            var r = HTTPResponse.text(200, server.transportMetrics() + metrics())
            r.headers = [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]
            return r
        case .clusterListing:
            return cluster.map { .json(200, clusterListing($0)) }
        case .webhookStatus:
            return backend.map { .json(200, $0.status) }
        case .command(let command):
            handle(.httpCommand(command), on: server)
            return nil
        case .delete(let name):
            handle(.httpDelete(connection: connection.id, request: request, session: name), on: server)
            return nil
        }
    }

    /// The origins of the cluster's nodes' pages (`http://HOST:PORT` of each node's URL).
    var clusterOrigins: [String] {
        cluster?.nodes.values.compactMap { n in
            guard n.url.hasPrefix("ws://"), let end = n.url.dropFirst(5).firstIndex(of: "/") else { return nil }
            return "http://" + n.url[n.url.index(n.url.startIndex, offsetBy: 5)..<end]
        } ?? []
    }

    /// `GET /api/cluster`: this node, Redis, and the nodes Redis lists; a node whose
    /// heartbeat is older than 5 s is `down` (its members are no longer counted).
    func clusterListing(_ cluster: ClusterStore) -> JSON {
        let now = unixMilliseconds()
        let nodes: [JSON] = cluster.nodes.keys.sorted().map { name in
            let n = cluster.nodes[name]!
            return ["node": .string(name), "url": .string(n.url), "seen": .int(n.seen), "up": .bool(now - n.seen <= 5_000)]
        }
        let replicas: [JSON] = cluster.replication.replicas.map { r in
            .object(JSONObject(r.keys.sorted().map { k in (k, Int64(r[k]!).map(JSON.int) ?? .string(r[k]!)) }))
        }
        var redis: JSONObject = ["url": .string(cluster.url.description), "primary": .string(cluster.primary),
                                 "link": .string(cluster.connected ? "up" : "down"), "role": .string(cluster.replication.role),
                                 "replicas": .array(replicas), "wait": .int(Int64(cluster.waitReplicas))]
        if let why = cluster.notReady { redis["problem"] = .string(why) }
        return ["node": .string(cluster.node), "redis": .object(redis), "connected": .bool(cluster.connected),
                "ready": .bool(cluster.notReady == nil), "nodes": .array(nodes)]
    }

}
