#!/usr/bin/env bash
# navsync.js in headless Chromium against a hook-driven flow (web_hooks.py).
. "$(dirname "$0")/lib.sh"
py_checks "$ROOT/tests/integration/web_hooks.py" "$NAVSYNCD" "$OUT"
finish
