#!/usr/bin/env bash
# The navigator that never waits (docs/swift.md, "Three states: confirmed, pending, shown"), on a real network:
# the headless shop's navigator making random binding gestures 20 ms apart through
# the project's fault proxy, scripts/faultproxy (150 ms each way), then across a 3 s outage
# (the app told when the network is back, as a path monitor would), then two
# navigators at once. Each run checks that every gesture read back as written in the
# same turn and that the server's state, the confirmed state and the shown state end
# the same (and, with one navigator, are what the gestures made); it prints the time
# from gesture to shown and to confirmed.
. "$(dirname "$0")/lib.sh"
SHOP="${SHOP_HEADLESS_BIN:-$ROOT/.build/release/shop-headless}"
PROXY="$ROOT/scripts/faultproxy"

start_navsyncd never-waits
ready="$OUT/never-waits-proxy.ready"
rm -f "$ready"
python3 "$PROXY" --upstream "$(echo "${WS_URL#ws://}" | cut -d/ -f1)" --delay-ms 150 --ready-file "$ready" >"$OUT/never-waits-proxy.log" 2>&1 &
proxy=$!
for _ in $(seq 1 100); do [ -s "$ready" ] && break; sleep 0.05; done
SLOW="ws://$(awk '{print $2}' "$ready")/ws"
CONTROL="http://$(awk '{print $4}' "$ready")"
DIRECT="${WS_URL%/ws}/ws"

check "200 gestures 20 ms apart at 150 ms each way: server == shown == meant" \
    bash -c "'$SHOP' '$SLOW' --session slow --gestures 200 --every-ms 20 --seed 1 --check '$DIRECT' >'$OUT/never-waits-slow.out' 2>&1"
( sleep 1.5; curl -s "$CONTROL/dark?seconds=3" >/dev/null ) &
# The app watches the network as NWPathMonitor would (the proxy's /stats) and calls
# reconnectNow() when it is back; the time from then to every gesture made during the
# outage confirmed is printed (3 round trips at 150 ms each way is 900 ms).
check "300 gestures across a 3 s outage: nothing lost, nothing twice (reconnectNow when the network is back)" \
    bash -c "'$SHOP' '$SLOW' --session outage --gestures 300 --every-ms 20 --seed 2 --check '$DIRECT' --watch-network '$CONTROL' --reconnect-now >'$OUT/never-waits-outage.out' 2>&1"
( sleep 1; curl -s "$CONTROL/drop" >/dev/null; sleep 1; curl -s "$CONTROL/drop" >/dev/null ) &
check "200 gestures while the connection is dropped twice (a network switch, the proxy's /drop): nothing lost, nothing twice" \
    bash -c "'$SHOP' '$SLOW' --session dropped --gestures 200 --every-ms 20 --seed 7 --check '$DIRECT' >'$OUT/never-waits-dropped.out' 2>&1"
check "...and the proxy counted both drops" bash -c "curl -s '$CONTROL/stats' | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if s[\"dropped\"] >= 2 else 1)'"
check "two navigators gesturing at once converge on the server's state" \
    bash -c "'$SHOP' '$SLOW' --session two --gestures 200 --every-ms 20 --navigators 2 --seed 3 --check '$DIRECT' >'$OUT/never-waits-two.out' 2>&1"
for f in slow outage dropped two; do echo "   [$f]"; sed 's/^/     /' "$OUT/never-waits-$f.out"; done
kill "$proxy" 2>/dev/null; wait "$proxy" 2>/dev/null || true
stop_navsyncd

# Offline: an app launched with the server down opens on what its store kept, navigates,
# and its commands land once the server is up (--data keeps the session); against a
# session made anew meanwhile, a reset is reported and nothing is replayed onto it.
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="ws://127.0.0.1:$PORT/ws"
DATA="$OUT/never-waits-data"; STORE="$OUT/never-waits-store"; rm -rf "$DATA" "$STORE"
serve() {   # serve [ARGS...]: navsyncd on $PORT until it listens
    "$NAVSYNCD" --port "$PORT" "$@" >>"$OUT/never-waits-offline.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" && return 0; sleep 0.05; done
    return 1
}
serve --data "$DATA"
check "a navigator keeps its session in its store" \
    bash -c "'$SHOP' '$URL' --session demo --gestures 10 --store '$STORE' --seed 4 --check '$URL' >'$OUT/never-waits-stored.out' 2>&1"
kill "$SERVER"; wait "$SERVER" || true
"$SHOP" "$URL" --session demo --gestures 12 --store "$STORE" --offline --seed 5 --check "$URL" >"$OUT/never-waits-offline.out" 2>&1 &
app=$!
sleep 2
serve --data "$DATA"
check "launched with the server down: opens from its store, navigates, and its commands land once it is up" wait "$app"
kill "$SERVER"; wait "$SERVER" || true
rm -rf "$DATA"
"$SHOP" "$URL" --session demo --gestures 6 --store "$STORE" --offline --expect-reset --seed 6 --check "$URL" >"$OUT/never-waits-reset.out" 2>&1 &
app=$!
sleep 2
serve
check "...against a session made anew: a reset is reported and nothing is replayed onto it" wait "$app"
kill "$SERVER"; wait "$SERVER" || true
for f in offline reset; do echo "   [$f]"; sed 's/^/     /' "$OUT/never-waits-$f.out"; done
finish
