#!/usr/bin/env bash
# navclient as people and scripts use it: the interactive client driven through tmux
# (send-keys, capture-pane) while another client changes the session; exec, watch
# --json and get with their exit codes; reconnecting across a server restart with a
# command in flight, applied exactly once.
. "$(dirname "$0")/lib.sh"

start_navsyncd navclient
NC="$NAVCLIENT"
screen() { tmux capture-pane -t nc -p; }
wait_screen() {   # wait_screen TEXT: until the tmux pane shows TEXT (5 s at most)
    for _ in $(seq 1 50); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done
    screen >"$OUT/navclient-screen.txt"; return 1
}

# --- exec, get, watch --json, sessions: scripts and exit codes
check "exec runs commands in order, exit 0" bash -c "'$NC' exec '$WS_URL' 'setRoot main' 'push detail id=42' | grep -q 'push detail id=42 -> rev 2: applied'"
check "exec --label labels what it sends; history shows it" bash -c "'$NC' exec '$WS_URL' --label 'checkout start' 'push detail id=43' >/dev/null && curl -sf '${HTTP_URL}api/sessions/demo/history?limit=1' | grep -q '\"label\":\"checkout start\"'"
check "exec stops at a refused command, exit 1" bash -c "'$NC' exec '$WS_URL' 'push nowhere' 'push detail id=1' 2>'$OUT/exec-err.txt'; [ \$? -eq 1 ] && grep -q unknown_route '$OUT/exec-err.txt'"
check "a guard's refusal names the guard and route, exit 1" bash -c "'$NC' exec '$WS_URL' --session guards-nc --create 'open /checkout' 2>'$OUT/exec-guard.txt'; [ \$? -eq 1 ] && grep -q 'guarded: .*\[guard cartFull, route checkout, e[0-9]*\]' '$OUT/exec-guard.txt'"
check "a redirect is printed; update --session signs in, and the guarded link opens" bash -c "'$NC' exec '$WS_URL' --session guards-nc 'open /orders/7' | grep -q 'redirected: op 0, guard signedIn -> /login?next=%2Forders%2F7' && '$NC' exec '$WS_URL' --session guards-nc 'update --session user=ann' 'open /orders/7' | grep -q 'open /orders/7 -> rev [0-9]*: applied'"
check "with a cart in the session's data (a JSON list), checkout opens, as the README says" bash -c "'$NC' exec '$WS_URL' --session guards-nc 'update --session cart=[42]' 'open /checkout' | grep -q 'open /checkout -> rev [0-9]*: applied'"
check "exec refuses a mistyped param before sending, exit 1" bash -c "'$NC' exec '$WS_URL' 'push detail id=abc' 2>&1; [ \$? -eq 1 ]"
check "get prints the tree" bash -c "'$NC' get '$WS_URL' | grep -q 'detail id=42'"
check "get --json prints the state" bash -c "'$NC' get '$WS_URL' --json | '$PY' -c 'import json,sys; d=json.load(sys.stdin); assert d[\"root\"][\"type\"]==\"App\"'"
check "an unknown session, exit 3" bash -c "'$NC' get '$WS_URL' --session nope 2>/dev/null; [ \$? -eq 3 ]"
check "no server, exit 3" bash -c "'$NC' get 127.0.0.1:1 2>/dev/null; [ \$? -eq 3 ]"
check "bad usage, exit 2" bash -c "'$NC' exec 2>/dev/null; [ \$? -eq 2 ]"
check "sessions lists demo" bash -c "'$NC' sessions '$WS_URL' | grep -q '^demo '"
check "commands from a pipe" bash -c "printf 'select cart\nselect home\n' | '$NC' '$WS_URL' | grep -q 'select home -> rev'"
"$NC" watch "$WS_URL" --json >"$OUT/watch.jsonl" 2>/dev/null &
watcher=$!
sleep 0.5
"$NC" exec "$WS_URL" 'update q=watched' >/dev/null
sleep 0.5
kill $watcher; wait $watcher 2>/dev/null || true
check "watch --json prints each message as a JSON line" bash -c "head -1 '$OUT/watch.jsonl' | grep -q '\"type\":\"welcome\"' && grep -q '\"type\":\"patch\".*watched' '$OUT/watch.jsonl'"

port_of_server="$(echo "$WS_URL" | sed 's#.*:\([0-9]*\)/ws#\1#')"
check "back with nothing to go back from is a noop, exit 0 (like dismiss)" bash -c "'$NC' exec '$WS_URL' --session demo-fresh --create back | grep -q 'back -> noop: nothing to go back from'"
check "watch on a server that cannot be reached exits 3 instead of retrying" bash -c "timeout 10 '$NC' watch 127.0.0.1:9 2>/dev/null; [ \$? -eq 3 ]"
check "an unknown session: exit 3, and the hint names --create, not a protocol field" bash -c "'$NC' exec '$WS_URL' --session nope pop 2>&1 | grep -q \"no session 'nope'; --create makes it\"; [ \${PIPESTATUS[0]} -eq 3 ]"
check "get takes the web: address navsyncd prints" bash -c "'$NC' get '$HTTP_URL' --json | '$PY' -c 'import json,sys; assert \"root\" in json.load(sys.stdin)'"
check "sessions takes a bare port" bash -c "'$NC' sessions '$port_of_server' | grep -q '^demo '"
check "an address it cannot use is a usage error (exit 2), never the default server" bash -c "'$NC' get ftp://127.0.0.1:$port_of_server 2>&1 | grep -q 'is not a server address'; [ \${PIPESTATUS[0]} -eq 2 ]"
check "bench: N members in M sessions, a count of commands, JSON figures; rates over publishing and delivering, not the second members read on after" bash -c "'$NC' bench '$WS_URL' --clients 6 --sessions 2 --commands 300 --json 2>/dev/null | '$PY' -c 'import json,sys; r=json.load(sys.stdin); assert r[\"deliveries\"]==1800 and r[\"errors\"]==0 and r[\"commands\"]==600, r; assert 0 < r[\"publishSeconds\"] <= r[\"seconds\"] - 0.9 and 0 < r[\"deliverySeconds\"] <= r[\"seconds\"] - 0.9 and abs(r[\"deliveriesPerSecond\"] * r[\"deliverySeconds\"] - 1800) < 1, r'"
check "bench: 300 members joining cost far fewer than N²/2 presence messages (gathered per interval)" bash -c "'$NC' bench '$WS_URL' --clients 300 --sessions 1 --commands 10 --json 2>/dev/null | '$PY' -c 'import json,sys; r=json.load(sys.stdin); assert r[\"presenceMessages\"] < 300*300//4 and r[\"errors\"]==0, r'"
check "bench: writers only (--clients 0), 3 publishers per session, every command acked" bash -c "'$NC' bench '$WS_URL' --clients 0 --sessions 2 --publishers 3 --commands 100 --json 2>/dev/null | '$PY' -c 'import json,sys; r=json.load(sys.stdin); assert r[\"commands\"]==600 and r[\"errors\"]==0 and r[\"deliveries\"]==0 and r[\"publishers\"]==3, r'"

# --- the interactive client in tmux
tmux kill-session -t nc 2>/dev/null || true
tmux new-session -d -s nc -x 110 -y 34 "'$NC' '$WS_URL' --session demo --name tmux"
check "the tree and the status line are drawn" wait_screen "session demo"
tmux send-keys -t nc 'push rev' Tab 'id=7' Enter
check "a typed push (Tab-completed) reaches the server" wait_screen "reviews id=7"
check "and is acknowledged on screen" wait_screen "push reviews id=7"
"$NC" exec "$WS_URL" 'push detail id=99 note=fromelsewhere' >/dev/null
check "a change by another client shows" wait_screen "note=fromelsewhere"
tmux send-keys -t nc 'back' Enter
check "back pops for everyone" bash -c "for i in \$(seq 1 30); do '$NC' get '$WS_URL' | grep -q fromelsewhere || exit 0; sleep 0.1; done; exit 1"
tmux send-keys -t nc 'push nowhere' Enter
check "an unknown route shows an error, the prompt stays" wait_screen "unknown_route"
check "the prompt is still there" wait_screen "navsync demo>"

# --- history: the list, a past revision shown, undo (docs/protocol.md, "History")
tmux send-keys -t nc 'history 3' Enter
check "history lists the last revisions, who and what" wait_screen "pop"
tmux send-keys -t nc 'show 1' Enter
check "show REV draws a past revision, marked historic" wait_screen "restore 1 brings it back"
"$NC" get "$WS_URL" --json >"$OUT/before-undo.json"
tmux send-keys -t nc 'push detail id=77' Enter
check "a change to undo" wait_screen "push detail id=77"
tmux send-keys -t nc 'undo' Enter
check "undo restores the revision before" wait_screen "> undo (restore"
check "and the session is as it was before that change" bash -c "for i in \$(seq 1 30); do '$NC' get '$WS_URL' --json | cmp -s - '$OUT/before-undo.json' && exit 0; sleep 0.1; done; exit 1"
check "exec: show of a revision not yet made exits 1, naming not_found" bash -c "'$NC' exec '$WS_URL' 'show 99999' 2>&1 | grep -q 'not_found: revision 99999 is newer'; [ \${PIPESTATUS[0]} -eq 1 ]"
check "exec: history and show" bash -c "'$NC' exec '$WS_URL' 'history 2' | grep -q 'restore rev' && '$NC' exec '$WS_URL' 'show 1' | grep -q '(historic)'"

# --- reconnect: the server restarts; a command typed meanwhile is applied exactly once
port="${WS_URL##*:}"; port="${port%%/*}"
stop_navsyncd TERM
check "the client notices the server is gone" wait_screen "reconnecting"
tmux send-keys -t nc 'open /product/5' Enter
check "the command waits, unacknowledged" wait_screen "unacknowledged 1"
"$NAVSYNCD" --port "$port" --log-level warn >"$OUT/navclient-restart.out" 2>"$OUT/navclient-restart.log" &
NAVSYNCD_PID=$!
check "it reconnects by itself and shows the new epoch's state" wait_screen "● connected"
check "the resent command is acknowledged" wait_screen "rev 1: applied"
check "and applied exactly once" bash -c "'$NC' get '$WS_URL' --json | '$PY' -c 'import json,sys; d=json.load(sys.stdin); home=d[\"root\"][\"current\"][\"coordinator\"][\"tabs\"][0][\"coordinator\"][\"stack\"]; assert [e[\"route\"] for e in home]==[\"list\",\"detail\"], home'"
check "the server saw one command" bash -c "curl -s '${HTTP_URL}metrics' | grep -qx 'navsync_commands_total{result=\"applied\"} 1'"
screen >"$OUT/navclient-screen.txt"
tmux send-keys -t nc C-d
sleep 0.3
tmux kill-session -t nc 2>/dev/null || true
stop_navsyncd

# Slow readers: small kernel buffers and lag threshold, so two members that stop reading
# lag within seconds; each must get a snapshot at the newest revision. (On a loaded
# machine a reading member may lag too and be resynced the same way: not checked here.)
start_navsyncd navclient-slow --socket-send-buffer 65536 --lag-threshold 262144 --rate 1000000 --burst 1000000 --log-level info
check "bench --slow: paused members catch up with a snapshot at the newest revision" bash -c "'$NC' bench '$WS_URL' --clients 6 --slow 2 --commands 5000 --json 2>/dev/null | '$PY' -c 'import json,sys; r=json.load(sys.stdin); s=r[\"slow\"]; assert r[\"errors\"]==0 and r[\"commands\"]==5000, r; assert s[\"withSnapshot\"]==2 and s[\"minRev\"]==s[\"maxRev\"]==5000, s'"
check "the server logged them as lagging" bash -c "[ \$(grep -c 'is lagging' '$OUT/navclient-slow.log') -ge 2 ]"

# A typo in the interactive client: no session is created; it offers `create NAME`.
screen2() { tmux capture-pane -t nc2 -p; }
wait_screen2() { for _ in $(seq 1 50); do screen2 | grep -qF -- "$1" && return 0; sleep 0.1; done; screen2 >"$OUT/navclient-screen2.txt"; return 1; }
tmux kill-session -t nc2 2>/dev/null || true
tmux new-session -d -s nc2 -x 110 -y 34 "'$NC' '$WS_URL' --session tpyo; echo navclient-exit=\$?; sleep 30"
check "interactive: an unknown session is not created; it offers create" wait_screen2 "type \`create tpyo\` to make it"
check "...and the server has no such session" bash -c "! curl -sf '${HTTP_URL}api/sessions/tpyo' >/dev/null"
tmux send-keys -t nc2 'create tpyo' Enter
check "interactive: create NAME makes it and joins" wait_screen2 "session tpyo  rev 0"
check "...on the server too" bash -c "curl -sf '${HTTP_URL}api/sessions/tpyo' | grep -q '\"rev\":0'"
check "interactive: the status line names the server" wait_screen2 "connected to $WS_URL  session tpyo"
tmux send-keys -t nc2 'join nosuch' Enter
check "interactive: a refused join says so once and stays where it was" wait_screen2 "cannot join nosuch: no session 'nosuch'"
check "...one error, the prompt and the status line still on tpyo" bash -c "screen=\$(tmux capture-pane -t nc2 -p); [ \$(grep -c 'cannot join nosuch' <<<\"\$screen\") -eq 1 ] && grep -q 'navsync tpyo>' <<<\"\$screen\" && grep -q 'session tpyo  rev 0' <<<\"\$screen\""
# Long output: help and get wrap and page (PgUp/PgDn) instead of being cut.
tmux send-keys -t nc2 'help' Enter
check "interactive: help's last entry shows" wait_screen2 "quit "
tmux send-keys -t nc2 PPage PPage PPage
check "interactive: PgUp scrolls back to help's first entry" wait_screen2 "commands (Tab completes commands and routes):"
check "...and says how much is below" wait_screen2 "more below (PgDn)"
tmux send-keys -t nc2 NPage NPage NPage NPage
tmux send-keys -t nc2 'get' Enter
check "interactive: get shows the whole state, wrapped (its last bytes too)" wait_screen2 '"alert":null}'
tmux send-keys -t nc2 'alert Sure? Yes No:cancel' Enter
check "interactive: alert TITLE BUTTON... makes buttons" wait_screen2 '"Sure?" [yes] [no]'
tmux send-keys -t nc2 'respond No' Enter
check "interactive: respond by label answers it" wait_screen2 "rev 2: applied"
tmux send-keys -t nc2 C-c
check "interactive: Ctrl-C on an empty line says how to leave" wait_screen2 "(to leave: quit, or Ctrl-D on an empty line)"
tmux send-keys -t nc2 'quit' Enter
check "interactive: quit exits 0" wait_screen2 "navclient-exit=0"
check "...without drawing 'reconnecting' on the way out" bash -c "! tmux capture-pane -t nc2 -p | grep -q reconnecting"
tmux kill-session -t nc2 2>/dev/null || true
tmux new-session -d -s nc2 -x 110 -y 34 "'$NC' 127.0.0.1:9; echo navclient-exit=\$?; sleep 30"
check "interactive: a server that cannot be reached ends it with exit 3" wait_screen2 "navclient-exit=3"
tmux kill-session -t nc2 2>/dev/null || true

# --- recordings: a session of 1,000 commands recorded on this server, replayed onto another
commands=()
for i in $(seq 1 200); do commands+=("push detail id=$i" "update n=$i" "back" "select $((i % 3 + 1))" "select 0"); done
"$NC" exec "$WS_URL" --session rec --create 'setRoot main' "${commands[@]}" >/dev/null
check "navclient log writes the recording" bash -c "'$NC' log '$WS_URL' --session rec >'$OUT/rec.ndjson' && [ \$(wc -l <'$OUT/rec.ndjson') -ge 1000 ]"
FIRST_PID=$NAVSYNCD_PID
FIRST_HTTP=$HTTP_URL
start_navsyncd navclient-replay
check "replay --verify of the recording onto a second server passes" bash -c "'$NC' replay '$OUT/rec.ndjson' '$WS_URL' --speed 0 --verify 2>'$OUT/replay.txt' && grep -q 'revisions replayed' '$OUT/replay.txt'"
grep -o 'replayed.*' "$OUT/replay.txt" | sed 's/^/  /'
check "...and the session there equals the original" "$PY" -c "import json, urllib.request as u; a = json.load(u.urlopen('${FIRST_HTTP}api/sessions/rec')); b = json.load(u.urlopen('${HTTP_URL}api/sessions/rec')); assert a['state'] == b['state'] and a['rev'] > 1000, (a['rev'], b['rev'])"
"$PY" - "$OUT/rec.ndjson" "$OUT/rec-tampered.ndjson" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
entry = json.loads(lines[500])
for op in entry["patch"]:
    if "value" in op:
        op["value"] = "tampered"
        break
lines[500] = json.dumps(entry)
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
tampered_rev=$("$PY" -c "import json; print(json.loads(open('$OUT/rec.ndjson').read().splitlines()[500])['rev'])")
check "a tampered recording fails --verify at that revision, exit 1" bash -c "'$NC' replay '$OUT/rec-tampered.ndjson' '$WS_URL' --session rec2 --speed 0 --verify 2>'$OUT/replay-bad.txt'; [ \$? -eq 1 ] && grep -q 'revision $tampered_rev differs from the recording' '$OUT/replay-bad.txt'"
stop_navsyncd
NAVSYNCD_PID=$FIRST_PID
stop_navsyncd
finish
