#!/usr/bin/env python3
"""scripts/bench --hooks: the app's backend in the loop, measured (prints figures,
asserts nothing). A receiver and a hook endpoint on loopback (Python's http.server),
navsyncd started here with --hooks:

1. webhook delivery: N revisions made as fast as navclient's publishers send them; the
   events/s the receiver got (from the first command to the last event) and navsyncd's
   CPU per event (the run less the same run without webhooks, per event);
2. the command hook's cost: command round trips on one connection, one at a time,
   with and without a hook that answers at once, beside the backend's own answer time
   (a POST of the same body from a kept-alive client): p50 and p99;
3. other sessions while one session's backend hangs: p99 of 20 clients' commands in
   their own sessions while a 21st keeps sending commands whose hook never answers
   (timeoutMs 2000), beside the same run with no hooks.

usage: bench-hooks.py NAVSYNCD NAVCLIENT"""
import asyncio
import base64
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import websockets

NAVSYNCD, NAVCLIENT = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="navsync-bench-hooks-")
SECRET = os.path.join(TMP, "secret")
with open(SECRET, "w") as f:
    f.write("whsec_" + base64.b64encode(os.urandom(32)).decode() + "\n")


class Endpoint:
    def __init__(self):
        self.events = 0
        self.last_event = 0.0
        self.hang = threading.Event()
        self.handler_ns = []
        me = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go in two writes: with Nagle on, the second waits for the
            # peer's delayed ACK (some 40 ms an answer on Linux).
            disable_nagle_algorithm = True

            def do_POST(self):
                t = time.perf_counter_ns()
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path == "/events":
                    n = body.count(b'"type":')
                    me.events += n
                    me.last_event = time.monotonic()
                    return self.reply(b"{}")
                hook = json.loads(body)
                if hook.get("session") == "hung":
                    me.hang.wait(5)
                out = b'{"allow": true}'
                me.handler_ns.append(time.perf_counter_ns() - t)
                self.reply(out)

            def reply(self, data):
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def hooks_file(endpoint, **config):
    c = {"url": f"http://127.0.0.1:{endpoint.port}/hook", "secretFile": SECRET}
    c.update(config)
    path = os.path.join(TMP, "hooks.json")
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def start(*args):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([NAVSYNCD, "--port", str(port), "--log-level", "warn", "--rate", "1000000", "--burst", "1000000", *args],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(TMP, "navsyncd.log"), "a"))
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("navsyncd did not start")


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


# ---- 1. webhook delivery ----
print("== webhook delivery: revisions made by navclient bench's publishers, delivered to a local receiver")
results = {}
for with_hooks in (False, True):
    ep = Endpoint()
    args = ["--hooks", hooks_file(ep, webhooks=[{"url": f"http://127.0.0.1:{ep.port}/events", "events": ["revision"]}])] if with_hooks else []
    proc, port = start(*args)
    c0, t0 = cpu(proc.pid), time.monotonic()
    out = subprocess.run([NAVCLIENT, "bench", f"ws://127.0.0.1:{port}/ws", "--clients", "0", "--publishers", "2", "--duration", "5"],
                         capture_output=True, text=True).stdout
    acked = int(out.split("commands acked")[1].split()[0]) if "commands acked" in out else 0
    if with_hooks:
        deadline = time.monotonic() + 120
        while ep.events < acked and time.monotonic() < deadline:
            time.sleep(0.05)
    c1 = cpu(proc.pid)
    results[with_hooks] = (acked, c1 - c0, (ep.last_event or time.monotonic()) - t0, ep.events)
    proc.terminate()
    proc.wait()
    ep.server.shutdown()
acked0, cpu0, _, _ = results[False]
acked1, cpu1, span, events = results[True]
print(f"  without webhooks: {acked0} commands, navsyncd CPU {cpu0:.2f} s ({cpu0 / max(acked0, 1) * 1e6:.1f} µs per command)")
print(f"  with webhooks:    {acked1} commands, {events} events delivered in {span:.2f} s from the first command: "
      f"{events / span:,.0f} events/s; navsyncd CPU {cpu1:.2f} s ({cpu1 / max(acked1, 1) * 1e6:.1f} µs per command)")
print(f"  navsyncd CPU per event delivered (the difference per command): {(cpu1 / max(acked1, 1) - cpu0 / max(acked0, 1)) * 1e6:.1f} µs")


# ---- 2. the command hook's cost ----
async def round_trips(port, session, n=None, stop=None, pause=0.0):
    """Command round trips on one connection, one at a time: `n` of them, or until `stop`."""
    rtts = []
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", subprotocols=["navsync.v1"]) as ws:
        await ws.send(json.dumps({"type": "join", "session": session, "create": True}))
        while json.loads(await ws.recv())["type"] != "joined":
            pass
        i = 0
        while (n is None or i < n) and (stop is None or time.monotonic() < stop):
            i += 1
            t = time.perf_counter_ns()
            await ws.send(json.dumps({"type": "command", "session": session, "id": i,
                                      "ops": [{"op": "update", "scope": "session", "data": {"n": i}}]}))
            while True:
                m = json.loads(await ws.recv())
                if m.get("id") == i:
                    break
            rtts.append(time.perf_counter_ns() - t)
            if pause:
                await asyncio.sleep(pause)
    return rtts

print()
print("== the command hook's cost: 2,000 commands one at a time on one connection (loopback)")
ep = Endpoint()
proc, port = start("--hooks", hooks_file(ep, commands={"*": ["*"]}))
with_hook = asyncio.run(round_trips(port, "bench", 2000))
proc.terminate(); proc.wait()
proc, port = start()
without = asyncio.run(round_trips(port, "bench", 2000))
proc.terminate(); proc.wait()
conn = http.client.HTTPConnection("127.0.0.1", ep.port)
body = json.dumps({"type": "command", "session": "bench", "flow": "shop", "rev": 1, "client": "c1", "name": "c1",
                   "command": {"id": 1, "ops": [{"op": "update", "scope": "session", "data": {"n": 1}}]}}).encode()
direct = []
for _ in range(2000):
    t = time.perf_counter_ns()
    conn.request("POST", "/hook", body, {"Content-Type": "application/json"})
    conn.getresponse().read()
    direct.append(time.perf_counter_ns() - t)
ms = lambda ns: ns / 1e6
for name, v in [("without a hook", without), ("with the hook", with_hook), ("the backend's own answer (a direct POST)", direct)]:
    print(f"  {name:42s} p50 {ms(pct(v, .5)):6.3f} ms  p99 {ms(pct(v, .99)):6.3f} ms")
print(f"  the hook adds over the backend's own answer: p50 {ms(pct(with_hook, .5) - pct(without, .5) - pct(direct, .5)):.3f} ms, "
      f"p99 {ms(pct(with_hook, .99) - pct(without, .99) - pct(direct, .99)):.3f} ms")


# ---- 3. other sessions while one session's backend hangs ----
async def others_p99(port, hang):
    stop = time.monotonic() + 5

    async def client(k):
        return await round_trips(port, f"other-{k}", stop=stop, pause=0.005)

    async def hanger():
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws", subprotocols=["navsync.v1"]) as ws:
            await ws.send(json.dumps({"type": "join", "session": "hung", "create": True}))
            i = 0
            while time.monotonic() < stop:
                i += 1
                await ws.send(json.dumps({"type": "command", "session": "hung", "id": i, "ops": [{"op": "open", "url": "/product/1"}]}))
                await asyncio.sleep(0.01)
    tasks = [client(k) for k in range(20)] + ([hanger()] if hang else [])
    done = await asyncio.gather(*tasks)
    return [x for r in done[:20] for x in r]


print()
print("== other sessions while one session's backend hangs: 20 clients, a command every ~5 ms each, 5 s")
ep = Endpoint()
proc, port = start("--hooks", hooks_file(ep, commands={"*": ["open"]}, timeoutMs=2000))
hung = asyncio.run(others_p99(port, True))
proc.terminate(); proc.wait()
ep.hang.set()
proc, port = start()
plain = asyncio.run(others_p99(port, False))
proc.terminate(); proc.wait()
print(f"  no hooks:                         {len(plain)} commands, p50 {ms(pct(plain, .5)):.3f} ms  p99 {ms(pct(plain, .99)):.3f} ms")
print(f"  one session's hook hanging (2 s): {len(hung)} commands, p50 {ms(pct(hung, .5)):.3f} ms  p99 {ms(pct(hung, .99)):.3f} ms"
      f"  ({pct(hung, .99) / pct(plain, .99):.2f}x)")
