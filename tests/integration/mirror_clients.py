"""Several Python clients mirror one session from joined.state plus patches (applied
with the jsonpatch package), while several others send random commands at the same
time: stale bases, reject and rebase, invalid routes and params, duplicates. At the
end every mirror must equal `get` after key normalisation, and patches must have
arrived in revision order with no gap."""
import asyncio
import json
import random
import sys

import jsonpatch
import websockets
from checks import check, finish
from random_ops import normal, random_op

URL, SESSION = sys.argv[1], sys.argv[2]
MIRRORS, SENDERS, COMMANDS = 4, 4, 300



async def mirror(index, ready, done):
    async with websockets.connect(URL, subprotocols=["navsync.v1"], max_size=8 << 20) as ws:
        await ws.send(json.dumps({"type": "hello", "name": f"mirror-{index}"}))
        await ws.recv()
        await ws.send(json.dumps({"type": "join", "session": SESSION, "id": "j"}))
        while True:
            joined = json.loads(await ws.recv())
            if joined["type"] == "joined":
                break
        state, rev, gaps = joined["state"], joined["rev"], 0
        ready.set()
        while True:
            try:
                message = json.loads(await asyncio.wait_for(ws.recv(), 2 if done.is_set() else 30))
            except asyncio.TimeoutError:
                break
            if message["type"] == "patch":
                if message["rev"] != rev + 1:
                    gaps += 1
                state = jsonpatch.apply_patch(state, message["ops"])
                rev = message["rev"]
            elif message["type"] == "snapshot":
                state, rev = message["state"], message["rev"]
        await ws.send(json.dumps({"type": "get", "session": SESSION, "id": "final"}))
        while True:
            snapshot = json.loads(await ws.recv())
            if snapshot["type"] == "snapshot":
                break
        return normal(state) == normal(snapshot["state"]) and rev == snapshot["rev"], gaps, rev


async def sender(index, seed, results):
    rng = random.Random(seed)
    async with websockets.connect(URL, subprotocols=["navsync.v1"], max_size=8 << 20) as ws:
        await ws.send(json.dumps({"type": "hello", "name": f"sender-{index}", "client": f"sender-{index}"}))
        await ws.recv()
        await ws.send(json.dumps({"type": "get", "session": SESSION, "id": "s"}))
        snap = json.loads(await ws.recv())
        state, rev = snap["state"], snap["rev"]
        sent_ids = []
        for n in range(COMMANDS):
            ops = [random_op(rng, state) for _ in range(rng.choice([1, 1, 2, 3]))]
            command = {"type": "command", "session": SESSION, "id": f"{index}-{n}", "ops": ops}
            if rng.random() < 0.4:
                command["base"] = max(0, rev - rng.randint(0, 5))
            if rng.random() < 0.3:
                command["onConflict"] = "reject"
            if sent_ids and rng.random() < 0.05:
                command = dict(command, id=rng.choice(sent_ids))   # a duplicate
            await ws.send(json.dumps(command))
            while True:
                reply = json.loads(await ws.recv())
                if reply["type"] in ("ack", "error"):
                    break
            results[reply.get("code", reply["type"])] = results.get(reply.get("code", reply["type"]), 0) + 1
            if reply["type"] == "ack":
                sent_ids.append(command["id"])
                rev = max(rev, reply["rev"])
            if n % 10 == 0:
                await ws.send(json.dumps({"type": "get", "session": SESSION, "id": "s"}))
                while True:
                    snap = json.loads(await ws.recv())
                    if snap["type"] == "snapshot":
                        break
                state, rev = snap["state"], snap["rev"]


async def main():
    done = asyncio.Event()
    readies = [asyncio.Event() for _ in range(MIRRORS)]
    mirrors = [asyncio.create_task(mirror(i, readies[i], done)) for i in range(MIRRORS)]
    for r in readies:
        await r.wait()
    results = {}
    await asyncio.gather(*(sender(i, 1000 + i, results) for i in range(SENDERS)))
    done.set()
    outcomes = await asyncio.gather(*mirrors)
    print("command outcomes:", dict(sorted(results.items())))
    check(f"{SENDERS * COMMANDS} commands answered", sum(results.values()) == SENDERS * COMMANDS, results)
    check("some commands applied and some refused", results.get("ack", 0) > 50 and len(results) >= 3, results)
    for i, (equal, gaps, rev) in enumerate(outcomes):
        check(f"mirror {i} equals get at rev {rev}", equal)
        check(f"mirror {i} saw patches in order with no gap", gaps == 0, gaps)


asyncio.run(main())
finish("mirror_clients")
