#!/usr/bin/env bash
# Cluster mode on a Redis like the managed ones (docs/cluster.md, "Production: a managed Redis, Sentinel, and failover without loss"): ACL
# users and passwords, TLS, Sentinel failover under load with --redis-wait 1
# (cluster_managed.py), and faults on the network between a node and Redis, in network
# namespaces the test makes itself (cluster_netns.py).
. "$(dirname "$0")/lib.sh"
command -v redis-server >/dev/null || { echo "cluster_managed.sh: redis-server is not installed (scripts/test installs it)"; exit 1; }
cd "$ROOT/tests/integration"
py_checks cluster_managed.py "$NAVSYNCD" "$OUT"
py_checks cluster_netns.py "$NAVSYNCD" "$OUT"
finish
