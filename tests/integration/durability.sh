#!/usr/bin/env bash
# navsyncd --data: the start-up lines, the directory lock, SIGKILL crashes under load
# (both --fsync always and batch), a corrupt journal, and a full disk.
. "$(dirname "$0")/lib.sh"
DATA="$(mktemp -d /tmp/navsync-durability-XXXXXX)"
cleanup() {
    set +e
    kill -9 "$NAVSYNCD_PID" 2>/dev/null; sleep 0.2
    umount "$DATA/small" 2>/dev/null; rm -rf "$DATA"
    return 0
}
trap cleanup EXIT
api() { echo "${HTTP_URL}api/sessions/demo${1:-}"; }
post() { curl -s -o "$OUT/post.json" -w '%{http_code}' -X POST -H 'X-Navsync-Client: durability' -d "$1" "$(api /commands)"; }
rev() { curl -s "$(api)" | sed 's/.*"rev":\([0-9]*\).*/\1/'; }

start_navsyncd memory
check "without --data the start-up says sessions are in memory only" grep -q "sessions are in memory only" "$OUT/memory.log"
stop_navsyncd

start_navsyncd data --data "$DATA/one" --fsync always
check "with --data the start-up names the directory and the fsync mode" grep -q "sessions are kept in $DATA/one (--fsync always)" "$OUT/data.log"
check "a second navsyncd on the same directory is refused, naming the first" bash -c \
    "! '$NAVSYNCD' --port 0 --data '$DATA/one' >/dev/null 2>'$OUT/second.err' && grep -q 'in use by another navsyncd (pid $NAVSYNCD_PID)' '$OUT/second.err'"
check "--fsync with an unknown mode is a usage error (exit 2)" bash -c \
    "'$NAVSYNCD' --data '$DATA/x' --fsync sometimes 2>'$OUT/usage.err'; [ \$? -eq 2 ] && grep -q 'fsync needs always, batch or off' '$OUT/usage.err'"
for i in 1 2 3 4 5; do post "{\"id\":\"s$i\",\"ops\":[{\"op\":\"update\",\"entry\":\"e1\",\"data\":{\"n\":$i}}]}" >/dev/null; done
check "five commands applied" test "$(rev)" = 5
check "/metrics counts journal records and syncs" bash -c \
    "m=\$(curl -sf '${HTTP_URL}metrics'); echo \"\$m\" | grep -q '^navsync_journal_records_total 5' && echo \"\$m\" | grep -q '^navsync_journal_syncs_total [1-9]'"
stop_navsyncd
start_navsyncd data2 --data "$DATA/one"
check "after a restart: same revision, and a resent id gets its original ack" bash -c \
    "[ '$(rev)' = 5 ] && curl -s -X POST -H 'X-Navsync-Client: durability' -d '{\"id\":\"s3\",\"ops\":[{\"op\":\"update\",\"entry\":\"e1\",\"data\":{\"n\":3}}]}' '$(api /commands)' | grep -q '\"rev\":3,.*\"duplicate\":true'"
check "...and the id reused for another command is 409 id_reused" bash -c \
    "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'X-Navsync-Client: durability' -d '{\"id\":\"s3\",\"ops\":[{\"op\":\"reset\"}]}' '$(api /commands)')\" = 409 ]"
check "...and changes nothing" test "$(rev)" = 5
stop_navsyncd

# A byte flipped in the middle of the journal: refused, naming file and offset; --repair cuts there.
journal="$DATA/one/sessions/demo.session/journal-0.log"
python3 - "$journal" <<'EOF'
import sys
path = sys.argv[1]
b = bytearray(open(path, "rb").read())
first = 8 + int.from_bytes(b[0:4], "little")
b[first + 12] ^= 0xFF          # inside the second record's payload
open(path, "wb").write(bytes(b))

EOF
check "a corrupt record in the middle refuses to start, naming file and offset" bash -c \
    "! '$NAVSYNCD' --port 0 --data '$DATA/one' >/dev/null 2>'$OUT/corrupt.err'; grep -q 'journal-0.log: corrupt record at offset [0-9]*, with good records after it' '$OUT/corrupt.err'"
start_navsyncd repaired --data "$DATA/one" --repair
check "--repair cuts the journal there and starts (revision 1 kept)" test "$(rev)" = 1
check "--repair says what it dropped" grep -q "cut at offset" "$OUT/repaired.log"
stop_navsyncd

# SIGKILL at random moments under concurrent writers and mirrors, both sync modes.
for mode in always batch; do
    "$PY" "$ROOT/tests/integration/crash_clients.py" "$NAVSYNCD" "$mode" 10 | tee "$OUT/crash-$mode.txt"
    check "crash test with --fsync $mode" grep -q "crash_clients.py $mode: [0-9]* passed, 0 failed" "$OUT/crash-$mode.txt"
done

# A full disk: a small tmpfs (root) or else a file-size limit on the process (prlimit).
mkdir -p "$DATA/small"
if [ -z "${NAVSYNC_NO_TMPFS:-}" ] && mount -t tmpfs -o size=192k tmpfs "$DATA/small" 2>/dev/null; then
    how="a full 192k tmpfs"
    logged_by_tmpfs=1
    start_navsyncd full --data "$DATA/small/data" --fsync always
    fill_disk() { head -c 10000000 /dev/zero >"$DATA/small/filler" 2>/dev/null || true; }
    free_space() { rm -f "$DATA/small/filler"; }
else
    how="a file-size limit (prlimit)"
    start_navsyncd full --data "$DATA/small/data" --fsync always
    fill_disk() { prlimit --pid "$NAVSYNCD_PID" --fsize="$(stat -c %s "$DATA/small/data/sessions/demo.session/journal-0.log")":unlimited; }
    free_space() { prlimit --pid "$NAVSYNCD_PID" --fsize=unlimited:unlimited; }
fi
for i in 1 2 3; do post "{\"id\":\"f$i\",\"ops\":[{\"op\":\"update\",\"entry\":\"e1\",\"data\":{\"f\":\"$i\"}}]}" >/dev/null; done
fill_disk
first_500=""
for i in $(seq 4 300); do
    code="$(post "{\"id\":\"f$i\",\"ops\":[{\"op\":\"update\",\"entry\":\"e1\",\"data\":{\"f\":\"$(printf '%012000d' "$i")\"}}]}")"
    if [ "$code" = 500 ]; then first_500=$i; break; fi
done
check "$how: a command is refused with 500 internal once the disk is full" bash -c \
    "[ -n '$first_500' ] && grep -q '\"code\":\"internal\"' '$OUT/post.json' && grep -qi 'no space\\|too large' '$OUT/post.json'"
stuck="$(rev)"
check "$how: the refused command changed nothing (revision $stuck)" test "$stuck" = "$((first_500 - 1))"
check "$how: the three commands before it are there" test "$stuck" -ge 3
check "$how: reads keep working (HTTP, navclient get)" bash -c \
    "curl -sf '$(api)' | grep -q '\"rev\":$stuck' && '$NAVCLIENT' get '$WS_URL' --session demo --json | grep -q '\"f\":\"0*$stuck\"'"
# (Under prlimit the log file is limited too, so only the tmpfs run can read the log line.)
[ -n "${logged_by_tmpfs:-}" ] && check "$how: the server logged the failure" grep -q "journal write failed" "$OUT/full.log"
free_space
check "$how: once space returns the same command applies" bash -c \
    "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{\"id\":\"f$first_500\",\"ops\":[{\"op\":\"update\",\"entry\":\"e1\",\"data\":{\"f\":\"again\"}}]}' '$(api /commands)')\" = 200 ] && [ \"\$(curl -s '$(api)' | sed 's/.*\"rev\":\\([0-9]*\\).*/\\1/')\" = $((stuck + 1)) ]"
kill -9 "$NAVSYNCD_PID"; wait "$NAVSYNCD_PID" 2>/dev/null || true
start_navsyncd full2 --data "$DATA/small/data"
check "$how: after a crash the session is back at revision $((stuck + 1))" test "$(rev)" = "$((stuck + 1))"
stop_navsyncd
finish
