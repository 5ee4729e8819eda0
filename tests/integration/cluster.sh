#!/usr/bin/env bash
# Cluster mode (docs/cluster.md, "How it works"): the flags, then Redis and three nodes under
# faults (cluster_faults.py): writers racing on every node, SIGKILL x10, SIGSTOP,
# Redis dropping connections, Redis down for 5 s, Redis restarted empty.
. "$(dirname "$0")/lib.sh"
command -v redis-server >/dev/null || { echo "cluster.sh: redis-server is not installed (scripts/test installs it)"; exit 1; }

usage() {   # usage EXPECTED-TEXT ARGS...: navsyncd refuses ARGS with exit 2 and the text.
    local want="$1"; shift
    "$NAVSYNCD" --port 0 "$@" >/dev/null 2>"$OUT/cluster-usage.err"
    [ $? -eq 2 ] && grep -q -- "$want" "$OUT/cluster-usage.err"
}
check "--cluster with --data is a usage error" usage "--cluster and --data exclude each other" --cluster redis://127.0.0.1:6379 --data /tmp/x
check "--cluster takes only Redis URLs, saying which" usage "starts with redis://, rediss://, redis+sentinel://" --cluster http://127.0.0.1:6379
check "--cluster: a bad database is named" usage "the database must be 0-15" --cluster redis://127.0.0.1:6379/99
check "--cluster: ?cacert= is for rediss://" usage "is for rediss://" --cluster "redis://127.0.0.1:6379?cacert=/x"
check "--redis-password-file with a password in the URL is an error" usage "exclude each other: give it once" \
    --cluster redis://u:p@127.0.0.1:6379 --redis-password-file /dev/null
check "--redis-wait needs --cluster" usage "--redis-wait needs --cluster" --redis-wait 1
check "--redis-wait takes 0-16" usage "--redis-wait needs a number of replicas" --cluster redis://127.0.0.1:6379 --redis-wait x
check "--redis-wait-hold needs --cluster" usage "--redis-wait-hold needs --cluster" --redis-wait-hold 100
check "--redis-wait=1 needs --cluster too (the = form)" usage "--redis-wait needs --cluster" --redis-wait=1
check "--redis-wait-hold takes milliseconds" usage "--redis-wait-hold needs milliseconds from 0 to 600000" --cluster redis://127.0.0.1:6379 --redis-wait-hold -1
: >"$OUT/empty-password"
check "an empty --redis-password-file stops navsyncd at start" bash -c \
    "'$NAVSYNCD' --port 0 --cluster redis://u@127.0.0.1:6379 --redis-password-file '$OUT/empty-password' >'$OUT/pw.err' 2>&1; [ \$? -eq 1 ] && grep -q 'is empty' '$OUT/pw.err'"
check "an unreadable --redis-password-file stops navsyncd at start" bash -c \
    "'$NAVSYNCD' --port 0 --cluster redis://u@127.0.0.1:6379 --redis-password-file /nonexistent >'$OUT/pw.err' 2>&1; [ \$? -eq 1 ] && grep -q 'cannot read --redis-password-file /nonexistent' '$OUT/pw.err'"
check "--node needs --cluster" usage "--node needs --cluster" --node a
check "--fsync is for --data, not --cluster" usage "in a cluster, Redis's appendfsync decides" --cluster redis://localhost:6379 --fsync always

start_navsyncd single
check "a single node's /healthz does not claim a cluster" bash -c "! curl -s -D - -o /dev/null '${HTTP_URL}healthz' | grep -qi '^X-Navsync-Cluster'"
check "GET /api/cluster on a single node is 404, saying so" bash -c \
    "[ \"\$(curl -s -o '$OUT/cl.json' -w '%{http_code}' '${HTTP_URL}api/cluster')\" = 404 ] && grep -q 'not in a cluster' '$OUT/cl.json'"
stop_navsyncd

# A node whose Redis is not there yet starts, says so, and serves once Redis is up.
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_navsyncd early --cluster "redis://127.0.0.1:$PORT" --node early
check "a node started before Redis answers commands with unavailable (503), naming the store (not unknown_session)" bash -c \
    "sleep 0.5; [ \"\$(curl -s -o '$OUT/cl.json' -w '%{http_code}' -X POST -d '{\"id\":1,\"ops\":[{\"op\":\"pop\"}]}' '${HTTP_URL}api/sessions/demo/commands')\" = 503 ] &&
     grep -q 'store unavailable: cannot connect to 127.0.0.1:$PORT' '$OUT/cl.json'"
check "...its /readyz is 503 with the reason, its /healthz 200" bash -c \
    "[ \"\$(curl -s -o '$OUT/ready.json' -w '%{http_code}' '${HTTP_URL}readyz')\" = 503 ] && grep -q '\"ready\":false' '$OUT/ready.json' &&
     grep -q 'cannot connect to 127.0.0.1:$PORT' '$OUT/ready.json' && curl -sf -o /dev/null '${HTTP_URL}healthz'"
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no >"$OUT/cluster-early-redis.log" 2>&1 &
REDIS_PID=$!
check "...and once Redis is up it makes the demo session and takes commands" bash -c \
    "for i in \$(seq 50); do curl -sf -o /dev/null '${HTTP_URL}api/sessions/demo' && break; sleep 0.1; done;
     curl -s -X POST -H 'X-Navsync-Client: t' -d '{\"id\":1,\"ops\":[{\"op\":\"setRoot\",\"route\":\"main\"}]}' '${HTTP_URL}api/sessions/demo/commands' | grep -q '\"rev\":1'"
check "...and the command is in Redis's log" bash -c "redis-cli -p $PORT XLEN 'navsync:{demo}:log' | grep -qx 1"
check "...and /readyz is 200 once Redis is there" bash -c "curl -s '${HTTP_URL}readyz' | grep -q '\"ready\":true'"
check "a cluster node's /healthz names it (X-Navsync-Cluster)" bash -c "curl -s -D - -o /dev/null '${HTTP_URL}healthz' | grep -qi '^X-Navsync-Cluster: early'"
stop_navsyncd
kill "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true

py_checks "$ROOT/tests/integration/cluster_faults.py" "$NAVSYNCD" "$OUT"
py_checks "$ROOT/tests/integration/cluster_web.py" "$NAVSYNCD" "$OUT"
finish
