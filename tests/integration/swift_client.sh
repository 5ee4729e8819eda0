#!/usr/bin/env bash
# The Swift app client against a real navsyncd: the example app's model run headless
# (Examples/Shop/Headless: the same routes and navigator calls as the SwiftUI app,
# through the libuv transport), with navclient watching the same session.
. "$(dirname "$0")/lib.sh"
SHOP="${SHOP_HEADLESS_BIN:-$ROOT/.build/release/shop-headless}"

start_navsyncd swift-client
"$NAVCLIENT" watch "$WS_URL" --session demo --json >"$OUT/swift-client-watch.jsonl" 2>&1 &
watcher=$!
sleep 0.5
check "the headless shop runs the flow through the navigator" bash -c "'$SHOP' '$WS_URL' >'$OUT/swift-client.out' 2>&1"
check "it printed each step" grep -q "rev 13  paid: main > cart > checkout > done" "$OUT/swift-client.out"
check "a back swipe through the path binding popped" grep -q "swiped back: main > home > detail" "$OUT/swift-client.out"
active_path() {
    curl -sf "$HTTP_URL/api/sessions/demo" | python3 -c '
import json, sys
s = json.load(sys.stdin)["state"]["root"]
path = []
while s:
    e = s["current"] if s["kind"] == "root" else (next(t for t in s["tabs"] if t["id"] == s["selected"]) if s["kind"] == "tabs" else s["stack"][-1])
    path.append(e["route"]); s = e.get("coordinator")
print(" > ".join(path))'
}
check "the server holds what the navigator did" bash -c "[ \"\$($(declare -f active_path); HTTP_URL=$HTTP_URL active_path)\" = 'main > cart > checkout > done' ]"
kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null || true
check "navclient watched every revision" bash -c "grep -c '\"type\":\"patch\"' '$OUT/swift-client-watch.jsonl' | grep -qx 13"
# A navigator whose session does not exist and may not be made: a clear error, exit 1.
check "a refused join is an error, not a hang" bash -c "! '$SHOP' '$WS_URL' --session 'bad name' >'$OUT/swift-client-bad.out' 2>&1 && grep -q \"session\" '$OUT/swift-client-bad.out'"
stop_navsyncd
finish
