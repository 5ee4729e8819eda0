#!/usr/bin/env bash
# permessage-deflate with stock outside clients: Python websockets (which offers it by
# default) and curl; navclient; --compression off.
. "$(dirname "$0")/lib.sh"

start_navsyncd compression
PYTHONPATH="$ROOT/tests/integration" "$PY" - "$WS_URL" <<'PY' || FAILED=$((FAILED + 1))
import asyncio, json, sys
import websockets
from websockets.extensions.permessage_deflate import PerMessageDeflate
from checks import check, finish

url = sys.argv[1]


async def member(**kw):
    ws = await websockets.connect(url, subprotocols=["navsync.v1"], **kw)
    await ws.send(json.dumps({"type": "join", "session": "demo"}))
    while json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] != "joined":
        pass
    return ws


async def main():
    a, b = await member(), await member(compression=None)
    deflate = [e for e in a.protocol.extensions if isinstance(e, PerMessageDeflate)]
    check("websockets negotiates permessage-deflate, no context takeover on either side",
          deflate and deflate[0].remote_no_context_takeover and deflate[0].local_no_context_takeover, a.protocol.extensions)
    check("a client that does not offer it gets none", b.protocol.extensions == [], b.protocol.extensions)
    products = [{"id": i, "name": f"Trail Runner {i}", "price": 19.99 + i, "tags": ["new", "sale"]} for i in range(60)]
    await a.send(json.dumps({"type": "command", "session": "demo", "id": 1,
                             "ops": [{"op": "update", "scope": "session", "data": {"products": products}}]}))
    got = {}
    for ws in (a, b):
        while True:
            m = json.loads(await asyncio.wait_for(ws.recv(), 5))
            if m["type"] == "patch":
                got[ws] = m
                break
    check("the same patch reaches a compressed and an uncompressed member", got[a] == got[b] and "products" in json.dumps(got[a]))
    # A compressed message from the client (websockets compresses what it sends too).
    await a.send(json.dumps({"type": "command", "session": "demo", "id": 2,
                             "ops": [{"op": "update", "scope": "session", "data": {"note": "x" * 5000}}]}))
    while (m := json.loads(await asyncio.wait_for(a.recv(), 5)))["type"] != "ack" or m["id"] != 2:
        pass
    check("a compressed command from the client is applied", m["id"] == 2 and m["results"] == ["applied"], m)
    for ws in (a, b):
        await ws.close()


asyncio.run(main())
finish("compression_clients")
PY
check "navclient offers it and reads compressed patches" "$NAVCLIENT" exec "$WS_URL" "open /product/4"
stop_navsyncd

start_navsyncd compression-off --compression off
PYTHONPATH="$ROOT/tests/integration" "$PY" - "$WS_URL" <<'PY' || FAILED=$((FAILED + 1))
import asyncio, sys
import websockets
from checks import check, finish


async def main():
    async with websockets.connect(sys.argv[1]) as ws:
        check("--compression off: not negotiated", ws.protocol.extensions == [], ws.protocol.extensions)


asyncio.run(main())
finish("compression_off")
PY
check "--compression takes on or off only" bash -c "! '$NAVSYNCD' --compression maybe 2>&1 | grep -q 'needs on or off'; '$NAVSYNCD' --compression maybe 2>&1 | grep -q 'needs on or off'"
stop_navsyncd
finish
