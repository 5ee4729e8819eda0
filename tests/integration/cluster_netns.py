"""Cluster mode with faults on the network, not signals (issue 42). The test makes its
own network namespaces joined by veth pairs, with addresses that exist only inside
them:

    nav-c (the clients) --10.77.3.0/24-- nav-a (node a) --10.77.1.0/24-- nav-r (Redis)
    nav-c               --10.77.4.0/24-- nav-b (node b) --10.77.2.0/24-- nav-r

Faults on node a's link to Redis, under load from writers on both nodes: packet loss
(nftables dropping at random: this kernel has no netem qdisc), then a partition (the
link down). Checked: nothing acknowledged is lost or doubled, the partitioned node
stops acknowledging within a bounded time and says why (/readyz, its log), and catches
up once the link is back. The stalls are printed.

usage: cluster_netns.py NAVSYNCD OUT_DIR (as root)"""
import asyncio
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import redis
from checks import check, finish
from cluster_faults import Writer, acked_once, drain

NAVSYNCD, OUT = sys.argv[1], sys.argv[2]
TAG = str(os.getpid() % 10000)
NS = {k: f"nav{TAG}-{k}" for k in "rabc"}
LINKS = [("a", "r", "10.77.1.2", "10.77.1.1"), ("b", "r", "10.77.2.2", "10.77.2.1"),
         ("c", "a", "10.77.3.1", "10.77.3.2"), ("c", "b", "10.77.4.1", "10.77.4.2")]
REDIS = {"a": "10.77.1.1", "b": "10.77.2.1"}      # Redis as each node sees it
# Node a reaches Redis by a DNS name, from its namespace's own hosts file (`ip netns
# exec` mounts /etc/netns/NAME/hosts over /etc/hosts), resolved at every connect.
REDIS_NAME = "redis.navsync.internal"
NODE = {"a": "10.77.3.2", "b": "10.77.4.2"}       # each node as the clients see it
SESSIONS = ["s1", "s2"]
libc = ctypes.CDLL(None, use_errno=True)


def sh(*args):
    subprocess.run(args, check=True, capture_output=True)


@contextlib.contextmanager
def netns(key):
    """Sockets made inside are in namespace `key` (setns moves this thread)."""
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{NS[key]}", os.O_RDONLY)
    try:
        if libc.setns(target, 0x40000000) != 0:
            raise OSError(ctypes.get_errno(), "setns")
        yield
    finally:
        libc.setns(home, 0x40000000)
        os.close(home)
        os.close(target)


def veth(x, y):
    return f"v{TAG}{x}{y}"


def build():
    for k in NS.values():
        sh("ip", "netns", "add", k)
        sh("ip", "-n", k, "link", "set", "lo", "up")
    os.makedirs(f"/etc/netns/{NS['a']}", exist_ok=True)
    with open(f"/etc/netns/{NS['a']}/hosts", "w") as f:
        f.write(f"127.0.0.1 localhost\n{REDIS['a']} {REDIS_NAME}\n")
    for x, y, ax, ay in LINKS:
        sh("ip", "link", "add", veth(x, y), "netns", NS[x], "type", "veth", "peer", "name", veth(y, x), "netns", NS[y])
        for side, addr, dev in ((x, ax, veth(x, y)), (y, ay, veth(y, x))):
            sh("ip", "-n", NS[side], "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", NS[side], "link", "set", dev, "up")


def teardown(procs):
    for p in procs:
        with contextlib.suppress(Exception):
            p.kill()
            p.wait()
    for k in NS.values():
        subprocess.run(["ip", "netns", "del", k], capture_output=True)
    subprocess.run(["rm", "-rf", f"/etc/netns/{NS['a']}"])


def wait_for(url, seconds=10):
    for _ in range(int(seconds * 20)):
        try:
            with netns("c"):
                urllib.request.urlopen(url, timeout=0.5).read()
            return True
        except (OSError, urllib.error.URLError):
            time.sleep(0.05)
    return False


def http(node, path):
    with netns("c"):
        try:
            with urllib.request.urlopen(f"http://{NODE[node]}:7421{path}", timeout=3) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())
        except OSError as e:
            return 0, {"error": str(e)}


def lossy(on, percent=10):
    """Drops `percent`% of node a's packets to and from Redis, at random (nftables)."""
    dev = veth("a", "r")
    if on:
        sh("ip", "netns", "exec", NS["a"], "nft", "add", "table", "inet", "fault")
        for chain, hook, match in (("out", "output", "oifname"), ("in", "input", "iifname")):
            sh("ip", "netns", "exec", NS["a"], "nft", "add", "chain", "inet", "fault", chain,
               f"{{ type filter hook {hook} priority 0; }}")
            sh("ip", "netns", "exec", NS["a"], "nft", "add", "rule", "inet", "fault", chain, match, dev,
               "numgen", "random", "mod", "100", "<", str(percent), "drop")
    else:
        sh("ip", "netns", "exec", NS["a"], "nft", "delete", "table", "inet", "fault")


def partition(on):
    """Node a's link to Redis down (no packet passes, no reset is sent), or up again."""
    sh("ip", "-n", NS["a"], "link", "set", veth("a", "r"), "down" if on else "up")


def redis_client():
    with netns("r"):
        r = redis.Redis(host="10.77.1.1", decode_responses=True)
        r.ping()
    return r


class Timed(Writer):
    """A writer that also records when each acknowledgement came (for the stalls)."""

    def __init__(self, *a):
        super().__init__(*a)
        self.ack_times = []
        acked = self.acked

        class Recording(dict):
            def __setitem__(s, k, v):
                self.ack_times.append(time.monotonic())
                dict.__setitem__(s, k, v)
        self.acked = Recording(acked)


def stall(writers, start, end):
    """The longest time without an acknowledgement, per writer, within [start, end]."""
    out = []
    for w in writers:
        times = [start] + [t for t in w.ack_times if start <= t <= end] + [end]
        gaps = [(b - a, a - start) for a, b in zip(times, times[1:])]
        worst = max(gaps)
        if os.environ.get("NETNS_DEBUG"):
            print(f"   {w.client}: longest gap {worst[0]:.2f} s from {worst[1]:.2f} s after the fault", flush=True)
        out.append(worst[0])
    return out


async def run_with_fault(name, fault, heal, hold):
    stop = asyncio.Event()
    # Writers 0 and 2 start on node a, 1 and 3 on node b; each keeps to its node (a
    # list of one URL) so that a stalled node's stall shows.
    writers = [Timed(i, [f"ws://{NODE['ab'[i % 2]]}:7421/ws"], 1_000_000, stop) for i in range(4)]
    for w in writers:
        w.client = f"{name}-{w.client}"     # ids start at 0 in every run
    with netns("c"):
        tasks = [asyncio.create_task(w.run()) for w in writers]
        await asyncio.sleep(1.5)
        t0 = time.monotonic()
        fault()
        first_refusal = None
        reason = ""
        while time.monotonic() - t0 < hold:
            if first_refusal is None:
                status, body = http("a", "/readyz")
                if status == 503:
                    first_refusal, reason = time.monotonic() - t0, body.get("reason", "")
            await asyncio.sleep(0.05)
        t1 = time.monotonic()
        heal()
        ready_again = None
        while time.monotonic() - t1 < 20:
            if http("a", "/readyz")[0] == 200:
                ready_again = time.monotonic() - t1
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.5)
        t2 = time.monotonic()
        done = await drain(writers, tasks, stop, 50, 60)
    check(f"{name}: every writer got every command it sent acknowledged once the fault healed", done,
          str([(len(w.acked), w.count) for w in writers]))
    r = redis_client()
    for s in SESSIONS:
        ok, n = acked_once(r, s, writers)
        check(f"{name}: {s}: every acknowledged command is in Redis's log exactly once ({n})", ok)
    want = {s: int(r.hget(f"navsync:{{{s}}}:meta", "rev")) for s in SESSIONS}
    caught = None
    for _ in range(100):
        got = {s: http(n, f"/api/sessions/{s}")[1].get("rev") for s in SESSIONS for n in "ab"}
        if all(v == want[s] for s, v in got.items()):
            caught = True
            break
        await asyncio.sleep(0.1)
    check(f"{name}: both nodes hold what Redis holds afterwards (revisions {want})", caught is True)
    on_a = [w for i, w in enumerate(writers) if i % 2 == 0]
    on_b = [w for i, w in enumerate(writers) if i % 2 == 1]
    stalls_a, stalls_b = stall(on_a, t0, t2), stall(on_b, t0, t2)
    return first_refusal, reason, ready_again, stalls_a, stalls_b


async def main():
    if os.geteuid() != 0:
        check("cluster_netns: needs root for network namespaces", False)
        return
    procs = []
    try:
        build()
        d = f"{OUT}/netns"
        os.makedirs(d, exist_ok=True)
        procs.append(subprocess.Popen(["ip", "netns", "exec", NS["r"], "redis-server", "--port", "6379", "--bind", "0.0.0.0",
                                       "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", d],
                                      stdout=open(f"{d}/redis.log", "w"), stderr=subprocess.STDOUT))
        time.sleep(0.3)
        for n in "ab":
            procs.append(subprocess.Popen(["ip", "netns", "exec", NS[n], NAVSYNCD, "--host", "0.0.0.0", "--insecure", "--port", "7421",
                                           "--cluster", f"redis://{REDIS_NAME if n == 'a' else REDIS[n]}:6379", "--node", n, "--rate", "100000", "--burst", "100000",
                                           "--snapshot-every", "10000000"],   # the whole log kept, to check every ack
                                          stdout=subprocess.DEVNULL, stderr=open(f"{d}/node-{n}.log", "w")))
        for n in "ab":
            check(f"node {n} serves in its namespace, Redis reached across the veth",
                  wait_for(f"http://{NODE[n]}:7421/healthz") and http(n, "/readyz")[0] in (200, 503))
        for _ in range(50):
            if all(http(n, "/readyz")[0] == 200 for n in "ab"):
                break
            time.sleep(0.1)
        check("both nodes ready", all(http(n, "/readyz")[0] == 200 for n in "ab"))
        check(f"node a reached Redis by the name {REDIS_NAME} (resolved in its namespace)",
              http("a", "/api/cluster")[1]["redis"]["primary"] == f"{REDIS_NAME}:6379")
        import websockets
        with netns("c"):
            ws = await websockets.connect(f"ws://{NODE['a']}:7421/ws", subprotocols=["navsync.v1"])
            for s in SESSIONS:
                await ws.send(json.dumps({"type": "join", "session": s, "create": True, "id": s}))
                while (m := json.loads(await ws.recv())).get("type") == "presence":
                    pass
                check(f"session {s} created", m.get("type") == "joined", str(m))
            await ws.close()

        print("-- loss: 10% of node a's packets to and from Redis dropped for 6 s", flush=True)
        _, _, _, sa, sb = await run_with_fault("loss", lambda: lossy(True), lambda: lossy(False), 6)
        print(f"   longest stall without an ack: writers on node a {max(sa):.2f} s, on node b {max(sb):.2f} s", flush=True)

        print("-- partition: node a cut off from Redis for 8 s", flush=True)
        refused, reason, again, sa, sb = await run_with_fault("partition", lambda: partition(True), lambda: partition(False), 8)
        check("partition: node a stopped acknowledging within 5 s and said why (/readyz)",
              refused is not None and refused < 5 and "store:" in reason, f"{refused} {reason}")
        check("partition: node a is ready again once the link is back", again is not None)
        # (Well under the 8 s: node a catching up, Redis and this script share 2 cores with b.)
        check("partition: node b's writers went on (no wait for an ack over 3 s)", max(sb) < 3.0, str(sb))
        log = open(f"{d}/node-a.log").read()
        check("partition: node a's log says it lost Redis and is not ready", "lost Redis" in log and "not ready: store:" in log)
        print(f"   node a said not ready {refused or 0:.2f} s after the cut ({reason}); ready {again or 0:.2f} s after the link came back",
              flush=True)
        print(f"   longest stall without an ack: writers on node a {max(sa):.2f} s (the partition lasted 8 s), on node b {max(sb):.2f} s",
              flush=True)
    finally:
        teardown(procs)


if __name__ == "__main__":
    # A timeout's SIGTERM still removes the namespaces (the finally of main).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    asyncio.run(main())
    finish("cluster_netns")
