#!/usr/bin/env bash
# permessage-deflate with stock outside clients: Python websockets (which offers it by
# default) and curl; navclient; --compression off.
. "$(dirname "$0")/lib.sh"

start_navsyncd compression
PYTHONPATH="$ROOT/tests/integration" "$PY" - "$WS_URL" <<'PY' || FAILED=$((FAILED + 1))
import asyncio, json, sys
import websockets
from websockets.extensions.permessage_deflate import PerMessageDeflate
from checks import check, finish, next_of

url = sys.argv[1]


async def member(**kw):
    ws = await websockets.connect(url, subprotocols=["navsync.v1"], **kw)
    await ws.send(json.dumps({"type": "join", "session": "demo"}))
    await next_of(ws, "joined")
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
    got = {ws: await next_of(ws, "patch") for ws in (a, b)}
    check("the same patch reaches a compressed and an uncompressed member", got[a] == got[b] and "products" in json.dumps(got[a]))
    # A compressed message from the client (websockets compresses what it sends too).
    await a.send(json.dumps({"type": "command", "session": "demo", "id": 2,
                             "ops": [{"op": "update", "scope": "session", "data": {"note": "x" * 5000}}]}))
    while (m := await next_of(a, "ack"))["id"] != 2:
        pass
    check("a compressed command from the client is applied", m["id"] == 2 and m["results"] == ["applied"], m)
    for ws in (a, b):
        await ws.close()


asyncio.run(main())
finish("compression_clients")
PY
check "navclient offers it and reads compressed patches" "$NAVCLIENT" exec "$WS_URL" "open /product/4"
wire() { "$NAVCLIENT" bench "$1" --clients 3 --commands 20 --update 2500 $2 --json 2>/dev/null | "$PY" -c 'import json,sys; r=json.load(sys.stdin); assert r["errors"]==0, r; print(int(r["wireBytesPerDelivery"]))'; }
plain="$(wire "$WS_URL" "")"; packed="$(wire "$WS_URL" --compression)"
check "bench --update 2500: product-list patches of 2-3 KB, a quarter of that compressed ($plain -> $packed bytes)" \
    bash -c "[ '$plain' -gt 2000 ] && [ '$plain' -lt 3500 ] && [ \$(( $packed * 3 )) -lt '$plain' ]"
stop_navsyncd

# Flags in either order: a threshold above every message leaves them all uncompressed.
start_navsyncd compression-threshold --compression-threshold 100000 --compression on
above="$(wire "$WS_URL" --compression)"
check "--compression-threshold: messages below it go uncompressed ($above bytes)" bash -c "[ \$(( $above * 10 / $plain )) -ge 9 ]"
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
