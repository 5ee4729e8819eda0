#!/usr/bin/env bash
# docs/backend.md as written: `scripts/demo --backend` (the example backend beside
# navsyncd, on 7420 and 7421), then the page's curl lines, its Python client and its
# pytest example, and the webhook events the backend logged.
. "$(dirname "$0")/lib.sh"
DOC="$ROOT/docs/backend.md"
PY="$ROOT/.venv/bin/python"
for port in 7420 7421; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "backend_docs.sh: port $port is taken; the recipe needs it"; exit 1; fi
done
( cd "$ROOT" && exec scripts/demo --backend ) >"$OUT/backend-demo.log" 2>&1 &
demo=$!
cleanup() { pkill -P $demo 2>/dev/null || true; kill $demo 2>/dev/null || true; wait $demo 2>/dev/null || true; rm -f /tmp/jar; }
trap cleanup EXIT
up() { for _ in $(seq 600); do curl -s -o /dev/null "localhost:$1/$2" && return 0; sleep 0.1; done; return 1; }
check "scripts/demo --backend starts navsyncd and the example backend" bash -c "$(declare -f up); up 7420 healthz && up 7421 cart"

# The page's sh blocks, one command per line (continuations joined), scripts/demo aside.
mapfile -t commands < <(awk '
    /^```/ { if (inb) { inb = 0 } else if ($0 ~ /```sh/) { inb = 1 }; next }
    inb { line = $0; sub(/^[ ]+/, "", line); sub(/[ ]+#.*$/, "", line)
          if (cont != "") { line = cont " " line; cont = "" }
          if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next }
          if (line ~ /^curl /) print line }' "$DOC")
check "backend.md shows three curl lines" test "${#commands[@]}" -eq 3
check "backend.md: ${commands[0]}" bash -c "${commands[0]} | grep -q '\"user\": \"ann\"'"
check "backend.md: ${commands[1]}" bash -c "${commands[1]} | grep -q '\"cart\": \\[\"lamp\"\\]'"
check "backend.md: ${commands[2]} (refused, as the page says)" bash -c "${commands[2]} | grep -q '\"code\":\"refused\",\"message\":\"sign in to check out\"'"

# The Python client of the page, as written.
awk '/^```python/ { n++; inb = (n == 1); next } /^```/ { inb = 0 } inb' "$DOC" >"$OUT/backend_client.py"
check "backend.md's Python client joins as ann and its checkout is acknowledged" bash -c \
    "cd /tmp && timeout 20 '$PY' '$OUT/backend_client.py' >'$OUT/backend_client.txt' 2>&1 && grep -q \"'user': 'ann'\" '$OUT/backend_client.txt' && grep -q '^ack ' '$OUT/backend_client.txt'"
events="$(sed -n 's/^hooks file .*; webhook events go to \(.*\)$/\1/p' "$OUT/backend-demo.log")"
check "the backend logged signed webhooks: the session, its occupant and a revision by ann with the hook's op first" bash -c \
    "for _ in \$(seq 50); do grep -q '\"user\": \"ann\"' '$events' 2>/dev/null && break; sleep 0.1; done
     grep -q '\"type\": \"session.occupied\"' '$events' && grep '\"type\": \"revision\"' '$events' | grep -q '\"by\": \"hook\"'"
cleanup
trap - EXIT

# The pytest example, with the plugin's backend.
awk '/^```python/ { n++; inb = (n == 3); next } /^```/ { inb = 0 } inb' "$DOC" >"$OUT/test_backend_doc.py"
check "backend.md's pytest example passes" bash -c \
    "cd '$OUT' && NAVSYNCD='$NAVSYNCD' '$PY' -m pytest -q -p no:cacheprovider test_backend_doc.py >'$OUT/backend_pytest.txt' 2>&1 || { tail -30 '$OUT/backend_pytest.txt'; exit 1; }"
finish
