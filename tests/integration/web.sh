#!/usr/bin/env bash
# The web device page in headless Chromium (Debian's chromium + chromium-driver,
# Python selenium): the phone layout, then two pages on one session, navclient and
# clicks, a server restart.
. "$(dirname "$0")/lib.sh"

start_navsyncd web
port="${WS_URL##*:}"; port="${port%%/*}"
# The test calls this to restart the server on the same port.
cat >"$OUT/web-restart.sh" <<RESTART
kill -TERM $NAVSYNCD_PID; while kill -0 $NAVSYNCD_PID 2>/dev/null; do sleep 0.05; done
sleep 1
"$NAVSYNCD" --port $port --log-level warn >"$OUT/web-restarted.out" 2>"$OUT/web-restarted.log" &
echo \$! >"$OUT/web-restarted.pid"
for i in \$(seq 1 100); do [ -s "$OUT/web-restarted.out" ] && break; sleep 0.05; done
RESTART
"$PY" "$ROOT/tests/integration/web_phone.py" "$HTTP_URL" "$OUT"
phone=$?
"$PY" "$ROOT/tests/integration/web_pages.py" "$HTTP_URL" "$WS_URL" "$NAVCLIENT" "$OUT" "$OUT/web-restart.sh"
rc=$?
[ "$phone" -eq 0 ] || rc=1
kill -INT "$(cat "$OUT/web-restarted.pid" 2>/dev/null)" 2>/dev/null || true
exit $rc
