#!/usr/bin/env bash
# The repository's own benchmark tools (bench/): the load generator fanout.c and the
# bare C server broadcast.c, built as scripts/bench builds them, count every copy and
# every loss right against navsyncd, Redis pub/sub and each other; and the command the
# README quotes its fan-out figures from runs as written, at a small size.
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
CC="${CC:-$(command -v cc || command -v clang)}"
B="$OUT/bench-tools"; mkdir -p "$B"
check "bench/fanout.c builds" "$CC" -O2 -Wall -Werror -o "$B/fanout" bench/fanout.c
check "bench/broadcast.c builds (libuv, OpenSSL)" "$CC" -O2 -Wall -Werror -o "$B/broadcast" bench/broadcast.c -luv -lcrypto
check "fanout --help" bash -c "'$B/fanout' --help | grep -q -- '--subs'"
check "fanout without --port, or with an unknown option, says so and exits 2" bash -c \
    "'$B/fanout' 2>&1 | grep -q -- '--port is required'; [ \${PIPESTATUS[0]} -eq 2 ] && ! '$B/fanout' --port 1 --nope 2>/dev/null && '$B/fanout' --port 1 --nope 2>&1 | grep -q 'unknown option --nope'"
check "broadcast without --port prints its usage and exits 2" bash -c "'$B/broadcast' 2>&1 | grep -q usage; [ \${PIPESTATUS[0]} -eq 2 ]"
fig() { tr ' ' '\n' | grep -E "^$1=" | cut -d= -f2; }

"$B/broadcast" --port 0 >"$B/broadcast.out" & BPID=$!
for _ in $(seq 50); do [ -s "$B/broadcast.out" ] && break; sleep 0.1; done
BPORT="$(awk '{print $3}' "$B/broadcast.out")"
out=$("$B/fanout" --port "$BPORT" --subs 50 --msgs 500 --server-pid $BPID --timeout 30 || true)
echo "   broadcast: $out"
check "broadcast: 50 members get all 500 messages (25,000 copies), none lost" \
    test "$(fig deliveries <<<"$out")/$(fig lost <<<"$out")" = "25000/0"
check "...and the server's CPU is read from /proc" awk -v c="$(fig srv_cpu_s <<<"$out")" -v r="$(fig srv_rss_start_kb <<<"$out")" 'BEGIN { exit !(c >= 0 && r > 0) }'
# Copies that do not match are not counted: every one is reported lost.
out=$("$B/fanout" --port "$BPORT" --subs 5 --msgs 10 --match nothing-has-this --timeout 30 || true)
check "fanout reports what did not arrive as lost (5 members x 10 messages)" test "$(fig lost <<<"$out")" = 50
kill $BPID; wait $BPID 2>/dev/null || true

# navsyncd: 60 members in 6 sessions, a publisher in each, commands through the sequencer.
start_navsyncd bench-tools --flows bench --rate 1000000 --burst 1000000
PORT="${WS_URL#ws://127.0.0.1:}"; PORT="${PORT%/ws}"
T='{"type":"command","id":{seq},"session":"s{session}","ops":[{"op":"setStack","routes":[{"route":"home"},{"route":"detail","params":{"id":{seq},"note":"ts={ts}"}}]}]}'
out=$("$B/fanout" --port "$PORT" --path /ws --subprotocol navsync.v1 --subs 60 --sessions 6 --pub-join \
    --join '{"type":"join","session":"s{session}","create":true,"flow":"bench"}' \
    --msgs 600 --template "$T" --match '"patch"' --server-pid "$NAVSYNCD_PID" --timeout 30 || true)
echo "   navsyncd: $out"
check "navsyncd: 600 commands over 6 sessions reach their 10 members each (6,000 patches), none lost, no error" \
    test "$(fig deliveries <<<"$out")/$(fig lost <<<"$out")/$(fig errors <<<"$out")" = "6000/0/0"
check "...each session has its 100 revisions" bash -c "curl -sf '${HTTP_URL}api/sessions/s3' | grep -q '\"rev\":100'"
out=$("$B/fanout" --port "$PORT" --path /ws --subprotocol navsync.v1 --subs 20 --pub-join \
    --join '{"type":"join","session":"paced","create":true,"flow":"bench"}' --msgs 40 --rate 200 --rx-ts kernel \
    --template "${T//s\{session\}/paced}" --match '"patch"' --timeout 30 || true)
check "at a fixed rate with kernel receive times: every copy, a latency measured" \
    awk -v l="$(fig lost <<<"$out")" -v p="$(fig lat_p50_us <<<"$out")" -v x="$(fig lat_max_us <<<"$out")" 'BEGIN { exit !(l == 0 && p > 0 && x >= p) }'
stop_navsyncd

if command -v redis-server >/dev/null; then
    RPORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no >/dev/null & RPID=$!
    for _ in $(seq 50); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
    out=$("$B/fanout" --proto resp --port "$RPORT" --subs 30 --sessions 3 --channel 'c{session}' --msgs 300 --server-pid $RPID --timeout 30 || true)
    echo "   redis: $out"
    check "Redis pub/sub: 300 messages over 3 channels reach their 10 subscribers each, none lost" \
        test "$(fig deliveries <<<"$out")/$(fig lost <<<"$out")" = "3000/0"
    kill $RPID; wait $RPID 2>/dev/null || true
    # The README's fan-out figures come from this command (there with 1000 members, 5 rounds).
    check "scripts/bench --fanout 100 1 runs as the README gives it and prints the ratios" \
        bash -c "scripts/bench --fanout 100 1 >'$B/fanout-bench.txt' 2>&1 && grep -q 'navsyncd/broadcast [0-9.]*, navsyncd/redis [0-9.]*' '$B/fanout-bench.txt'"
    sed 's/^/   /' "$B/fanout-bench.txt" | grep -v '^   \[' | tail -5
fi
finish
