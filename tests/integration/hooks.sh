#!/usr/bin/env bash
# The app's backend in the loop (docs/backend.md): hooks that fail every way, a receiver
# down and back, kill -9 during delivery with --data, bad files (hooks.py).
. "$(dirname "$0")/lib.sh"
py_checks "$ROOT/tests/integration/hooks.py" "$NAVSYNCD" "$OUT"
finish
