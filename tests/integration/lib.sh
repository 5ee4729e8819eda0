# Helpers for the integration tests. Sourced by each tests/integration/*.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${TEST_OUTPUT:-$ROOT/test-output}"
mkdir -p "$OUT"
PY="$ROOT/.venv/bin/python"
NAVSYNCD="${NAVSYNCD_BIN:-$ROOT/.build/release/navsyncd}"   # NAVSYNCD_BIN: e.g. a sanitizer build
NAVCLIENT="${NAVCLIENT_BIN:-$ROOT/.build/release/navclient}"

# start_navsyncd NAME ARGS...: runs navsyncd on a free port, logging to
# $OUT/NAME.log; sets NAVSYNCD_PID, WS_URL, HTTP_URL.
start_navsyncd() {
    local name="$1"; shift
    local fifo="$OUT/$name.stdout"
    rm -f "$fifo"
    "$NAVSYNCD" --port 0 "$@" >"$fifo" 2>"$OUT/$name.log" &
    NAVSYNCD_PID=$!
    for _ in $(seq 1 100); do
        [ -s "$fifo" ] && break
        kill -0 "$NAVSYNCD_PID" 2>/dev/null || { echo "navsyncd ($name) did not start:"; cat "$OUT/$name.log"; return 1; }
        sleep 0.05
    done
    local line; line="$(head -n 1 "$fifo")"
    case "$line" in
        "navsyncd listening on ws://"* | "navsyncd listening on wss://"*) ;;
        *) echo "unexpected first line: '$line'"; return 1 ;;
    esac
    WS_URL="$(echo "$line" | awk '{print $4}')"
    HTTP_URL="$(echo "$line" | sed 's/.*(web: \(.*\))/\1/')"
    export WS_URL HTTP_URL NAVSYNCD_PID
}

# stop_navsyncd [SIGNAL]: signals navsyncd and checks that it exits 0.
stop_navsyncd() {
    local sig="${1:-INT}"
    kill -"$sig" "$NAVSYNCD_PID"
    local rc=0
    wait "$NAVSYNCD_PID" || rc=$?
    [ "$rc" -eq 0 ] || { echo "navsyncd exited $rc after SIG$sig"; return 1; }
}

PASSED=0
FAILED=0
check() {   # check NAME COMMAND...: runs the command, counts and prints the result.
    local name="$1"; shift
    if "$@" >>"$OUT/checks.log" 2>&1; then PASSED=$((PASSED + 1)); echo "ok   $name"
    else FAILED=$((FAILED + 1)); echo "FAIL $name (output in $OUT/checks.log)"; fi
}

py_checks() {   # py_checks SCRIPT ARGS...: runs a Python script that prints "ok  …" and
    # "FAIL …" lines, and counts them; a script that fails without a FAIL line counts one.
    local log rc=0 passed failed
    log=$(mktemp "$OUT/py_checks.XXXX")
    "$PY" "$@" >"$log" || rc=$?
    cat "$log"
    passed=$(grep -c '^ok ' "$log" || true); failed=$(grep -c '^FAIL' "$log" || true)
    PASSED=$((PASSED + passed)); FAILED=$((FAILED + failed))
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then FAILED=$((FAILED + 1)); fi
}

finish() {   # prints the closing line and fails when anything failed.
    echo "$(basename "$0"): $PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
}
