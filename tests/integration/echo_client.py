"""Outside-client check of the WebSocket layer: Python `websockets` against
`navsyncd --ws-echo`. Echo of text and binary at the sizes where the length
encoding changes, fragmented messages, the ping/pong and close behaviour of a
stock client, and the subprotocol."""
import asyncio
import os
import sys

import websockets
from websockets.exceptions import ConnectionClosed
from checks import check, finish

URL = sys.argv[1]



async def main():
    async with websockets.connect(URL, max_size=2 << 20, subprotocols=["navsync.v1"]) as ws:
        check("subprotocol navsync.v1 agreed", ws.subprotocol == "navsync.v1", ws.subprotocol)
        for size in [0, 125, 126, 65535, 65536, 1 << 20]:
            data = os.urandom(size)
            await ws.send(data)
            back = await ws.recv()
            check(f"binary echo of {size} bytes", back == data, f"got {len(back)} bytes")
            text = ("é" * (size // 2))[: size // 2]
            await ws.send(text)
            back = await ws.recv()
            check(f"text echo of {len(text.encode())} bytes", back == text)
        # A fragmented message, sent as an iterable of fragments.
        await ws.send(["frag", "mented ", "✓"])
        check("fragmented text reassembled", await ws.recv() == "fragmented ✓")
        # The server answers pings with the same payload.
        pong = await ws.ping(b"are you there")
        latency = await asyncio.wait_for(pong, 5)
        check("ping answered by a pong", latency is not None)
        # Many messages in flight at once come back in order.
        for i in range(500):
            await ws.send(f"m{i}")
        got = [await ws.recv() for _ in range(500)]
        check("500 pipelined messages in order", got == [f"m{i}" for i in range(500)])
    check("clean close handshake", ws.close_code == 1000, ws.close_code)

    # A client offering no subprotocol is accepted too.
    async with websockets.connect(URL) as ws:
        check("no subprotocol offered: accepted without one", ws.subprotocol is None)
        await ws.send("hi")
        check("echo without subprotocol", await ws.recv() == "hi")

    # A message over --max-message (1 MiB here) closes with 1009.
    async with websockets.connect(URL, max_size=4 << 20) as ws:
        await ws.send(b"x" * ((1 << 20) + 1))
        try:
            await asyncio.wait_for(ws.recv(), 5)
            check("oversized message closes 1009", False, "got a reply")
        except ConnectionClosed as e:
            check("oversized message closes 1009", e.rcvd is not None and e.rcvd.code == 1009, e)

    # Invalid UTF-8 in a text frame closes with 1007 (sent raw through the protocol object).
    async with websockets.connect(URL) as ws:
        from websockets.frames import Frame, Opcode
        ws.protocol.send_frame(Frame(Opcode.TEXT, b"\xff\xfe"))
        ws.send_data()  # flush what the protocol object queued
        try:
            await asyncio.wait_for(ws.recv(), 5)
            check("invalid UTF-8 closes 1007", False)
        except ConnectionClosed as e:
            check("invalid UTF-8 closes 1007", e.rcvd is not None and e.rcvd.code == 1007, e)
        except AttributeError as e:
            check("invalid UTF-8 closes 1007", False, f"client API: {e}")


asyncio.run(main())
finish("echo_client")
