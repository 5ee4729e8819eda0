"""Guards seen by two members of one session, each mirroring it through the project's
Python package (docs/flows.md, "Guards and redirects"): a guarded link one opens is
redirected for both in one revision; a deny changes nothing for either; a sign-out from
one moves the other off the guarded screen in the same revision.
Usage: guards_clients.py WS_URL"""
import asyncio
import sys

import navsync
from checks import check, finish

WS = sys.argv[1]


def shown(state):
    return [e["route"] for e in navsync.active_path(state)]


async def main():
    async with navsync.connect(WS, "guards", create=True, name="a") as a, \
            navsync.connect(WS, "guards", name="b") as b:
        seen = []

        async def watch():
            async for change in a.changes():
                seen.append(change.rev)
        watcher = asyncio.create_task(watch())

        try:
            await a.open("/checkout")
            check("a guarded link is refused", False, "it was applied")
        except navsync.NavError as e:
            check("a guarded link is refused: guarded, naming guard, route and entry",
                  e.code == "guarded" and e.guard == "cartFull" and e.route == "checkout" and e.entry.startswith("e"), e)
        check("...and nothing changed", a.rev == 0, a.rev)

        ack = await a.open("/orders/7")
        check("a guarded link is redirected: the ack says redirected, by which guard, to which link",
              ack.results == ["redirected"] and ack.redirects[0]["guard"] == "signedIn"
              and ack.redirects[0]["link"].startswith("/login?next=%2Forders%2F7"), ack)
        await b.wait_for(lambda st: b.rev == ack.rev)
        check("both members mirror the redirect in one revision",
              ack.rev == 1 and a.state == b.state and shown(b.state) == ["login"]
              and b.state["root"]["current"]["params"].get("next") == "/orders/7", (ack.rev, shown(b.state)))

        async with a.batch() as signin:
            signin.update({"user": "ann"}, scope="session")
            signin.open("/orders/7")
        await b.wait_for(lambda st: b.rev == signin.ack.rev)
        check("signed in (the session's data), the link opens for both",
              signin.ack.results == ["applied", "applied"] and shown(b.state) == ["main", "profile", "order"]
              and b.state["data"] == {"user": "ann"} and a.state == b.state, (signin.ack, shown(b.state)))

        before = a.rev
        ack = await b.update({"user": None}, scope="session")
        await a.wait_for(lambda st: a.rev == ack.rev)
        check("a sign-out from one member moves the other off the guarded screen in the same revision",
              ack.rev == before + 1 and ack.results == ["redirected"] and shown(a.state) == ["login"]
              and a.state["data"] == {} and a.state == b.state, (ack, shown(a.state)))
        check("...as one patch", [r for r in seen if r > before] == [ack.rev], seen)
        watcher.cancel()


asyncio.run(main())
finish("guards_clients")
