import NavSync
/// Connections and protocol v1 messages (docs/protocol.md, "Client messages" and "Who may do what (--auth FILE)").
extension Hub {
    mutating func connect(_ connection: Int, grant: AccessPolicy.Grant?, now: Int64) {
        let id = ids.nextClient()
        peers[connection] = Peer(client: id, name: grant?.label ?? id, role: policy == nil ? .admin : grant?.role, grant: grant,
                                 rate: TokenBucket(burst: configuration.commandBurst, now: now))
        noteExpiry(grant)
    }

    /// A JWT's expiry, for the next check (`closeExpired`).
    mutating func noteExpiry(_ grant: AccessPolicy.Grant?) {
        guard let expires = grant?.expires else { return }
        nextExpiry = min(nextExpiry ?? .max, expires)
    }

    /// Connections whose JWT expired (and was not refreshed by `auth`) are closed with
    /// 1008 "token expired". Checked on the presence tick; a scan only when one is due.
    mutating func closeExpired() {
        guard let due = nextExpiry, time.wallMS >= due + JWT.leewayMS else { return }
        nextExpiry = nil
        var expired: [Int] = []
        for (c, peer) in peers {
            guard let expires = peer.grant?.expires else { continue }
            if time.wallMS >= expires + JWT.leewayMS { expired.append(c) } else { nextExpiry = min(nextExpiry ?? .max, expires) }
        }
        for c in expired.sorted() {
            out.append(.log(.info, "#\(c) \(peers[c]!.name): token expired"))
            peers[c]!.grant = nil
            peers[c]!.role = nil
            out.append(.close(c, code: CloseCode.policyViolation, reason: "token expired"))
        }
    }

    mutating func disconnect(_ connection: Int) {
        guard let peer = peers.removeValue(forKey: connection) else { return }
        // Presence goes out with the next tick (gathered per interval).
        for name in peer.sessions.sorted() {
            if let at = sessions.index(forKey: name), let m = sessions.values[at].remove(connection, detail: configuration.presenceDetail) {
                noteLocal(name, left: m.client)
                noteMembers(name)
            }
        }
    }

    /// Grants follow their tokens; connections whose token is gone are closed with 1008.
    mutating func reload(policy newPolicy: AccessPolicy, verified: [String: JWTVerification]) {
        policy = newPolicy
        var lost: [Int] = []
        nextExpiry = nil
        for (c, peer) in peers {
            guard let old = peer.grant else { continue }
            guard case .success(let grant) = newPolicy.check(old.token, verification: verified[old.token], wallMS: time.wallMS) else {
                lost.append(c)
                continue
            }
            peers[c]!.grant = grant
            peers[c]!.role = peer.requestedRole.map { min($0, grant.role) } ?? grant.role
            noteExpiry(grant)
        }
        out.append(.log(.info, "SIGHUP: auth file reloaded: \(newPolicy.summary); \(lost.count) connections lost theirs"))
        for c in lost.sorted() { out.append(.close(c, code: CloseCode.policyViolation, reason: "token no longer valid")) }
    }

    /// A message from a connection: decoded, allowed, then served (in cluster mode a
    /// read waits for the replica first, and is served when it is up to date).
    mutating func message(_ request: ClientRequest, from c: Int, verified: JWTVerification?, now: Int64) {
        guard var peer = peers[c] else { return }
        let first = !peer.greeted
        peer.greeted = true
        peers[c] = peer
        let message: ClientMessage
        switch request.message {
        case .failure(let e): return emit(.send(to: c, .error(e), id: request.id))
        case .success(let m): message = m
        }
        if let refusal = permission(message, peer) { return emit(.send(to: c, .error(refusal), id: request.id)) }
        // Cluster mode: a join, sync or get is answered once the replica has caught up
        // with what Redis holds (docs/cluster.md, "How it works"); requests arriving meanwhile wait together.
        // One this node does not hold (yet) is read from Redis first: unknown only when
        // Redis has no such session either.
        if isClustered, let name = message.readSession {
            guard sessions[name] != nil || cluster.storeUp else {
                return emit(.send(to: c, .error(NavError(.unavailable, "store unavailable: \(cluster.storeDown ?? "not connected to Redis"); try again")), id: request.id))
            }
            return parkForRead(name, Parked(connection: c, message: message, id: request.id, now: now))
        }
        serve(message, id: request.id, from: c, first: first, verified: verified, now: now)
    }

    /// Answers one allowed message (`first`: the first of its connection).
    mutating func serve(_ message: ClientMessage, id requestID: JSON?, from c: Int, first: Bool,
                        verified: JWTVerification? = nil, now: Int64) {
        guard var peer = peers[c] else { return }
        func reply(_ m: ServerMessage) { emit(.send(to: c, m, id: requestID)) }
        func error(_ code: ErrorCode, _ message: String) { reply(.error(NavError(code, message))) }

        switch message {
        case .hello(let h):
            guard first else { return error(.badRequest, "'hello' must be the first message of a connection") }
            if let client = h.client {
                guard ClientRequest.isValidClientID(client) else {
                    return error(.badRequest, "'client' must be 1-64 letters, digits or -_.: characters")
                }
                peer.client = client
            }
            if let token = h.token, let policy {
                switch policy.check(token, verification: verified, wallMS: time.wallMS) {
                case .failure(let refusal): return error(.forbidden, refusal.description)
                case .success(let grant):
                    peer.grant = grant
                    peer.role = grant.role
                    noteExpiry(grant)
                }
            }
            if let role = h.role {
                guard let r = Role(rawValue: role) else { return error(.badRequest, "'role' must be viewer, controller or admin") }
                peer.requestedRole = r
                peer.role = peer.role.map { min(r, $0) }
            }
            peer.name = h.name.map { String($0.prefix(128)) } ?? peer.grant?.label ?? peer.client
            peers[c] = peer
            reply(.welcome(.init(client: peer.client, server: configuration.serverName,
                                 heartbeat: configuration.heartbeat, limits: configuration.limits)))

        case .join(let j):
            joinAsking(j, peer, c, requestID)

        case .auth(let token):
            guard let policy else { return error(.badRequest, "this server has no auth file and no --jwt-key: there is no token to refresh") }
            let grant: AccessPolicy.Grant
            switch policy.check(token, verification: verified, wallMS: time.wallMS) {
            case .failure(let refusal): return error(.forbidden, "\(refusal); the token before stays in force")
            case .success(let g): grant = g
            }
            if let old = peer.grant, grant.role > old.role {
                return error(.forbidden, "a refresh may not raise the role (\(old.role.rawValue) to \(grant.role.rawValue)); the token before stays in force")
            }
            if let outside = peer.sessions.sorted().first(where: { !grant.allows(session: $0) }) {
                return error(.forbidden, "the new token does not allow session '\(outside)', which this connection is in; the token before stays in force")
            }
            peer.grant = grant
            peer.role = peer.requestedRole.map { min($0, grant.role) } ?? grant.role
            if peer.name == peer.client, let label = grant.label { peer.name = label }
            peers[c] = peer
            noteExpiry(grant)
            reply(.auth(role: peer.role!.rawValue, expires: grant.expires.map { $0 / 1000 }))

        case .leave(let name):
            if let at = sessions.index(forKey: name), let m = sessions.values[at].remove(c, detail: configuration.presenceDetail) {
                peers[c]?.sessions.removeAll { $0 == name }
                peers[c]?.paused.removeAll { $0 == name }
                noteLocal(name, left: m.client)
                noteMembers(name)
            }
            reply(.left(session: name))

        case .command(let name, let object):
            guard peers[c]!.rate.take(now: now, rate: configuration.commandRate, burst: configuration.commandBurst) else {
                commandOutcomes["rate_limited", default: 0] += 1
                return error(.rateLimited, "more than \(Int(configuration.commandRate)) commands a second (burst \(configuration.commandBurst)); slow down")
            }
            submit(Submission(session: name, object: object, client: peer.client, name: peer.name, role: peer.role ?? .viewer,
                              reply: .socket(c, id: requestID), admission: peer.backend?.admitted[name]))

        case .sync(let name, let since, let epoch):
            guard let s = sessions[name] else { return error(.unknownSession, "no session '\(name)'") }
            let seq = s.sequencer
            if epoch == seq.epoch, let patches = seq.patches(since: since) {
                for p in patches { reply(.patch(session: name, p)) }
                return reply(.synced(session: name, rev: seq.rev))
            }
            reply(.snapshot(session: name, rev: seq.rev, state: seq.state.json))

        case .status(let name, let rev, let focus):
            guard sessions[name] != nil else { return error(.unknownSession, "no session '\(name)'") }
            guard sessions[name]!.members[c] != nil else { return error(.badRequest, "not a member of '\(name)'; join it first") }
            sessions.values[sessions.index(forKey: name)!].setStatus(c, rev: rev, focus: focus)
            noteLocal(name, status: sessions[name]!.members[c])

        case .get(let name):
            guard let s = sessions[name] else { return error(.unknownSession, "no session '\(name)'") }
            reply(.snapshot(session: name, rev: s.sequencer.rev, state: s.sequencer.state.json))

        case .getRevision(let name, let rev):
            switch revision(rev, of: name) {
            case .success(let message): reply(message)
            case .failure(let e): reply(.error(e))
            }

        case .history(let name, let before, let limit):
            guard let s = sessions[name] else { return error(.unknownSession, "no session '\(name)'") }
            let h = s.sequencer.history
            reply(.history(session: name, rev: s.sequencer.rev, earliest: h.earliest, entries: h.page(before: before, limit: limit)))

        case .delete(let name):
            if let refusal = deleteSession(name, by: peer.client, requester: c) { return reply(.error(refusal)) }
            reply(.deleted(session: name, by: peer.client))

        case .sessions:
            reply(.sessions(sessionSummaries.filter { peer.grant?.allows(session: $0.session) ?? true }))

        case .ping:
            reply(.pong)
        }
    }

    mutating func join(_ j: ClientMessage.Join, _ peer: Peer, _ c: Int, _ id: JSON?) {
        func refuse(_ e: NavError) { emit(.send(to: c, .error(e), id: id)) }
        if sessions[j.session] == nil {
            guard j.create else {
                return refuse(NavError(.unknownSession, "no session '\(j.session)'; send \"create\": true to make it"))
            }
            guard peer.role == .admin else {
                return refuse(NavError(.forbidden, "role \(peer.role?.rawValue ?? "none") may not create sessions: that needs admin"))
            }
            if isClustered {
                // Made in Redis first (or read, when another node made it meanwhile).
                let flowName = j.flow ?? Flow.demo.name
                guard let flow = flows[flowName] else {
                    return refuse(NavError(.notFound, "no flow '\(flowName)' (known: \(flows.keys.sorted().joined(separator: ", ")))"))
                }
                guard sessions.count < configuration.maxSessions else {
                    return refuse(NavError(.full, "the server holds \(configuration.maxSessions) sessions, its limit"))
                }
                return parkJoin(j, c, id, flow: flow)
            }
            do throws(NavError) { try createSession(j.session, flow: j.flow ?? Flow.demo.name) } catch { return refuse(error) }
        }
        // The session is changed through the dictionary's values in place:
        // `sessions[name]!.add(…)` copied it out and back (its tables shared meanwhile,
        // so changing them copied them), and a copy held across the changes did too.
        let at = sessions.index(forKey: j.session)!
        let existing = sessions.values[at].members[c]
        guard existing != nil || sessions.values[at].members.count < configuration.maxMembers else {
            return refuse(NavError(.full, "session '\(j.session)' has \(configuration.maxMembers) members, its limit"))
        }
        let member = existing ?? Member(client: peer.client, name: peer.name, role: (peer.role ?? .viewer).rawValue,
                                        user: peers[c]?.backend?.admitted[j.session]?.user)
        sessions.values[at].add(c, member)
        if existing == nil { noteLocal(j.session, joined: member) }
        if existing == nil { noteMembers(j.session) }
        if !peers[c]!.sessions.contains(j.session) { peers[c]!.sessions.append(j.session) }

        let catchUp: ServerMessage.CatchUp
        var stateBytes: [UInt8]?
        if let since = j.since, j.epoch == sessions.values[at].sequencer.epoch, let patches = sessions.values[at].sequencer.patches(since: since) {
            catchUp = .patches(patches)
        } else {
            let state = sessions.values[at].joinedState()
            catchUp = .state(state.json)
            stateBytes = state.bytes
        }
        // The others learn of the join with the next presence (gathered per interval).
        let (listed, unlisted, others, encodedMembers, joiner) = sessions.values[at].joinedListing(for: c, detail: configuration.presenceDetail)
        let s = sessions.values[at]
        var joined = ServerMessage.Joined(session: j.session, epoch: s.sequencer.epoch, rev: s.sequencer.rev, flow: s.flow.source,
                                          listed: listed, unlisted: unlisted, others: others, catchUp: catchUp)
        joined.encoded = .init(flow: s.flowBytes, members: encodedMembers, joiner: joiner, state: stateBytes)
        emit(.send(to: c, .joined(joined), id: id))
    }

    /// The presence interval passed.
    mutating func tick(busy: Bool) {
        vacate()
        publishLocalPresence()
        flushPresence(busy: busy)
        closeExpired()
        trimHistory()
    }

    /// Every session's presence gathered since the last tick, one message each, to
    /// every member (docs/protocol.md, "Server messages, unasked"). While the server is
    /// `busy`, a session's presence waits, up to `presenceMaxDelay` from the first tick
    /// that held it: a herd of joins saturating the loop made a presence message per
    /// session every interval, most of the herd's writes (docs/architecture.md,
    /// "Measured reasons in the code").
    mutating func flushPresence(busy: Bool = false) {
        for name in sessions.keys.sorted() where sessions[name]!.hasPresence {
            let i = sessions.index(forKey: name)!
            if busy {
                let since = sessions.values[i].presenceHeldSince ?? time.ms
                if time.ms - since < configuration.presenceMaxDelay {
                    sessions.values[i].presenceHeldSince = since
                    continue
                }
            }
            sessions.values[i].presenceHeldSince = nil
            guard let p = sessions.values[i].takePresence(
                detail: configuration.presenceDetail, now: time.ms, countInterval: configuration.presenceCountInterval) else { continue }
            broadcast(name, .presence(session: name, p))
        }
    }

    /// Deletes a session (admin; docs/protocol.md, "Who may do what (--auth FILE)"): its members are told and leave
    /// it, its journal goes, and its name is free again. nil when done, else why not.
    mutating func deleteSession(_ name: String, by client: String, requester: Int?) -> NavError? {
        guard let session = sessions[name] else { return NavError(.unknownSession, "no session '\(name)'") }
        if let e = frozen[name] { return e }
        let members = session.memberOrder.filter { $0 != requester }
        noteSession("session.deleted", name, extra: ["by": .string(client)])
        hooks.occupied.remove(name)
        hooks.vacating[name] = nil
        removeSession(name)
        writeJournal(.delete(session: name))
        if isClustered {
            cluster.replicas[name] = nil
            out.append(.cluster(.delete(session: name)))
        }
        if !members.isEmpty { emit(.broadcast(session: name, .deleted(session: name, by: client), to: members)) }
        out.append(.log(.info, "session '\(name)' deleted by \(client) (\(session.members.count) members told)"))
        return nil
    }

    /// What a connection may send (docs/protocol.md, "Who may do what (--auth FILE)"): without a token only `hello`
    /// and `ping`; `viewer` no commands; a token with session patterns only those
    /// sessions. Creating sessions is checked at the join, and admin-only operations by
    /// the sequencer on the operations that run.
    private func permission(_ message: ClientMessage, _ peer: Peer) -> NavError? {
        switch message {
        case .hello, .ping, .auth: return nil
        default: break
        }
        guard let role = peer.role else {
            return NavError(.forbidden, "this connection has no token: send one in hello (\"token\"), an Authorization: Bearer header, or ?token= on the upgrade")
        }
        if case .command = message, role < .controller {
            return NavError(.forbidden, "role \(role.rawValue) may not send commands: that needs controller or admin")
        }
        if case .delete = message, role < .admin {
            return NavError(.forbidden, "role \(role.rawValue) may not delete sessions: that needs admin")
        }
        let session: String?
        switch message {
        case .join(let j): session = j.session
        case .command(let s, _), .sync(let s, _, _), .status(let s, _, _), .get(let s), .delete(let s),
             .getRevision(let s, _), .history(let s, _, _): session = s
        default: session = nil
        }
        if let session, let grant = peer.grant, !grant.allows(session: session) {
            return NavError(.forbidden, "\(grant.name) may not use session '\(session)' (allowed: \(grant.sessions?.joined(separator: ", ") ?? "all"))")
        }
        return nil
    }
}
