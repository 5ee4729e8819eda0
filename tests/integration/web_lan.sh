#!/usr/bin/env bash
# navsyncd --lan as a person uses it: the printed URL (with the run's token) opened in
# Chromium from a non-loopback address of this machine connects; without the token it
# is refused with a visible reason. Runs in a private network namespace (unshare -n)
# with its own veth address, so nothing listens beyond this test.
. "$(dirname "$0")/lib.sh"

if [ "${1:-}" != "--inside" ]; then
    if ! unshare -n true 2>/dev/null; then
        echo "SKIP web_lan: a private network namespace needs root (unshare -n)"; exit 0
    fi
    exec unshare -n bash "$0" --inside
fi

ip link set lo up
ip link add nsv0 type veth peer name nsv1
ip addr add 10.99.0.1/24 dev nsv0
ip link set nsv0 up; ip link set nsv1 up
for _ in $(seq 1 50); do ip -4 addr show nsv0 | grep -q 10.99.0.1 && break; sleep 0.1; done

"$NAVSYNCD" --lan --port 0 >"$OUT/lan.out" 2>"$OUT/lan.log" &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q "token=" "$OUT/lan.out" 2>/dev/null && break; sleep 0.05; done
URL=$(grep -o 'http://10\.99\.0\.1:[0-9]*/?session=demo&token=[0-9a-f]*' "$OUT/lan.out" | head -n 1)
check "--lan prints the page's URL with a token for the LAN address" test -n "$URL"
check "and says that access without the token is refused" grep -q "Without the token, access is refused" "$OUT/lan.out"
check "the first line still names an address usable here" bash -c "head -n 1 '$OUT/lan.out' | grep -q '^navsyncd listening on ws://127.0.0.1:'"
py_checks "$ROOT/tests/integration/web_lan.py" "$URL"
finish
