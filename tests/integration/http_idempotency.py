"""Idempotency over HTTP as curl users meet it (docs/protocol.md, "Operations: fine points"): callers without
a header never collide, a resend is marked as a replay, an id reused for another
command is 409, and Idempotency-Key stands for the body's id. The same rules over
WebSocket. Usage: http_idempotency.py HTTP_URL WS_URL"""
import asyncio
import json
import sys
import urllib.error
import urllib.request

import websockets

from checks import check, finish

HTTP, WS = sys.argv[1], sys.argv[2]
API = HTTP + "api/sessions/idem"


def post(body, headers=None):
    request = urllib.request.Request(API + "/commands", data=json.dumps(body).encode(), method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(request) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def rev():
    with urllib.request.urlopen(API) as r:
        return json.loads(r.read())["rev"]


async def create():
    async with websockets.connect(WS) as ws:
        await ws.send(json.dumps({"type": "join", "session": "idem", "create": True}))
        while json.loads(await ws.recv())["type"] != "joined":
            pass


async def websocket_rules():
    async with websockets.connect(WS) as ws:
        await ws.send(json.dumps({"type": "hello", "client": "ws-idem"}))
        await ws.recv()

        async def command(id, ops):
            await ws.send(json.dumps({"type": "command", "session": "idem", "id": id, "ops": ops}))
            while True:
                m = json.loads(await ws.recv())
                if m["type"] in ("ack", "error") and m.get("id") == id:
                    return m

        first = await command("w1", [{"op": "update", "data": {"ws": 1}}])
        again = await command("w1", [{"op": "update", "data": {"ws": 1}}])
        check("websocket: a resend gets the original ack marked duplicate",
              again.get("duplicate") is True and again["rev"] == first["rev"] and "duplicate" not in first, (first, again))
        reused = await command("w1", [{"op": "update", "data": {"ws": 2}}])
        check("websocket: the id reused for another command is id_reused", reused.get("code") == "id_reused", reused)


asyncio.run(create())
start = rev()
# Two callers who both use "id": 1, with no header: neither is taken for the other.
a = post({"id": 1, "ops": [{"op": "update", "data": {"who": "alice"}}]})
b = post({"id": 1, "ops": [{"op": "update", "data": {"who": "bob"}}]})
check("two curl callers with the same id both run", a[0] == 200 and b[0] == 200 and b[2]["rev"] == a[2]["rev"] + 1 == start + 2, (a, b))
check("...and neither answer is marked duplicate", "duplicate" not in a[2] and "duplicate" not in b[2], (a, b))

# A named caller: a resend is replayed and says so; another command under the id is 409.
mine = {"X-Navsync-Client": "carol"}
first = post({"id": 7, "ops": [{"op": "update", "data": {"who": "carol"}}]}, mine)
again = post({"ops": [{"data": {"who": "carol"}, "op": "update"}], "id": 7}, mine)   # same command, keys reordered
check("a resend gets the original ack, duplicate: true", again[0] == 200 and again[2].get("duplicate") is True and again[2]["rev"] == first[2]["rev"], again)
check("...with the header Idempotent-Replayed: true", again[1].get("Idempotent-Replayed") == "true", again[1])
check("...and nothing ran again", rev() == first[2]["rev"], rev())
reused = post({"id": 7, "ops": [{"op": "reset"}]}, mine)
check("the id reused with another command is 409 id_reused", reused[0] == 409 and reused[2]["code"] == "id_reused" and reused[2].get("id") == 7, reused)
check("...and changes nothing", rev() == first[2]["rev"], rev())

# Idempotency-Key stands for the body's id; the ack echoes the body's id (or the key).
key = {"Idempotency-Key": "7f3c-2a91-order-42"}
k1 = post({"id": "mine", "ops": [{"op": "update", "data": {"order": 42}}]}, key)
k2 = post({"id": "mine", "ops": [{"op": "update", "data": {"order": 42}}]}, key)
check("Idempotency-Key: the first runs, the ack echoes the body's id", k1[0] == 200 and k1[2]["id"] == "mine" and "duplicate" not in k1[2], k1)
check("Idempotency-Key: the resend is a replay", k2[0] == 200 and k2[2].get("duplicate") is True and k2[2]["rev"] == k1[2]["rev"]
      and k2[1].get("Idempotent-Replayed") == "true", k2)
k3 = post({"ops": [{"op": "update", "data": {"order": 43}}]}, key)
check("Idempotency-Key reused for another command is 409", k3[0] == 409 and k3[2]["code"] == "id_reused", k3)
k4 = post({"ops": [{"op": "update", "data": {"order": 44}}]}, {"Idempotency-Key": "another-key-1"})
check("Idempotency-Key without a body id: the ack echoes the key", k4[0] == 200 and k4[2]["id"] == "another-key-1", k4)
bad = post({"ops": [{"op": "pop"}]}, {"Idempotency-Key": "has space"})
check("a malformed Idempotency-Key is 400", bad[0] == 400 and "Idempotency-Key" in bad[2]["message"], bad)

asyncio.run(websocket_rules())
finish("http_idempotency")
