"""References to one's own entries over the wire (docs/protocol.md, "References to
one's own entries"): a client names an entry its own command made as "~CMD.N" and
reads `created` in the ack. The same rules hold on a durable server after kill -9
(its journal replayed) and on a second node of a cluster (Redis started here).

usage: references.py NAVSYNCD OUT_DIR"""
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import redis
import websockets
from checks import check, finish

NAVSYNCD, OUT = sys.argv[1], sys.argv[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(*args, name):
    port = free_port()
    proc = subprocess.Popen([NAVSYNCD, "--port", str(port), *args], stdout=subprocess.DEVNULL,
                            stderr=open(f"{OUT}/references-{name}.log", "a"))
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"ws://127.0.0.1:{port}/ws"
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"navsyncd {name} did not start")


class Client:
    """One WebSocket client with a fixed identity (resumed with hello)."""

    def __init__(self, ws, client):
        self.ws, self.client = ws, client

    @classmethod
    async def open(cls, url, client=None, session="refs"):
        ws = await websockets.connect(url, subprotocols=["navsync.v1"], open_timeout=5)
        hello = {"type": "hello", "name": "refs"}
        if client:
            hello["client"] = client
        await ws.send(json.dumps(hello))
        welcome = await cls.next(ws, "welcome")
        await ws.send(json.dumps({"type": "join", "session": session, "create": True}))
        await cls.next(ws, "joined")
        return cls(ws, welcome["client"])

    @staticmethod
    async def next(ws, *kinds):
        while True:
            m = json.loads(await asyncio.wait_for(ws.recv(), 5))
            if m["type"] in kinds:
                return m

    async def command(self, cid, *ops, session="refs"):
        await self.ws.send(json.dumps({"type": "command", "session": session, "id": cid, "ops": list(ops)}))
        while True:
            m = await self.next(self.ws, "ack", "error")
            if m.get("id") == cid:
                return m


def stack_of(state, kind="Home"):
    found = []

    def walk(c):
        if c["type"] == kind:
            found.append(c)
        for e in c.get("stack", c.get("tabs", [c["current"]] if "current" in c else [])):
            if "coordinator" in e:
                walk(e["coordinator"])
    walk(state["root"])
    return found[0]["stack"] if found else None


async def rules(url, label):
    """The rules of docs/protocol.md on one server; returns the client id used."""
    c = await Client.open(url)
    a = await c.command(1, {"op": "setRoot", "route": "main"})
    check(f"{label}: ack.created lists the entries a command made, in order",
          a["type"] == "ack" and len(a.get("created", [])) == 9 and all(i.startswith("e") for i in a["created"]), a)
    a = await c.command(2, {"op": "push", "route": "detail", "params": {"id": 1}})
    pushed = a.get("created", [None])[0]
    a = await c.command(3, {"op": "push", "route": "reviews", "params": {"id": 1}})
    a = await c.command(4, {"op": "pop", "from": "~2.0"})
    check(f"{label}: pop from ~2.0 pops the entry command 2 made", a["type"] == "ack" and a["results"] == ["applied"], a)
    a = await c.command(5, {"op": "pop", "from": "~2.0"})
    check(f"{label}: again: superseded, as its id would be", a["type"] == "ack" and a["results"] == ["superseded"], a)
    for ref, why in [("~99.0", "never sent"), ("~2.5", "out of range")]:
        e = await c.command(f"nf{ref}", {"op": "pop", "from": ref})
        check(f"{label}: {ref} ({why}) is not_found, naming it", e["type"] == "error" and e["code"] == "not_found" and ref in e["message"], e)
    e = await c.command(6, {"op": "push", "route": "nowhere"})
    e = await c.command(7, {"op": "pop", "from": "~6.0"})
    check(f"{label}: a reference to a refused command is not_found", e["type"] == "error" and e["code"] == "not_found", e)
    for ref in ["~", "~7", "~7.x", "~7.-1"]:
        e = await c.command(f"bp{ref}", {"op": "pop", "from": ref})
        check(f"{label}: {ref!r} is bad_params", e["type"] == "error" and e["code"] == "bad_params", e)
    # Another client cannot name this one's commands.
    other = await Client.open(url)
    a2 = await other.command(8, {"op": "push", "route": "detail", "params": {"id": 2}})
    e = await other.command(9, {"op": "pop", "from": "~3.0"})
    check(f"{label}: another client's ~3.0 names its own command 3 (unknown): not_found", e["type"] == "error" and e["code"] == "not_found", e)
    await other.ws.close()
    # A command 10 made now, named later by a reference (after the restart / on the other node).
    a = await c.command(10, {"op": "push", "route": "category", "params": {"name": "tea"}})
    check(f"{label}: a duplicate's ack repeats created", (await c.command(10, {"op": "push", "route": "category", "params": {"name": "tea"}})).get("created") == a.get("created"))
    await c.ws.close()
    return c.client, a["created"][0], pushed


async def later(url, client, made, label):
    """After the restart / on another node: the same identity's references resolve."""
    c = await Client.open(url, client=client)
    check(f"{label}: the same client identity resumed", c.client == client, c.client)
    a = await c.command(11, {"op": "update", "entry": "~10.0", "data": {"seen": True}})
    check(f"{label}: ~10.0 names the entry command 10 made ({made})", a["type"] == "ack" and a["results"] == ["applied"], a)
    await c.ws.send(json.dumps({"type": "get", "session": "refs"}))
    snap = await Client.next(c.ws, "snapshot")
    top = stack_of(snap["state"])[-1]
    check(f"{label}: ...the very entry", top["id"] == made and top.get("data") == {"seen": True}, top)
    e = await c.command(12, {"op": "pop", "from": "~6.0"})
    check(f"{label}: a refused command's reference is still not_found", e["type"] == "error" and e["code"] == "not_found", e)
    await c.ws.close()


async def main():
    data = tempfile.mkdtemp(prefix="navsync-refs-")
    try:
        proc, url = start("--data", data, "--fsync", "always", name="durable")
        client, made, _ = await rules(url, "durable")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc, url = start("--data", data, name="durable-again")
        await later(url, client, made, "after kill -9")
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    finally:
        shutil.rmtree(data, ignore_errors=True)

    rport = free_port()
    rdir = tempfile.mkdtemp(prefix="navsync-refs-redis-")
    rd = subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", rdir],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    nodes = []
    try:
        for _ in range(100):
            try:
                redis.Redis(port=rport).ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        for name in ["n1", "n2"]:
            nodes.append(start("--cluster", f"redis://127.0.0.1:{rport}", "--node", name, name=name))
        client, made, _ = await rules(nodes[0][1], "cluster node 1")
        await later(nodes[1][1], client, made, "cluster node 2")
    finally:
        for p, _ in nodes:
            p.send_signal(signal.SIGKILL)
            p.wait()
        rd.send_signal(signal.SIGKILL)
        rd.wait()
        shutil.rmtree(rdir, ignore_errors=True)


asyncio.run(main())
finish("references.py")
