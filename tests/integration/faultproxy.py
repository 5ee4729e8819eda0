#!/usr/bin/env python3
"""The project's fault proxy: a TCP relay on 127.0.0.1 that adds a one-way delay to
every byte and can cut the link for a while, as a slow or failing network would.

    faultproxy.py --upstream HOST:PORT [--delay-ms 150] [--ready-file PATH]

Bytes read from either side reach the other side `--delay-ms` later, in order. Once
ready it prints (and writes to --ready-file) `faultproxy 127.0.0.1:PORT control
127.0.0.1:CPORT`. The control port takes HTTP GETs:

    /dark?seconds=N   drop every connection now and refuse new ones for N seconds
    /delay?ms=N       the delay from now on
    /stats            {"open", "accepted", "refused", "delayMs", "dark"}

Standard library only; SIGTERM ends it."""
import argparse
import asyncio
import json
import signal
import time
from urllib.parse import parse_qs, urlparse


class Link:
    """One client connection and its upstream: two pumps, each a timed queue."""

    def __init__(self, proxy, client_reader, client_writer):
        self.proxy = proxy
        self.client = (client_reader, client_writer)
        self.writers = [client_writer]
        self.tasks = []

    async def run(self):
        host, port = self.proxy.upstream
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            self.cut()
            return
        self.writers.append(up_writer)
        self.tasks = [asyncio.create_task(self.pump(self.client[0], up_writer)),
                      asyncio.create_task(self.pump(up_reader, self.client[1]))]
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.cut()

    async def pump(self, reader, writer):
        """Reads and forwards each chunk once its delay has passed (a queue keeps order)."""
        queue = asyncio.Queue()

        async def deliver():
            while True:
                due, chunk = await queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if chunk is None:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(chunk)
                await writer.drain()
        sender = asyncio.create_task(deliver())
        try:
            while True:
                chunk = await reader.read(65536)
                queue.put_nowait((time.monotonic() + self.proxy.delay, chunk or None))
                if not chunk:
                    break
            await sender
        except (OSError, asyncio.CancelledError):
            sender.cancel()

    def cut(self):
        for t in self.tasks:
            t.cancel()
        for w in self.writers:
            try:
                w.transport.abort()
            except Exception:
                pass
        self.proxy.links.discard(self)


class Proxy:
    def __init__(self, upstream, delay_ms):
        host, _, port = upstream.rpartition(":")
        self.upstream = (host or "127.0.0.1", int(port))
        self.delay = delay_ms / 1000
        self.dark_until = 0.0
        self.links = set()
        self.accepted = self.refused = 0

    async def accept(self, reader, writer):
        if time.monotonic() < self.dark_until:
            self.refused += 1
            writer.transport.abort()
            return
        self.accepted += 1
        link = Link(self, reader, writer)
        self.links.add(link)
        await link.run()

    async def control(self, reader, writer):
        line = (await reader.readline()).decode(errors="replace").split()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass
        url = urlparse(line[1] if len(line) > 1 else "/")
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        status, body = 200, {}
        if url.path == "/dark":
            seconds = float(query.get("seconds", "3"))
            self.dark_until = time.monotonic() + seconds
            closed = len(self.links)
            for link in list(self.links):
                link.cut()
            body = {"dark": seconds, "closed": closed}
        elif url.path == "/delay":
            self.delay = float(query.get("ms", "0")) / 1000
            body = {"delayMs": self.delay * 1000}
        elif url.path == "/stats":
            body = {"open": len(self.links), "accepted": self.accepted, "refused": self.refused,
                    "delayMs": self.delay * 1000, "dark": time.monotonic() < self.dark_until}
        else:
            status, body = 404, {"error": "try /dark?seconds=N, /delay?ms=N or /stats"}
        data = json.dumps(body).encode()
        writer.write(b"HTTP/1.1 %d OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                     % (status, len(data), data))
        await writer.drain()
        writer.close()


async def main():
    parser = argparse.ArgumentParser(description="a delaying, failing TCP relay for tests")
    parser.add_argument("--upstream", required=True, help="HOST:PORT to relay to")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--control-port", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=150)
    parser.add_argument("--ready-file")
    args = parser.parse_args()
    proxy = Proxy(args.upstream, args.delay_ms)
    relay = await asyncio.start_server(proxy.accept, "127.0.0.1", args.port)
    control = await asyncio.start_server(proxy.control, "127.0.0.1", args.control_port)
    line = (f"faultproxy 127.0.0.1:{relay.sockets[0].getsockname()[1]} "
            f"control 127.0.0.1:{control.sockets[0].getsockname()[1]}")
    print(line, flush=True)
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write(line + "\n")
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    relay.close()
    control.close()


if __name__ == "__main__":
    asyncio.run(main())
