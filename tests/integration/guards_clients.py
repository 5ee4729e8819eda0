"""Guards seen by two WebSocket clients of one session (docs/flows.md, "Guards and
redirects"), each mirroring the state with jsonpatch: a guarded link one opens is
redirected for both in one revision; a deny changes nothing for either; a sign-out
from one moves the other off the guarded screen in the same revision.
Usage: guards_clients.py WS_URL"""
import asyncio
import json
import sys

import jsonpatch
import websockets

from checks import check, finish

WS = sys.argv[1]
SESSION = "guards"


class Mirror:
    """A member: its own state, changed only by the patches it is sent."""

    def __init__(self, ws):
        self.ws, self.state, self.rev, self.patches = ws, None, 0, []

    async def join(self):
        await self.ws.send(json.dumps({"type": "join", "session": SESSION, "create": True}))
        m = await self.next("joined")
        self.state, self.rev = m["state"], m["rev"]

    async def next(self, kind, id=None):
        while True:
            m = json.loads(await asyncio.wait_for(self.ws.recv(), 5))
            if m["type"] == "patch":
                self.state = jsonpatch.apply_patch(self.state, m["ops"])
                self.rev = m["rev"]
                self.patches.append(m)
            if m["type"] == kind and (id is None or m.get("id") == id):
                return m
            if m["type"] == "error" and m.get("id") == id and kind != "error":
                return m

    async def command(self, id, *ops):
        await self.ws.send(json.dumps({"type": "command", "session": SESSION, "id": id, "ops": list(ops)}))
        return await self.next("ack", id)

    async def catch_up(self, rev):
        while self.rev < rev:
            await self.next("patch")


def shown(state):
    """The routes on the active path, root first."""
    path, c = [], state["root"]
    while c:
        e = c["current"] if c["kind"] == "root" else (
            next(t for t in c["tabs"] if t["id"] == c["selected"]) if c["kind"] == "tabs" else c["stack"][-1])
        path.append(e["route"])
        c = e.get("coordinator")
    return path


async def main():
    async with websockets.connect(WS, subprotocols=["navsync.v1"]) as wa, \
            websockets.connect(WS, subprotocols=["navsync.v1"]) as wb:
        a, b = Mirror(wa), Mirror(wb)
        await a.join()
        await b.join()

        # A deny: nothing changes, for either.
        err = await a.command("deny", {"op": "open", "url": "/checkout"})
        check("a guarded link is refused: guarded, naming guard, route and entry",
              err["type"] == "error" and err["code"] == "guarded" and err["guard"] == "cartFull" and err["route"] == "checkout"
              and err["entry"].startswith("e"), err)
        check("...and no patch went out", a.patches == [] and a.rev == 0, a.patches)

        # A redirect: one revision, mirrored by both.
        ack = await a.command("orders", {"op": "open", "url": "/orders/7"})
        check("a guarded link is redirected: the ack says redirected, by which guard, to which link",
              ack["type"] == "ack" and ack["results"] == ["redirected"] and ack["redirects"][0]["guard"] == "signedIn"
              and ack["redirects"][0]["link"].startswith("/login?next=order"), ack)
        await b.catch_up(ack["rev"])
        check("both members mirror the redirect in one revision",
              ack["rev"] == 1 and a.state == b.state and shown(b.state) == ["login"]
              and b.state["root"]["current"]["params"].get("next") == "order", (ack["rev"], shown(b.state)))

        # Signed in, the same link opens; the session's data is in every mirror.
        ack = await a.command("signin", {"op": "update", "scope": "session", "data": {"user": "ann"}},
                              {"op": "open", "url": "/orders/7"})
        await b.catch_up(ack["rev"])
        check("signed in (the session's data), the link opens for both",
              ack["results"] == ["applied", "applied"] and shown(b.state) == ["main", "profile", "order"]
              and b.state["data"] == {"user": "ann"} and a.state == b.state, (ack, shown(b.state)))

        # A sign-out from the other member: the same revision moves everyone off orders.
        before = a.rev
        ack = await b.command("signout", {"op": "update", "scope": "session", "data": {"user": None}})
        await a.catch_up(ack["rev"])
        check("a sign-out from one member moves the other off the guarded screen in the same revision",
              ack["rev"] == before + 1 and ack["results"] == ["redirected"] and shown(a.state) == ["login"]
              and a.state["data"] == {} and a.state == b.state, (ack, shown(a.state)))
        check("...as one patch", len([p for p in a.patches if p["rev"] > before]) == 1, a.patches[-2:])


asyncio.run(main())
finish("guards_clients")
