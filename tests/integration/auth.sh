#!/usr/bin/env bash
# Who may do what, from outside: Python websockets and curl against navsyncd --auth;
# tokens never in the logs; per-IP and total connection limits; navclient --token.
. "$(dirname "$0")/lib.sh"

auth="$OUT/auth.json"
cat >"$auth" <<'JSON'
{ "tokens": [
    { "token": "admin-token-1", "role": "admin", "label": "ops laptop" },
    { "token": "controller-2", "role": "controller", "sessions": ["demo", "lab-*"], "label": "tablet" },
    { "token": "viewer-token-3", "role": "viewer" } ] }
JSON
start_navsyncd auth --auth "$auth" --log-level debug
curl -s -X POST -H 'Authorization: Bearer admin-token-1' -d '{"id":"mk","ops":[{"op":"dismiss"}]}' "${HTTP_URL}api/sessions/demo/commands" >/dev/null
"$PY" - "$WS_URL" >/dev/null <<'PYEOF'
import asyncio, json, sys, websockets
async def main():
    async with websockets.connect(sys.argv[1] + "?token=admin-token-1") as ws:
        await ws.send(json.dumps({"type": "join", "session": "prod", "create": True})); await ws.recv()
asyncio.run(main())
PYEOF

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
api="${HTTP_URL}api/sessions"

# The file's own checks: weak tokens warned about on loopback, refused beyond it
# (refused before anything listens); unknown keys refused with file, place and names.
check "short tokens get a warning at start on loopback" grep -q "tokens\[1\].token is shorter than 16 characters; it would be refused beyond loopback" "$OUT/auth.stdout" "$OUT/auth.log"
check "short tokens are refused beyond loopback (exit 1)" bash -c "'$NAVSYNCD' --host 0.0.0.0 --port 0 --auth '$auth' 2>&1 | grep -q 'tokens\[0\].token is shorter than 16 characters, and the server listens on 0.0.0.0'; [ \${PIPESTATUS[0]} -eq 1 ]"
typo="$OUT/auth-typo.json"
echo '{ "tokens": [ { "token": "a-long-enough-token-1", "role": "controller", "session": ["demo"] } ] }' >"$typo"
check "an unknown key in the auth file is refused, naming it" bash -c "'$NAVSYNCD' --port 0 --auth '$typo' 2>&1 | grep -q 'auth-typo.json: tokens\[0\].session: unknown key \"session\" in a token (expected token, role, sessions, label)'; [ \${PIPESTATUS[0]} -eq 1 ]"
V=(-H 'Authorization: Bearer viewer-token-3'); C=(-H 'Authorization: Bearer controller-2'); A=(-H 'Authorization: Bearer admin-token-1')
POST=(-X POST -d '{"id":"h1","ops":[{"op":"dismiss"}]}')
RESET=(-X POST -d '{"id":"h2","ops":[{"op":"reset"}]}')
check "HTTP: / and /healthz need no token"        bash -c "[ $(code "$HTTP_URL") = 200 ] && [ $(code "${HTTP_URL}healthz") = 200 ]"
check "HTTP: no token is 401 everywhere else"     bash -c "[ $(code "$api") = 401 ] && [ $(code "$api/demo") = 401 ] && [ $(code "${POST[@]}" "$api/demo/commands") = 401 ] && [ $(code "${HTTP_URL}metrics") = 401 ]"
check "HTTP: DELETE a session needs admin (controller: 403)" test "$(code -X DELETE "${C[@]}" "$api/demo")" = 403
check "HTTP: DELETE as admin passes the check (unknown session: 404)" test "$(code -X DELETE "${A[@]}" "$api/never-made")" = 404
check "HTTP: a wrong token is 401"                test "$(code -H 'Authorization: Bearer nope-nope' "$api")" = 401
check "HTTP: viewer reads"                        bash -c "[ $(code "${V[@]}" "$api") = 200 ] && [ $(code "${V[@]}" "$api/demo") = 200 ] && [ $(code "${V[@]}" "${HTTP_URL}metrics") = 200 ]"
check "HTTP: viewer may not POST commands (403)"  test "$(code "${V[@]}" "${POST[@]}" "$api/demo/commands")" = 403
check "HTTP: controller POSTs commands"           test "$(code "${C[@]}" "${POST[@]}" "$api/demo/commands")" = 200
check "HTTP: controller may not reset (403)"      test "$(code "${C[@]}" "${RESET[@]}" "$api/demo/commands")" = 403
check "HTTP: admin resets"                        test "$(code "${A[@]}" "${RESET[@]}" "$api/demo/commands")" = 200
check "HTTP: session patterns (controller: demo, lab-*)" bash -c "[ $(code "${C[@]}" "$api/prod") = 403 ] && [ $(code "${C[@]}" "${POST[@]}" "$api/prod/commands") = 403 ]"
check "HTTP: the list shows only allowed sessions" bash -c "curl -s ${C[*]@Q} '$api' | grep -q demo && ! curl -s ${C[*]@Q} '$api' | grep -q prod"
check "HTTP: a POST from another origin is 403"   test "$(code "${A[@]}" -H 'Origin: http://evil.example' "${POST[@]}" "$api/demo/commands")" = 403
check "HTTP: 403 names the role and what it lacks" bash -c "curl -s ${V[*]@Q} ${POST[*]@Q} '$api/demo/commands' | grep -q 'role viewer may not do this: it needs controller'"

"$PY" "$ROOT/tests/integration/auth_clients.py" "$WS_URL" "$NAVSYNCD_PID" "$auth"

# navclient --token
check "navclient without a token: forbidden, exit 3" bash -c "'$NAVCLIENT' get '$WS_URL' 2>'$OUT/nc-notoken.txt'; [ \$? -eq 3 ] && grep -q 'forbidden: this connection has no token: pass --token TOKEN' '$OUT/nc-notoken.txt'"
check "navclient --token as viewer: commands forbidden, exit 1" bash -c "'$NAVCLIENT' exec '$WS_URL' --token viewer-token-3 'select cart' 2>'$OUT/nc-viewer.txt'; [ \$? -eq 1 ] && grep -q 'role viewer may not send commands' '$OUT/nc-viewer.txt'"
check "navclient --token as admin works" bash -c "'$NAVCLIENT' exec '$WS_URL' --token admin-token-1 'setRoot main' | grep -q applied"
"$PY" "$ROOT/tests/integration/web_token.py" "$HTTP_URL"
stop_navsyncd
for t in admin-token-1 controller-2 viewer-token-3 not-a-token; do
    check "the log never shows token $t" bash -c "! grep -q -- '$t' '$OUT/auth.log'"
done
check "the log names grants by label" grep -q "is ops laptop (admin)" "$OUT/auth.log"

# Connection limits: the connection over the limit is refused cleanly, the others carry on.
start_navsyncd limits --max-connections-per-ip 3
"$PY" - "$WS_URL" >"$OUT/limits.txt" 2>&1 <<'PYEOF'
import asyncio, json, sys, websockets
async def main():
    held = [await websockets.connect(sys.argv[1]) for _ in range(3)]
    try:
        await websockets.connect(sys.argv[1])
        print("fourth connected")
    except websockets.exceptions.InvalidStatus as e:
        print("fourth refused", e.response.status_code)
    for ws in held:
        await ws.send(json.dumps({"type": "ping"}))
        print("held", json.loads(await ws.recv())["type"])
asyncio.run(main())
PYEOF
check "over the per-IP limit: 503" grep -q "fourth refused 503" "$OUT/limits.txt"
check "the connections under the limit carry on" bash -c "[ \$(grep -c 'held pong' '$OUT/limits.txt') = 3 ]"
check "refusals are counted" bash -c "curl -s '${HTTP_URL}metrics' | grep -q '^navsync_connections_refused_total [1-9]'"
stop_navsyncd
start_navsyncd limits-total --max-connections 2
check "over the total limit: 503" bash -c "'$PY' -c \"
import asyncio, websockets, sys
async def main():
    a = await websockets.connect('$WS_URL'); b = await websockets.connect('$WS_URL')
    try:
        await websockets.connect('$WS_URL'); sys.exit(1)
    except websockets.exceptions.InvalidStatus as e:
        sys.exit(0 if e.response.status_code == 503 else 1)
asyncio.run(main())\""
stop_navsyncd
finish
