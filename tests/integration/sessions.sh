#!/usr/bin/env bash
# navsyncd with sessions, driven by outside clients: Python websockets + jsonpatch
# mirrors under concurrent random commands and across restores, and curl against every
# HTTP endpoint.
. "$(dirname "$0")/lib.sh"

start_navsyncd sessions --rate 100000 --burst 100000
"$PY" "$ROOT/tests/integration/mirror_clients.py" "$WS_URL" demo

api="${HTTP_URL}api/sessions"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check "GET /healthz is ok"               bash -c "curl -sf '${HTTP_URL}healthz' | grep -qx ok"
check "GET /api lists the endpoints"     bash -c "curl -sf '${HTTP_URL}api' | grep -q 'POST /api/sessions/NAME/commands'"
check "GET / is the web page"            bash -c "curl -sf -D - '${HTTP_URL}' | grep -qi '^content-type: text/html'"
check "the web page revalidates (304)"   bash -c "etag=\$(curl -s -D - -o /dev/null '${HTTP_URL}' | grep -i '^etag' | cut -d' ' -f2 | tr -d '\r'); [ \"\$(curl -s -o /dev/null -w '%{http_code}' -H \"If-None-Match: \$etag\" '${HTTP_URL}')\" = 304 ]"
check "GET /metrics has every family"    bash -c "m=\$(curl -sf '${HTTP_URL}metrics'); for f in navsync_connections navsync_sessions navsync_members navsync_commands_total navsync_patches_sent_total navsync_bytes_received_total navsync_bytes_sent_total navsync_command_apply_seconds_bucket; do echo \"\$m\" | grep -q \"^\$f\" || exit 1; done"
check "GET /api/sessions lists demo"     bash -c "curl -sf '$api' | grep -q '\"session\":\"demo\"'"
check "GET /api/flows names the flows"   bash -c "curl -sf '${HTTP_URL}api/flows' | grep -qx '{\"flows\":\\[\"shop\"\\]}'"
check "GET /api/flows/shop has its guards" bash -c "curl -sf '${HTTP_URL}api/flows/shop' | '$PY' -c 'import json,sys; f=json.load(sys.stdin); assert f[\"guards\"][\"cartFull\"][\"else\"] == \"deny\" and f[\"guards\"][\"signedIn\"][\"else\"][\"redirect\"].startswith(\"/login\")'"
check "GET /api/flows/nope is 404"       test "$(code "${HTTP_URL}api/flows/nope")" = 404
check "POST a guarded command is 409 naming the guard" bash -c "curl -s -w '\n%{http_code}' -X POST -d '{\"id\":\"g-1\",\"ops\":[{\"op\":\"open\",\"url\":\"/checkout\"}]}' '$api/demo/commands' | tr '\n' ' ' | grep -q '\"code\":\"guarded\".*\"guard\":\"cartFull\".*409'"
check "POST a redirected command acks with its redirects" bash -c "curl -sf -X POST -d '{\"id\":\"g-2\",\"ops\":[{\"op\":\"open\",\"url\":\"/orders/7\"}]}' '$api/demo/commands' | grep -q '\"results\":\[\"redirected\"\],\"redirects\":\[{\"op\":0,\"guard\":\"signedIn\",\"link\":\"/login?next=%2Forders%2F7'"
check "GET /api/sessions/demo has state" bash -c "curl -sf '$api/demo' | grep -q '\"state\":{\"root\"'"
check "GET unknown session is 404"       test "$(code "$api/nope")" = 404
check "POST a command gives its ack"     bash -c "curl -sf -X POST -d '{\"id\":\"curl-1\",\"ops\":[{\"op\":\"reset\"},{\"op\":\"open\",\"url\":\"/product/5\"}]}' '$api/demo/commands' | grep -q '\"type\":\"ack\"'"
py_checks "$ROOT/tests/integration/http_idempotency.py" "$HTTP_URL" "$WS_URL"
py_checks "$ROOT/tests/integration/guards_clients.py" "$WS_URL"
py_checks "$ROOT/tests/integration/delete_session.py" "$HTTP_URL" "$WS_URL"
py_checks "$ROOT/tests/integration/history_clients.py" "$WS_URL" "$HTTP_URL"
check "navclient delete NAME deletes it" bash -c "'$NAVCLIENT' exec '$WS_URL' --session byebye --create 'pop' >/dev/null; '$NAVCLIENT' delete '$WS_URL' byebye | grep -qx \"deleted session 'byebye'\" && ! curl -sf '$api/byebye' >/dev/null"
check "navclient delete of an unknown session exits 1, naming it" bash -c "'$NAVCLIENT' delete '$WS_URL' nosuch 2>&1 | grep -q \"no session 'nosuch'\"; [ \${PIPESTATUS[0]} -eq 1 ]"
check "navclient delete without a name is usage (exit 2)" bash -c "'$NAVCLIENT' delete '$WS_URL'; [ \$? -eq 2 ]"
check "POST malformed JSON is 400"       test "$(code -X POST -d '{oops' "$api/demo/commands")" = 400
check "POST a non-object is 400"         test "$(code -X POST -d '[1]' "$api/demo/commands")" = 400
check "POST without ops is 400"          test "$(code -X POST -d '{"id":1}' "$api/demo/commands")" = 400
check "POST an unknown route is 422"     test "$(code -X POST -d '{"id":2,"ops":[{"op":"push","route":"nowhere"}]}' "$api/demo/commands")" = 422
check "POST to an unknown session is 404" test "$(code -X POST -d '{"id":3,"ops":[{"op":"pop"}]}' "$api/nope/commands")" = 404
check "POST a stale reject is 409"       test "$(code -X POST -d '{"id":4,"base":0,"onConflict":"reject","ops":[{"op":"select","index":1}]}' "$api/demo/commands")" = 409
check "GET on the commands path is 405"  test "$(code "$api/demo/commands")" = 405
check "DELETE /healthz is 405"           test "$(code -X DELETE "${HTTP_URL}healthz")" = 405
check "unknown path is 404"              test "$(code "${HTTP_URL}nope")" = 404
check "a 2 MB body is 413"               bash -c "head -c 2000000 /dev/zero | tr '\\0' 'a' | curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary @- '$api/demo/commands' | grep -qx 413"
check "HEAD /healthz has no body"        bash -c "[ -z \"\$(curl -s -I '${HTTP_URL}healthz' | sed -n '/^\r$/,\$p' | tail -n +2)\" ]"
stop_navsyncd TERM
check "the log says sessions are in memory only" grep -q "in memory only" "$OUT/sessions.log"
finish
