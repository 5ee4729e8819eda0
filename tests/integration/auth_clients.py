"""Access control from outside: every role against every message type over WebSocket,
tokens from hello, Authorization and ?token=, 401 for a bad token, Origin checks, and a
SIGHUP that removes a token closing its connection with 1008."""
import asyncio
import json
import os
import signal
import sys

import websockets
from checks import check, finish

WS, PID, AUTH = sys.argv[1], int(sys.argv[2]), sys.argv[3]
HTTP_ORIGIN = WS.replace("ws://", "http://").rsplit("/ws", 1)[0]



async def ask(ws, message):
    await ws.send(json.dumps(message))
    while True:
        reply = json.loads(await asyncio.wait_for(ws.recv(), 5))
        if reply["type"] not in ("presence", "patch"):
            return reply


def outcome(reply):
    return "error:" + reply["code"] if reply["type"] == "error" else reply["type"]


MESSAGES = [
    ("ping", {"type": "ping"}),
    ("join", {"type": "join", "session": "demo"}),
    ("create", {"type": "join", "session": "made-" + str(os.getpid()), "create": True}),
    ("get", {"type": "get", "session": "demo"}),
    ("sync", {"type": "sync", "session": "demo", "since": 0, "epoch": "x"}),
    ("sessions", {"type": "sessions"}),
    ("command", {"type": "command", "session": "demo", "id": 1, "ops": [{"op": "dismiss"}]}),
    ("reset", {"type": "command", "session": "demo", "id": 2, "ops": [{"op": "reset"}]}),
    ("other session", {"type": "get", "session": "prod"}),
]
EXPECTED = {
    None: ["pong"] + ["error:forbidden"] * 8,
    "viewer-token-3": ["pong", "joined", "error:forbidden", "snapshot", "snapshot", "sessions", "error:forbidden", "error:forbidden", "snapshot"],
    "controller-2": ["pong", "joined", "error:forbidden", "snapshot", "snapshot", "sessions", "ack", "error:forbidden", "error:forbidden"],
    "admin-token-1": ["pong", "joined", "joined", "snapshot", "snapshot", "sessions", "ack", "ack", "snapshot"],
}


async def main():
    # Every role, the token in hello.
    for token, expected in EXPECTED.items():
        async with websockets.connect(WS) as ws:
            if token:
                check(f"{token}: hello with the token is welcome", (await ask(ws, {"type": "hello", "token": token}))["type"] == "welcome")
            got = [outcome(await ask(ws, m)) for _, m in MESSAGES]
            for (name, _), g, e in zip(MESSAGES, got, expected):
                check(f"{token or 'no token'}: {name} -> {e}", g == e, g)

    # The token on the upgrade: Authorization header, and ?token= for browsers.
    async with websockets.connect(WS, additional_headers={"Authorization": "Bearer controller-2"}) as ws:
        check("a token in the Authorization header of the upgrade", outcome(await ask(ws, MESSAGES[6][1])) == "ack")
    async with websockets.connect(WS + "?token=viewer-token-3") as ws:
        check("a token in ?token= of the upgrade", outcome(await ask(ws, MESSAGES[3][1])) == "snapshot")
    try:
        async with websockets.connect(WS + "?token=not-a-token") as ws:
            check("a bad token on the upgrade is 401", False, "connected")
    except websockets.exceptions.InvalidStatus as e:
        check("a bad token on the upgrade is 401", e.response.status_code == 401, e.response.status_code)

    # Origin: browsers from elsewhere are refused; this server's own origin is fine.
    try:
        async with websockets.connect(WS, origin="http://evil.example") as ws:
            check("an upgrade from another origin is 403", False, "connected")
    except websockets.exceptions.InvalidStatus as e:
        check("an upgrade from another origin is 403", e.response.status_code == 403, e.response.status_code)
    async with websockets.connect(WS, origin=HTTP_ORIGIN) as ws:
        check("an upgrade from the server's own origin is fine", outcome(await ask(ws, {"type": "ping"})) == "pong")

    # SIGHUP with the controller's token removed: its connection closes with 1008; others stay.
    controller = await websockets.connect(WS, additional_headers={"Authorization": "Bearer controller-2"})
    admin = await websockets.connect(WS, additional_headers={"Authorization": "Bearer admin-token-1"})
    await ask(controller, {"type": "ping"})
    with open(AUTH) as f:
        config = json.load(f)
    config["tokens"] = [t for t in config["tokens"] if t["token"] != "controller-2"]
    with open(AUTH, "w") as f:
        json.dump(config, f)
    os.kill(PID, signal.SIGHUP)
    try:
        await asyncio.wait_for(controller.recv(), 5)
        check("SIGHUP: a removed token's connection closes with 1008", False, "still open")
    except websockets.exceptions.ConnectionClosed as e:
        check("SIGHUP: a removed token's connection closes with 1008", e.rcvd is not None and e.rcvd.code == 1008, e)
    check("SIGHUP: other connections stay", outcome(await ask(admin, {"type": "ping"})) == "pong")
    await admin.close()


asyncio.run(main())
finish("auth_clients")
