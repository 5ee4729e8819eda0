#!/usr/bin/env bash
# The WebSocket layer alone (navsyncd --ws-echo) with a stock outside client,
# Python websockets, and curl; then shutdown by signal.
. "$(dirname "$0")/lib.sh"

start_navsyncd echo --ws-echo --log-level info
"$PY" "$ROOT/tests/integration/echo_client.py" "$WS_URL"

check "curl /healthz" bash -c "curl -sf '${HTTP_URL}healthz' | grep -qx ok"
check "curl unknown path is 404" bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' '${HTTP_URL}nope')\" = 404 ]"
check "curl upgrade with version 8 is 426" bash -c "curl -s -i -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 8' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' '${HTTP_URL}ws' | grep -q '^Sec-WebSocket-Version: 13'"

# SIGTERM while a client is connected: the client sees 1001, navsyncd exits 0.
"$PY" - "$WS_URL" "$NAVSYNCD_PID" >"$OUT/echo-shutdown.txt" 2>&1 <<'PYEOF' &
import asyncio, os, signal, sys, websockets
async def main():
    async with websockets.connect(sys.argv[1]) as ws:
        await ws.send("x"); await ws.recv()
        os.kill(int(sys.argv[2]), signal.SIGTERM)
        try:
            await asyncio.wait_for(ws.recv(), 5)
        except websockets.exceptions.ConnectionClosed as e:
            print("close code", e.rcvd.code if e.rcvd else None)
asyncio.run(main())
PYEOF
client=$!
rc=0; wait "$NAVSYNCD_PID" || rc=$?
wait $client || true
check "SIGTERM exits 0" test "$rc" -eq 0
check "SIGTERM closes clients with 1001" grep -q "close code 1001" "$OUT/echo-shutdown.txt"
check "log names peer and close code" grep -qE "#[0-9]+ 127\.0\.0\.1:[0-9]+ closed: close 1000" "$OUT/echo.log"
finish
