#!/usr/bin/env bash
# navsyncd's command line: --help, bad usage, refusing to listen beyond loopback,
# and --flows DIR (a good flow is served; a broken one stops the start, naming the place).
. "$(dirname "$0")/lib.sh"

check "--help exits 0 and lists the flags" bash -c "'$NAVSYNCD' --help | grep -q -- '--max-message BYTES'"
check "every doc --help points to exists" bash -c "cd '$ROOT' && for f in \$('$NAVSYNCD' --help | grep -o 'docs/[a-z-]*\.md' | sort -u); do [ -f \"\$f\" ] || { echo \"missing \$f\"; exit 1; }; done"
check "an unknown flag exits 2"            bash -c "'$NAVSYNCD' --frobnicate; [ \$? -eq 2 ]"
check "a bad port exits 2"                 bash -c "'$NAVSYNCD' --port 70000; [ \$? -eq 2 ]"
check "--socket-send-buffer below 4096 exits 2, naming the flag" bash -c "'$NAVSYNCD' --socket-send-buffer 100 2>&1 | grep -q -- '--socket-send-buffer'; [ \${PIPESTATUS[0]} -eq 2 ]"
check "--presence-max-delay takes milliseconds (exit 2, naming the range)" bash -c "'$NAVSYNCD' --presence-max-delay 70000 2>&1 | grep -q -- '--presence-max-delay needs milliseconds from 0 to 60000'; [ \${PIPESTATUS[0]} -eq 2 ]"
check "0.0.0.0 without --auth is refused"  bash -c "'$NAVSYNCD' --host 0.0.0.0 --port 0 2>&1 | grep -q 'refusing to listen'"
check "--jwt-audience without --jwt-key exits 2" bash -c "'$NAVSYNCD' --jwt-audience shop 2>&1 | grep -q 'needs --jwt-key'; [ \${PIPESTATUS[0]} -eq 2 ]"
check "an open-files limit below --max-connections is warned of at start" bash -c "ulimit -n 512; '$NAVSYNCD' --port 0 --max-connections 1000 >'$OUT/cli-nofile.out' 2>'$OUT/cli-nofile.log' & pid=\$!; sleep 1; kill \$pid; wait \$pid; grep -q 'the open-files limit is 512: at most 448 connections, not --max-connections 1000' '$OUT/cli-nofile.log'"
check "navclient --help exits 0"           bash -c "'$NAVCLIENT' --help | grep -q bench"
check "navclient bench --help exits 0"     bash -c "'$NAVCLIENT' bench --help | grep -q -- '--in-flight'"
check "navclient bench --rate 0 is a usage error (exit 2) that names --rate" bash -c "'$NAVCLIENT' bench --rate 0 2>&1 | grep -q -- '--rate needs'; [ \${PIPESTATUS[0]} -eq 2 ]"

# A port in use is a clear error, exit 1.
start_navsyncd cli-busy
port="${WS_URL##*:}"; port="${port%%/*}"
check "a port in use exits 1, naming it" bash -c "'$NAVSYNCD' --port $port 2>&1 | grep -q 'cannot listen on 127.0.0.1:$port'"
stop_navsyncd

# --flows DIR: the studio flow is served besides the demo.
start_navsyncd cli-flows --flows "$ROOT/tests/integration/flows"
check "the log names the loaded flows" grep -q "flows: shop, studio" "$OUT/cli-flows.log"
"$PY" - "$WS_URL" >"$OUT/cli-flows.txt" 2>&1 <<'PYEOF'
import asyncio, json, sys, websockets
async def main():
    async with websockets.connect(sys.argv[1]) as ws:
        await ws.send(json.dumps({"type": "join", "session": "lab", "create": True, "flow": "studio"}))
        joined = json.loads(await ws.recv())
        print("flow", joined["flow"]["name"], "root", joined["state"]["root"]["type"])
        await ws.send(json.dumps({"type": "command", "session": "lab", "id": 1, "ops": [{"op": "open", "url": "/p/7/file/notes.txt?dirty=1"}]}))
        while True:
            m = json.loads(await ws.recv())
            if m["type"] == "ack":
                print("ack", m["results"])
                break
asyncio.run(main())
PYEOF
check "a session made from a loaded flow" grep -q "flow studio root Projects" "$OUT/cli-flows.txt"
check "its deep links work" grep -q "ack \['applied'\]" "$OUT/cli-flows.txt"
stop_navsyncd

broken="$OUT/broken-flows"
rm -rf "$broken"; mkdir -p "$broken"
sed 's/"initial": "list"/"initial": "lst"/' "$ROOT/tests/integration/flows/studio.json" >"$broken/studio.json"
check "a broken flow stops the start, naming file and place" bash -c "'$NAVSYNCD' --port 0 --flows '$broken' 2>&1 | grep -q 'studio.json: coordinators.Projects.initial: initial route \"lst\" is not declared'"
sed 's/"params": { "id": "int" }/"param": { "id": "int" }/' "$ROOT/tests/integration/flows/studio.json" >"$broken/studio.json"
check "an unknown key in a flow (a typo) stops the start, naming it" bash -c "'$NAVSYNCD' --port 0 --flows '$broken' 2>&1 | grep -q 'studio.json: coordinators.Projects.routes.project.param: unknown key \"param\" in a route'"
check "an unreadable flows directory is a clear error" bash -c "'$NAVSYNCD' --port 0 --flows /nonexistent 2>&1 | grep -q 'cannot open the directory'"
finish
