#!/usr/bin/env bash
# "~CMD.N" references and ack.created over WebSocket: on a durable server before and
# after kill -9, and across two cluster nodes sharing a Redis (started by the script).
. "$(dirname "$0")/lib.sh"
command -v redis-server >/dev/null || { echo "references.sh: redis-server is not installed (scripts/test installs it)"; exit 1; }
py_checks "$ROOT/tests/integration/references.py" "$NAVSYNCD" "$OUT"
finish
