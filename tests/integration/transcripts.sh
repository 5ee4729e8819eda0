#!/usr/bin/env bash
# The docs' transcripts (```` $ curl … ```` followed by what it prints) run as written,
# each document against a fresh demo server (transcripts.py).
. "$(dirname "$0")/lib.sh"
for doc in "$ROOT/README.md" "$ROOT"/docs/*.md; do
    grep -q '^\$ curl' "$doc" || continue
    start_navsyncd "transcripts-$(basename "$doc" .md)"
    py_checks "$ROOT/tests/integration/transcripts.py" "$doc" "$(echo "$WS_URL" | sed 's#.*:\([0-9]*\)/ws#\1#')"
    stop_navsyncd
done
finish
