#!/usr/bin/env bash
# The README's orders example, driven by each client to /orders/7: opened signed out it
# is redirected to sign-in, whose `next` says where the user was going; once `user` is
# set the client opens it. curl runs the README's lines as written; Python runs
# docs/python.md's guarded flow as written; Swift runs the navigator through
# `shop-headless --orders`. (navsync.js runs docs/javascript.md's guarded flow in
# Chromium in web_module.py.)
. "$(dirname "$0")/lib.sh"
SHOP="${SHOP_HEADLESS_BIN:-$ROOT/.build/release/shop-headless}"

active_path() {   # active_path SESSION: routes, with params, root first
    curl -sf "${HTTP_URL}api/sessions/$1" | python3 -c '
import json, sys
s = json.load(sys.stdin)["state"]["root"]
path = []
while s:
    e = s["current"] if s["kind"] == "root" else (next(t for t in s["tabs"] if t["id"] == s["selected"]) if s["kind"] == "tabs" else s["stack"][-1])
    path.append(e["route"] + (json.dumps(e["params"], separators=(",", ":")) if e["params"] else "")); s = e.get("coordinator")
print(" > ".join(path))'
}

start_navsyncd orders
port="$(echo "$WS_URL" | sed 's#.*:\([0-9]*\)/ws#\1#')"
# curl: the README's lines from the orders guard on, as written (its port made this server's).
awk '/^```sh/ { inb = 1; next } inb && /^```/ { inb = 0; next } inb && /orders\/7|"next"/' "$ROOT/README.md" | sed "s/7420/$port/g" >"$OUT/orders-readme.sh"
check "the README has the orders example's curl lines" bash -c "[ \$(wc -l <'$OUT/orders-readme.sh') -ge 3 ]"
check "curl: the README's lines, as written" bash -c "bash -e '$OUT/orders-readme.sh' >'$OUT/orders-curl.out' 2>&1 && grep -q '\"next\":\"/orders/7\"' '$OUT/orders-curl.out'"
check "...end on order 7" bash -c "[ \"\$($(declare -f active_path); HTTP_URL='$HTTP_URL' active_path demo)\" = 'main > profile > order{\"id\":7}' ]"
# Python: docs/python.md's guarded flow, as written.
awk '/^## A guarded flow/ { f = 1 } f && /^```python/ { inb = 1; next } inb && /^```/ { exit } inb' "$ROOT/docs/python.md" | sed "s/7420/$port/g" >"$OUT/orders.py"
check "Python: docs/python.md's guarded flow ends on order 7" bash -c "'$PY' '$OUT/orders.py' | tee '$OUT/orders-python.out' | grep -qx \"\\['main', 'profile', 'order'\\]\" && [ \"\$($(declare -f active_path); HTTP_URL='$HTTP_URL' active_path qa-orders)\" = 'main > profile > order{\"id\":7}' ]"
# Swift: the navigator.
check "Swift: the navigator is redirected to sign-in, signs in and opens next: order 7" bash -c \
    "'$SHOP' '$WS_URL' --session swift-orders --orders >'$OUT/orders-swift.out' 2>&1 && grep -q \"sign-in's next: /orders/7\" '$OUT/orders-swift.out' && grep -q 'signed in: main > profile > order{\"id\":7}' '$OUT/orders-swift.out'"
sed 's/^/   /' "$OUT/orders-swift.out"
stop_navsyncd
finish
