"""The protocol page's examples, run against a fresh demo server: every `→` message of
"In one exchange" is sent in order and the `←` lines that follow it must arrive with the
same type, and the same code for errors (the ids, epochs and flows of the page are
illustrations). The worked command of "Operations" must apply.
Usage: docs_exchange.py docs/protocol.md WS_URL"""
import asyncio
import json
import re
import sys

import websockets

from checks import check, finish

PAGE, WS = sys.argv[1], sys.argv[2]
text = open(PAGE).read()


def block_after(heading):
    rest = text[text.index(heading):]
    start = rest.index("```\n") + 4
    return rest[start:rest.index("\n```", start)]


def exchange():
    steps, current = [], None
    for line in block_after("## In one exchange").splitlines():
        line = line.strip()
        if line.startswith("→ "):
            current = {"send": json.loads(line[2:]), "expect": []}
            steps.append(current)
        elif line.startswith("← "):
            kind = re.search(r'"type":"(\w+)"', line).group(1)
            code = re.search(r'"code":"(\w+)"', line)
            current["expect"].append((kind, code.group(1) if code else None))
    return steps


async def main():
    async with websockets.connect(WS, subprotocols=["navsync.v1"]) as ws:
        for step in exchange():
            await ws.send(json.dumps(step["send"]))
            got = []
            while len(got) < len(step["expect"]):
                m = json.loads(await asyncio.wait_for(ws.recv(), 5))
                # Presence is gathered and sent on its own clock (docs/protocol.md, "Server messages, unasked"):
                # it may fall anywhere between the answers, and the page does not show it.
                if m["type"] != "presence":
                    got.append((m["type"], m.get("code")))
            check(f"exchange: {step['send']['type']} {step['send'].get('id', '')} answers {step['expect']}", got == step["expect"], got)
        command = json.loads(block_after("Worked example, on the demo flow"))
        await ws.send(json.dumps(command))
        while True:
            m = json.loads(await asyncio.wait_for(ws.recv(), 5))
            if m["type"] in ("ack", "error"):
                break
        check("the worked command applies as one revision", m["type"] == "ack" and m["results"] == ["applied"] * 3, m)


asyncio.run(main())
finish("docs_exchange")
