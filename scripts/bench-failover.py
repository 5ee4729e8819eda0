"""scripts/bench --failover: how long writes pause when the Redis primary dies under
Sentinel, for the settings docs/cluster.md names. Prints figures, asserts nothing.

For each setting: a primary with two replicas and three Sentinels (quorum 2) on
loopback, one navsyncd with `--cluster redis+sentinel://…` and `--redis-wait 1`, and a
writer (the Python package) sending one command after another to it. Once writes flow,
the primary is killed with SIGKILL; the pause is the longest time between two
acknowledged commands around it. With `--redis-wait 1` a write is acknowledged only
once a replica has it, so after the promotion writes wait, too, for the remaining
replica to resynchronize with the new primary: that is what the replicas'
`repl-diskless-sync-delay` (Redis's default 5 s) adds.

usage: bench-failover.py NAVSYNCD"""
import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import navsync

NAVSYNCD = sys.argv[1]
SETTINGS = [   # (Sentinels' down-after-milliseconds, replicas' repl-diskless-sync-delay in s)
    (1000, 0), (1000, 5), (3000, 0), (5000, 0),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=10):
    for _ in range(int(seconds * 20)):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=5).stdout


def run(down_after, delay):
    d = tempfile.mkdtemp(prefix="navsync-failover-")
    procs = []

    def start(*args, log):
        p = subprocess.Popen(args, stdout=open(f"{d}/{log}", "a"), stderr=subprocess.STDOUT)
        procs.append(p)
        return p
    redis_args = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--repl-diskless-sync", "yes",
                  "--repl-diskless-sync-delay", str(delay)]
    primary_port = free_port()
    primary = start("redis-server", "--port", str(primary_port), "--dir", d, *redis_args, log="primary.log")
    wait_port(primary_port)
    replica_ports = [free_port(), free_port()]
    for i, port in enumerate(replica_ports):
        start("redis-server", "--port", str(port), "--dir", d, "--replicaof", "127.0.0.1", str(primary_port), *redis_args,
              log=f"replica-{i}.log")
        wait_port(port)
    sentinel_ports = [free_port() for _ in range(3)]
    for i, port in enumerate(sentinel_ports):
        conf = f"{d}/sentinel-{i}.conf"
        with open(conf, "w") as f:
            f.write(f"port {port}\nbind 127.0.0.1\ndir {d}\nsentinel monitor navsync 127.0.0.1 {primary_port} 2\n"
                    f"sentinel down-after-milliseconds navsync {down_after}\nsentinel failover-timeout navsync 10000\n"
                    "sentinel parallel-syncs navsync 2\n")
        start("redis-server", conf, "--sentinel", log=f"sentinel-{i}.log")
        wait_port(port)
    for _ in range(200):
        if "connected_slaves:2" in cli(primary_port, "INFO", "replication") and \
                all("num-other-sentinels\n2" in cli(p, "SENTINEL", "MASTER", "navsync") for p in sentinel_ports):
            break
        time.sleep(0.1)
    node_port = free_port()
    url = "redis+sentinel://" + ",".join(f"127.0.0.1:{p}" for p in sentinel_ports) + "/navsync"
    start(NAVSYNCD, "--port", str(node_port), "--cluster", url, "--redis-wait", "1", "--rate", "100000", "--burst", "100000",
          "--log-level", "warn", log="node.log")
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{node_port}/readyz", timeout=1) as r:
                if r.status == 200:
                    break
        except Exception:
            pass
        time.sleep(0.05)

    async def writer():
        acks = []
        async with navsync.connect(f"ws://127.0.0.1:{node_port}/ws", "demo", timeout=60) as s:
            killed = None
            n = 0
            while True:
                n += 1
                await s.update({"n": n}, at="App")
                now = time.monotonic()
                acks.append(now)
                if killed is None and len(acks) >= 200:
                    killed = time.monotonic()
                    primary.send_signal(signal.SIGKILL)
                if killed is not None and now - killed > 3 and now - acks[-2] < 0.2 and len(acks) > 400:
                    break
                if killed is not None and now - killed > 60:
                    break
            # Read back from the node: the last acknowledged write is what the session holds.
            async with navsync.connect(f"ws://127.0.0.1:{node_port}/ws", "demo") as check:
                kept = ((check.state or {}).get("root", {}).get("current", {}).get("data") or {}).get("n")
            return acks, killed, kept == n
    acks, killed, kept = asyncio.run(writer())
    gaps = [(b - a, a) for a, b in zip(acks, acks[1:]) if b >= killed]
    pause, _ = max(gaps)
    promoted = None
    for line in open(f"{d}/sentinel-0.log"):
        if "+switch-master" in line:
            promoted = line
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    return pause, len(acks), kept


print("Sentinel failover under writes: a primary, two replicas, three Sentinels, one node with --redis-wait 1 (loopback)")
for down_after, delay in SETTINGS:
    pause, n, kept = run(down_after, delay)
    print(f"  down-after-milliseconds {down_after:>5}, repl-diskless-sync-delay {delay} s: writes paused {pause:.2f} s "
          f"({n} commands acknowledged; {'the last one is what the session holds' if kept else 'THE LAST ACKNOWLEDGED WRITE IS MISSING'})",
          flush=True)
