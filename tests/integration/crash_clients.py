"""Crash test for `navsyncd --data` (issue 7): concurrent writers and mirrors while the
server is killed with SIGKILL at random moments and restarted on the same directory.

usage: crash_clients.py NAVSYNCD MODE ROUNDS

Writers (client identities w0..w5, two sessions) keep 4 commands in flight each; each
command sets `data.wN = n` on the session's first entry, so every applied command is
one revision. A writer resends what was unacknowledged after every reconnect, with
the same ids. Mirrors follow each session with since/epoch. At the end:
  - each session's revision equals the number of distinct commands acknowledged in it
    (nothing acknowledged lost, nothing applied twice);
  - `data.wN` is the last n writer N sent;
  - a resent acknowledged command gets its original revision back, marked duplicate,
    and its id reused for another command is id_reused (idempotency survived);
  - every mirror equals the server's snapshot; a clean restart changes nothing.
"""
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

import jsonpatch
import websockets

from checks import check, finish

NAVSYNCD, MODE, ROUNDS = sys.argv[1], sys.argv[2], int(sys.argv[3])
SESSIONS = ["crash-a", "crash-b"]
WRITERS = 6
WINDOW = 4
rng = random.Random(7)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, data):
        self.data, self.port, self.proc = data, free_port(), None
        self.log = open(os.path.join(os.environ.get("TEST_OUTPUT", "/tmp"), f"crash-{MODE}.log"), "ab")

    def start(self):
        self.proc = subprocess.Popen([NAVSYNCD, "--port", str(self.port), "--data", self.data, "--fsync", MODE,
                                      "--snapshot-every", "300", "--rate", "100000", "--burst", "100000",
                                      "--no-demo-session"], stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode()
        assert line.startswith("navsyncd listening on"), line
        return self

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=20)

    @property
    def url(self):
        return f"ws://127.0.0.1:{self.port}/ws"


state = {"draining": False, "done": False}


async def request(ws, message, kind):
    await ws.send(json.dumps(message))
    while True:
        m = json.loads(await ws.recv())
        if m["type"] in (kind, "error") and m.get("id") == message.get("id"):
            return m


class Writer:
    def __init__(self, n, server):
        self.n, self.server = n, server
        self.client, self.session = f"w{n}", SESSIONS[n % 2]
        self.next = 0
        self.pending = {}      # id -> message, in send order
        self.acked = {}        # id -> rev
        self.errors = []

    def command(self, k):
        return {"type": "command", "session": self.session, "id": f"{self.client}-{k}",
                "ops": [{"op": "update", "entry": "e1", "data": {self.client: k}}]}

    async def run(self):
        while not (state["draining"] and not self.pending and self.next > 0) and not state["done"]:
            try:
                async with websockets.connect(self.server.url, subprotocols=["navsync.v1"], open_timeout=2) as ws:
                    await request(ws, {"type": "hello", "id": "h", "client": self.client}, "welcome")
                    await request(ws, {"type": "join", "id": "j", "session": self.session, "create": True}, "joined")
                    for m in list(self.pending.values()):
                        await ws.send(json.dumps(m))
                    while True:
                        while len(self.pending) < WINDOW and not state["draining"] and True:
                            m = self.command(self.next)
                            self.next += 1
                            self.pending[m["id"]] = m
                            await ws.send(json.dumps(m))
                        if not self.pending and state["draining"]:
                            if state["draining"]:
                                return
                            await asyncio.sleep(0.05)
                            continue
                        m = json.loads(await ws.recv())
                        if m["type"] == "ack" and m.get("id") in self.pending:
                            del self.pending[m["id"]]
                            self.acked[m["id"]] = m["rev"]
                        elif m["type"] == "error":
                            self.pending.pop(m.get("id"), None)
                            self.errors.append(m)
            except (OSError, websockets.exceptions.WebSocketException, asyncio.TimeoutError):
                await asyncio.sleep(0.05)


class Mirror:
    """Follows a session: joined.state, then every patch; rejoins with since/epoch."""
    def __init__(self, session, server):
        self.session, self.server = session, server
        self.doc, self.rev, self.epoch = None, None, None
        self.catchups = {"patches": 0, "state": 0}
        self.problems = []

    async def run(self):
        while not state["done"]:
            try:
                async with websockets.connect(self.server.url, subprotocols=["navsync.v1"], open_timeout=2) as ws:
                    join = {"type": "join", "id": "j", "session": self.session, "create": True}
                    if self.rev is not None:
                        join.update(since=self.rev, epoch=self.epoch)
                    await ws.send(json.dumps(join))
                    while not state["done"]:
                        try:
                            m = json.loads(await asyncio.wait_for(ws.recv(), 0.2))
                        except asyncio.TimeoutError:
                            continue
                        if m["type"] == "joined":
                            self.epoch = m["epoch"]
                            if "state" in m:
                                self.doc, self.rev = m["state"], m["rev"]
                                self.catchups["state"] += 1
                            else:
                                self.catchups["patches"] += 1
                                for p in m["patches"]:
                                    self.apply(p)
                        elif m["type"] == "patch":
                            self.apply(m)
                        elif m["type"] == "snapshot":
                            self.doc, self.rev = m["state"], m["rev"]
            except (OSError, websockets.exceptions.WebSocketException, asyncio.TimeoutError):
                await asyncio.sleep(0.05)

    def apply(self, p):
        if p["base"] != self.rev:
            self.problems.append(f"patch base {p['base']} on rev {self.rev}")
        self.doc = jsonpatch.apply_patch(self.doc, p["ops"])
        self.rev = p["rev"]


def canonical(doc):
    return json.dumps(doc, sort_keys=True)


async def snapshot(server, session):
    async with websockets.connect(server.url, subprotocols=["navsync.v1"]) as ws:
        return await request(ws, {"type": "get", "id": "g", "session": session}, "snapshot")


async def main():
    data = tempfile.mkdtemp(prefix=f"navsync-crash-{MODE}-")
    server = Server(data).start()
    writers = [Writer(n, server) for n in range(WRITERS)]
    mirrors = [Mirror(s, server) for s in SESSIONS]
    tasks = [asyncio.create_task(x.run()) for x in writers + mirrors]
    kills = 0
    for _ in range(ROUNDS):
        await asyncio.sleep(rng.uniform(0.15, 0.7))
        server.kill()
        kills += 1
        await asyncio.sleep(rng.uniform(0.0, 0.2))
        server.start()
    state["draining"] = True
    await asyncio.wait_for(asyncio.gather(*tasks[:WRITERS]), 60)

    acked = {s: {} for s in SESSIONS}
    for w in writers:
        acked[w.session].update(w.acked)
    total = sum(len(a) for a in acked.values())
    check(f"{MODE}: the server was killed {kills} times mid-load and restarted on the same directory", kills >= 10 and total > 100,
          f"{kills} kills, {total} acks")
    check(f"{MODE}: no command was refused", not any(w.errors for w in writers), [w.errors[:2] for w in writers if w.errors])

    final = {s: await snapshot(server, s) for s in SESSIONS}
    for s in SESSIONS:
        check(f"{MODE} {s}: revision = distinct commands acknowledged ({len(acked[s])}): none lost, none applied twice",
              final[s]["rev"] == len(acked[s]), f"rev {final[s]['rev']}")
    # History survived every kill: each acknowledged command once, at its revision, in order.
    for s in SESSIONS:
        entries, before, earliest = [], None, 0
        async with websockets.connect(server.url, subprotocols=["navsync.v1"]) as ws:
            while True:
                ask = {"type": "history", "id": "h", "session": s, "limit": 1000}
                if before is not None:
                    ask["before"] = before
                page = await request(ws, ask, "history")
                earliest = page["earliest"]
                entries += page["entries"]
                if not page["entries"] or page["entries"][-1]["rev"] <= earliest + 1:
                    break
                before = page["entries"][-1]["rev"]
        revs = [e["rev"] for e in reversed(entries)]
        cmds = [e["cmd"] for e in reversed(entries)]
        check(f"{MODE} {s}: history lists every acknowledged command exactly once, in revision order ({len(entries)} held from {earliest})",
              revs == list(range(earliest + 1, final[s]["rev"] + 1)) and len(set(cmds)) == len(cmds)
              and all(acked[s].get(e["cmd"]) == e["rev"] for e in entries),
              (revs[:3], revs[-3:], final[s]["rev"], [e for e in entries if acked[s].get(e["cmd"]) != e["rev"]][:3]))
    data_e1 = {s: final[s]["state"]["root"]["current"].get("data", {}) for s in SESSIONS}
    check(f"{MODE}: each writer's last command is in the state",
          all(data_e1[w.session].get(w.client) == w.next - 1 for w in writers),
          {w.client: (data_e1[w.session].get(w.client), w.next - 1) for w in writers})

    # Resending acknowledged ids: the original revision comes back, nothing applies.
    ok = True
    for w in writers:
        async with websockets.connect(server.url, subprotocols=["navsync.v1"]) as ws:
            await request(ws, {"type": "hello", "id": "h", "client": w.client}, "welcome")
            recent = sorted(w.acked, key=lambda c: int(c.split("-")[1]))[-500:]   # the table keeps 1024 per client
            for cid in rng.sample(recent, min(20, len(recent))):
                resend = w.command(int(cid.split("-")[1]))   # the same command again
                m = await request(ws, resend, "ack")
                ok = ok and m["type"] == "ack" and m["rev"] == w.acked[cid] and m.get("duplicate") is True
                # The id reused for another command is refused, and nothing applies.
                reused = await request(ws, {"type": "command", "session": w.session, "id": cid, "ops": [{"op": "reset"}]}, "error")
                ok = ok and reused.get("code") == "id_reused"
    check(f"{MODE}: acknowledged ids resent after the restarts get their original revision", ok)

    # Mirrors catch up and equal the server.
    for _ in range(100):
        if all(m.rev == final[m.session]["rev"] for m in mirrors):
            break
        await asyncio.sleep(0.05)
    for m in mirrors:
        check(f"{MODE} {m.session}: the mirror equals the server's snapshot (caught up {m.catchups})",
              m.rev == final[m.session]["rev"] and canonical(m.doc) == canonical(final[m.session]["state"]) and not m.problems,
              f"mirror rev {m.rev}, problems {m.problems[:3]}")
    check(f"{MODE}: after a restart mirrors rejoined with patches, not snapshots, at least once",
          sum(m.catchups["patches"] for m in mirrors) > 0, [m.catchups for m in mirrors])
    state["done"] = True
    await asyncio.gather(*tasks[WRITERS:])

    # A clean stop and start changes nothing.
    check(f"{MODE}: SIGINT stops the server cleanly", server.stop() == 0)
    server.start()
    again = {s: await snapshot(server, s) for s in SESSIONS}
    check(f"{MODE}: a clean restart restores the same revisions and states",
          all(again[s]["rev"] == final[s]["rev"] and canonical(again[s]["state"]) == canonical(final[s]["state"]) for s in SESSIONS))
    files = sorted(os.listdir(os.path.join(data, "sessions", "crash-a.session")))
    check(f"{MODE}: compaction left one snapshot and one journal segment ({files})",
          sum(f.startswith("snapshot-") for f in files) == 1 and sum(f.startswith("journal-") for f in files) == 1)
    server.stop()
    shutil.rmtree(data, ignore_errors=True)


asyncio.run(main())
finish(f"crash_clients.py {MODE}")
