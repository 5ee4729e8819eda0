#!/usr/bin/env bash
# navsync.js: served with ETag and CORS; the server's own origin always allowed, a
# rebinding-style Host refused; then the module in headless Chromium from a page of
# another origin (web_module.py), against a server with --data that it restarts.
. "$(dirname "$0")/lib.sh"

freeport() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
PAGE_PORT=$(freeport)
port=$(freeport)
# The pages of the other origin: the test page, and the example of docs/javascript.md
# exactly as written there (its port made this server's).
PAGES="$OUT/pages-root"; rm -rf "$PAGES"; mkdir -p "$PAGES/pages"
cp "$ROOT/tests/integration/pages/module.html" "$PAGES/pages/"
awk '/^```html/ { inb = 1; next } inb && /^```/ { exit } inb' "$ROOT/docs/javascript.md" | sed "s/7420/$port/g" >"$PAGES/pages/example.html"
"$PY" -m http.server --bind 127.0.0.1 --directory "$PAGES" "$PAGE_PORT" >"$OUT/pages.log" 2>&1 &
PAGES_PID=$!
DATA="$OUT/module-data"; rm -rf "$DATA"
ARGS=(--port "$port" --data "$DATA" --allow-origin "http://127.0.0.1:$PAGE_PORT" --log-level warn)
"$NAVSYNCD" "${ARGS[@]}" >"$OUT/module.out" 2>"$OUT/module.log" &
echo $! >"$OUT/module.pid"
for _ in $(seq 1 100); do [ -s "$OUT/module.out" ] && break; sleep 0.05; done
HTTP="http://127.0.0.1:$port"; WS="ws://127.0.0.1:$port/ws"

AUTH="$OUT/module-auth.json"
echo '{"tokens":[{"token":"module-admin-token-1","role":"admin"},{"token":"module-viewer-token-2","role":"viewer"}]}' >"$AUTH"
start_navsyncd module-auth --auth "$AUTH" --allow-origin "http://127.0.0.1:$PAGE_PORT" --log-level warn
AUTH_PID=$NAVSYNCD_PID; AUTH_WS=$WS_URL
cleanup() { kill "$PAGES_PID" "$AUTH_PID" "$(cat "$OUT/module.pid")" 2>/dev/null || true; }
trap cleanup EXIT

h() { curl -s -o /dev/null -D - "$@" | tr -d '\r'; }
etag=$(h "$HTTP/navsync.js" | awk -F': ' 'tolower($1)=="etag"{print $2}')
check "GET /navsync.js: a JavaScript module, CORS *, an ETag" bash -c \
  "h() { curl -s -o /dev/null -D - \"\$@\" | tr -d '\r'; }; r=\$(h $HTTP/navsync.js); grep -q '^HTTP/1.1 200' <<<\"\$r\" && grep -qi '^Content-Type: text/javascript' <<<\"\$r\" && grep -qi '^Access-Control-Allow-Origin: \*' <<<\"\$r\" && [ -n '$etag' ]"
check "with If-None-Match the module is 304" bash -c "curl -s -o /dev/null -w '%{http_code}' -H 'If-None-Match: $etag' $HTTP/navsync.js | grep -q 304"
check "GET /navsync.d.ts: the types, CORS *" bash -c "curl -s -D - $HTTP/navsync.d.ts | tr -d '\r' | grep -qi '^Access-Control-Allow-Origin: \*' && curl -s $HTTP/navsync.d.ts | grep -q 'export function connect'"
check "the page is cached by ETag too" bash -c "e=\$(curl -s -D - -o /dev/null $HTTP/ | tr -d '\r' | awk -F': ' 'tolower(\$1)==\"etag\"{print \$2}'); curl -s -o /dev/null -w '%{http_code}' -H \"If-None-Match: \$e\" $HTTP/ | grep -q 304"

upgrade() {   # upgrade HOST ORIGIN: the status of a WebSocket upgrade with those headers
    curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H "Host: $1" -H "Origin: $2" -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
        -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$HTTP/ws" || true
}
check "with --allow-origin, the server's own origin is still allowed" test "$(upgrade "127.0.0.1:$port" "http://127.0.0.1:$port")" = 101
check "and localhost on loopback" test "$(upgrade "localhost:$port" "http://localhost:$port")" = 101
check "and the listed origin" test "$(upgrade "127.0.0.1:$port" "http://127.0.0.1:$PAGE_PORT")" = 101
check "an origin equal to a Host that is an IP of this machine is the server's own" bash -c \
  "ip=\$(hostname -I 2>/dev/null | awk '{print \$1}'); [ -z \"\$ip\" ] && exit 0; s=\$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H \"Host: \$ip:$port\" -H \"Origin: http://\$ip:$port\" -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' $HTTP/ws); [ \"\$s\" = 101 ]"
check "a rebinding-style Host: evil.example is refused" test "$(upgrade "evil.example:$port" "http://evil.example:$port")" = 403
check "another origin is refused" test "$(upgrade "127.0.0.1:$port" "http://127.0.0.1:9999")" = 403
check "/healthz tells a page of another origin that it would be refused" bash -c \
  "curl -s -D - -o /dev/null -H 'Origin: http://127.0.0.1:9999' $HTTP/healthz | tr -d '\r' | grep -qi '^X-Navsync-Origin: refused'"

# The test restarts the server on the same port and data directory with this (WIPE=1:
# without its data).
cat >"$OUT/module-restart.sh" <<RESTART
pid=\$(cat "$OUT/module.pid"); kill -TERM \$pid; while kill -0 \$pid 2>/dev/null; do sleep 0.05; done
# WIPE=1: its sessions are lost (as a server without --data loses them): made anew.
if [ -n "\${WIPE:-}" ]; then rm -rf "$DATA"; fi
sleep 0.5
"$NAVSYNCD" ${ARGS[@]} >"$OUT/module.out" 2>>"$OUT/module.log" &
echo \$! >"$OUT/module.pid"
RESTART
py_checks "$ROOT/tests/integration/web_module.py" "$HTTP" "$WS" "http://127.0.0.1:$PAGE_PORT" "$OUT" "$OUT/module-restart.sh" "$AUTH_WS" "$AUTH" "$AUTH_PID"
finish
