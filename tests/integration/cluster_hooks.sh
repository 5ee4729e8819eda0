#!/usr/bin/env bash
# The app's backend with a cluster: a hook's set on every node, and webhook delivery
# taken over when the delivering node is killed (cluster_hooks.py, Redis started there).
. "$(dirname "$0")/lib.sh"
command -v redis-server >/dev/null || { echo "cluster_hooks.sh: redis-server is not installed (scripts/test installs it)"; exit 1; }
py_checks "$ROOT/tests/integration/cluster_hooks.py" "$NAVSYNCD" "$OUT"
finish
