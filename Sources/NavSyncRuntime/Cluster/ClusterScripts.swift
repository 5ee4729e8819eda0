import NavSync
import NavSyncServer
/// The keys and Lua scripts of cluster mode (docs/cluster.md, "How it works"). Each change to a
/// session is one script, so Redis runs it atomically: no other node's command can
/// come between its check and its writes.
///
/// Keys (the hash tag `{S}` keeps a session on one Redis Cluster slot):
/// `navsync:{S}:meta` (hash: flow, epoch, rev, last, created, runid), `navsync:{S}:log`
/// (stream: revision R at `R-1`, commands that changed nothing after it at `R-2`, …;
/// fields `k` = r|n and `j` = the journal record), `navsync:{S}:snap` (hash: `at`, the
/// log position, and `data`, the snapshot), `navsync:{S}:live` (pub/sub),
/// `navsync:sessions` (set of names), `navsync:nodes` (hash: node -> url, heartbeat).
enum ClusterScripts {
    static let sessionsKey = "navsync:sessions"
    static let nodesKey = "navsync:nodes"
    static let livePattern = "navsync:{*}:live"

    static func key(_ session: String, _ part: String) -> String { "navsync:{\(session)}:\(part)" }

    static func session(ofLive channel: String) -> String? {
        guard channel.hasPrefix("navsync:{"), channel.hasSuffix("}:live") else { return nil }
        return String(channel.dropFirst("navsync:{".count).dropLast("}:live".count))
    }

    /// Stream ids compared in Lua.
    private static let compare = """
        local function parse(id) local a, b = string.match(id, '^(%d+)-(%d+)$'); return tonumber(a), tonumber(b) end
        local function before(x, y)
          local a1, b1 = parse(x); local a2, b2 = parse(y)
          return a1 < a2 or (a1 == a2 and b1 < b2)
        end
        """

    /// A Redis that restarted (its run id changed since the session's last write) may
    /// have lost the newest writes: the session gets a new epoch, so no client can take
    /// a revision it saw for the one Redis now holds under the same number. The same
    /// session still: the new epoch keeps the lineage, `LINEAGE/GENERATION`
    /// (docs/protocol.md, "Epochs"), so clients resend what waited rather than reset.
    private static let checkRun = """
        local function checkRun(meta, live, runid, epoch)
          if redis.call('HGET', meta, 'runid') ~= runid then
            local lineage = string.match(redis.call('HGET', meta, 'epoch') or '', '^[^/]+') or epoch
            redis.call('HSET', meta, 'epoch', lineage .. '/' .. epoch, 'runid', runid)
            redis.call('PUBLISH', live, 'c epoch')
            return true
          end
          return false
        end
        """

    /// KEYS meta, snap, sessions, live; ARGV name, flow, epoch, created, snapshot, runid.
    /// 1 made, 0 it existed.
    static let create = """
        if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
        redis.call('HSET', KEYS[1], 'flow', ARGV[2], 'epoch', ARGV[3], 'rev', 0, 'last', '0-0', 'created', ARGV[4], 'runid', ARGV[6])
        redis.call('HSET', KEYS[2], 'at', '0-0', 'data', ARGV[5])
        redis.call('SADD', KEYS[3], ARGV[1])
        redis.call('PUBLISH', KEYS[4], 'c created')
        return 1
        """

    /// Compare-and-append. KEYS meta, log, live; ARGV epoch, after, runid, new epoch,
    /// then kind and record for each entry. {'ok', last} | {'moved'} | {'gone'}.
    static let append = checkRun + "\n" + """
        local m = redis.call('HMGET', KEYS[1], 'epoch', 'last', 'rev')
        if not m[1] then return {'gone'} end
        if checkRun(KEYS[1], KEYS[3], ARGV[3], ARGV[4]) then return {'moved'} end
        if m[1] ~= ARGV[1] or m[2] ~= ARGV[2] then return {'moved'} end
        local rev = tonumber(m[3])
        local last = m[2]
        for i = 5, #ARGV, 2 do
          local id
          if ARGV[i] == 'r' then
            rev = rev + 1
            id = redis.call('XADD', KEYS[2], rev .. '-1', 'k', 'r', 'j', ARGV[i + 1])
          else
            id = redis.call('XADD', KEYS[2], rev .. '-*', 'k', 'n', 'j', ARGV[i + 1])
          end
          redis.call('PUBLISH', KEYS[3], 'r ' .. last .. ' ' .. id .. ' ' .. ARGV[i] .. ARGV[i + 1])
          last = id
        end
        redis.call('HSET', KEYS[1], 'rev', rev, 'last', last)
        return {'ok', last}
        """

    /// KEYS meta, snap, log, live; ARGV after ('' for the whole session), runid, new
    /// epoch, at most how many entries. {'gone'} | {'entries', epoch, id, k, j, …} |
    /// {'whole', flow, epoch, snapshot, at, id, k, j, …}: whole when asked, when the log
    /// no longer reaches back to `after`, or when the epoch changed. A full page means
    /// more may follow: the caller reads on from its last entry.
    static let read = compare + "\n" + checkRun + "\n" + """
        local m = redis.call('HMGET', KEYS[1], 'epoch', 'flow', 'last')
        if not m[1] then return {'gone'} end
        local renewed = checkRun(KEYS[1], KEYS[4], ARGV[2], ARGV[3])
        local epoch = redis.call('HGET', KEYS[1], 'epoch')
        local at = redis.call('HGET', KEYS[2], 'at') or '0-0'
        local out, from
        if ARGV[1] ~= '' and not renewed and not before(ARGV[1], at) and not before(m[3], ARGV[1]) then
          out = {'entries', epoch}
          from = ARGV[1]
        else
          out = {'whole', m[2], epoch, redis.call('HGET', KEYS[2], 'data'), at}
          from = at
        end
        for _, e in ipairs(redis.call('XRANGE', KEYS[3], '(' .. from, '+', 'COUNT', ARGV[4])) do
          local k, j
          for i = 1, #e[2], 2 do
            if e[2][i] == 'k' then k = e[2][i + 1] elseif e[2][i] == 'j' then j = e[2][i + 1] end
          end
          out[#out + 1] = e[1]; out[#out + 1] = k; out[#out + 1] = j
        end
        return out
        """

    /// KEYS meta, snap, log; ARGV epoch, at, data. Stored only if newer than the one
    /// there and not past the log's end; the log is trimmed below it. 1 stored, 0 not.
    static let snapshot = compare + "\n" + """
        local m = redis.call('HMGET', KEYS[1], 'epoch', 'last')
        if not m[1] or m[1] ~= ARGV[1] then return 0 end
        local cur = redis.call('HGET', KEYS[2], 'at')
        if cur and not before(cur, ARGV[2]) then return 0 end
        if before(m[2], ARGV[2]) then return 0 end
        redis.call('HSET', KEYS[2], 'at', ARGV[2], 'data', ARGV[3])
        redis.call('XTRIM', KEYS[3], 'MINID', ARGV[2])
        return 1
        """

    /// KEYS meta, snap, log, live, sessions; ARGV name.
    static let delete = """
        redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
        redis.call('SREM', KEYS[5], ARGV[1])
        redis.call('PUBLISH', KEYS[4], 'c deleted')
        return 1
        """
}
