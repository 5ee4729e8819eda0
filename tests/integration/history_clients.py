"""History from outside clients (docs/protocol.md, "History"): a Python mirror (websockets +
jsonpatch) stays equal to the session while another client restores random past
revisions between ordinary commands; every restored state equals, byte for byte, what
`get` with `rev` gave for that revision before; HTTP /history and ?rev agree."""
import asyncio
import json
import random
import sys
import urllib.request

import jsonpatch
import websockets
from checks import check, finish
from random_ops import normal, random_op

URL, HTTP = sys.argv[1], sys.argv[2].rstrip("/")
SESSION = "history-py"


async def request(ws, message):
    await ws.send(json.dumps(message))
    while True:
        m = json.loads(await ws.recv())
        if m.get("id") == message.get("id") and m.get("type") in ("ack", "error", "snapshot", "history", "joined"):
            return m


async def main():
    rng = random.Random(15)
    async with websockets.connect(URL, subprotocols=["navsync.v1"]) as mirror, \
               websockets.connect(URL, subprotocols=["navsync.v1"]) as writer:
        joined = await request(writer, {"type": "join", "session": SESSION, "create": True, "id": "j"})
        m = await request(mirror, {"type": "join", "session": SESSION, "id": "j"})
        state, rev = m["state"], m["rev"]
        gaps, restores, equal_restores = 0, 0, 0
        seen = {0: joined["state"]}

        async def follow():
            nonlocal state, rev, gaps
            async for raw in mirror:
                p = json.loads(raw)
                if p.get("type") != "patch":
                    continue
                if p["rev"] != rev + 1:
                    gaps += 1
                state = jsonpatch.apply_patch(state, p["ops"])
                rev = p["rev"]

        task = asyncio.create_task(follow())
        for n in range(400):
            current = (await request(writer, {"type": "get", "session": SESSION, "id": f"g{n}"}))
            if n % 8 == 7 and current["rev"] > 2:
                target = rng.randint(max(0, current["rev"] - 30), current["rev"] - 1)
                past = await request(writer, {"type": "get", "session": SESSION, "rev": target, "id": f"p{n}"})
                ack = await request(writer, {"type": "command", "session": SESSION, "id": f"r{n}", "ops": [{"op": "restore", "rev": target}]})
                if ack["type"] == "ack" and ack["results"] == ["applied"]:
                    restores += 1
                    after = await request(writer, {"type": "get", "session": SESSION, "id": f"a{n}"})
                    equal_restores += normal(after["state"]) == normal(past["state"])
                continue
            await request(writer, {"type": "command", "session": SESSION, "id": f"c{n}", "ops": [random_op(rng, current["state"])]})
        final = await request(writer, {"type": "get", "session": SESSION, "id": "final"})
        for _ in range(100):
            if rev == final["rev"]:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        check(f"{restores} restores of random past revisions: each state equals what get with rev gave", restores >= 20 and equal_restores == restores,
              (restores, equal_restores))
        check("a Python mirror stays equal across restores, no gap", normal(state) == normal(final["state"]) and rev == final["rev"] and gaps == 0,
              (rev, final["rev"], gaps))
        with urllib.request.urlopen(f"{HTTP}/api/sessions/{SESSION}/history?limit=5") as r:
            page = json.load(r)
        with urllib.request.urlopen(f"{HTTP}/api/sessions/{SESSION}?rev={page['entries'][-1]['rev']}") as r:
            past = json.load(r)
        check("HTTP history pages newest first, and ?rev answers a past revision", [e["rev"] for e in page["entries"]] == list(range(final["rev"], final["rev"] - 5, -1))
              and past.get("historic") is True)


asyncio.run(main())
finish("history_clients")
