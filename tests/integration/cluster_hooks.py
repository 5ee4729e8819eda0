"""The app's backend with a cluster (docs/backend.md): a command hook's set is the same
on every node (it is in the log), and webhooks are delivered by one node at a time: the
node delivering a session is killed with SIGKILL while its receiver is down, and the
other node takes over from the cursor kept in Redis; every revision arrives, in order.

usage: cluster_hooks.py NAVSYNCD OUT_DIR"""
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis
from checks import check, finish

NAVSYNCD, OUT = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="navsync-cluster-hooks-")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


events, down = [], {"until": time.time() + 3600}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        if self.path == "/events":
            if time.time() < down["until"]:
                return self.reply(503, {})
            with lock:
                events.extend(body["events"])
            return self.reply(200, {})
        self.reply(200, {"allow": True, "set": {"by": "backend", "n": body["rev"]}})

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


backend = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
backend.daemon_threads = True
threading.Thread(target=backend.serve_forever, daemon=True).start()
bport = backend.server_address[1]
with open(os.path.join(TMP, "secret"), "w") as f:
    f.write("whsec_" + base64.b64encode(os.urandom(32)).decode() + "\n")
hooks = os.path.join(TMP, "hooks.json")
with open(hooks, "w") as f:
    json.dump({"url": f"http://127.0.0.1:{bport}/hook", "secretFile": os.path.join(TMP, "secret"), "timeoutMs": 1000,
               "commands": {"*": ["open"]}, "webhooks": [{"url": f"http://127.0.0.1:{bport}/events", "events": ["revision"]}]}, f)

rport = free_port()
redis_proc = subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL)
r = redis.Redis(port=rport)
for _ in range(100):
    try:
        r.ping()
        break
    except redis.ConnectionError:
        time.sleep(0.05)

nodes = {}


def start(name):
    port = free_port()
    log = open(f"{OUT}/cluster_hooks-{name}.log", "a")
    proc = subprocess.Popen([NAVSYNCD, "--port", str(port), "--cluster", f"redis://127.0.0.1:{rport}", "--node", name, "--hooks", hooks],
                            stdout=log, stderr=log)
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=0.5) as resp:
                if resp.status == 200:
                    break
        except (OSError, urllib.error.HTTPError):
            time.sleep(0.05)
    nodes[name] = (proc, port)


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/sessions/demo/commands", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "X-Navsync-Client": "qa"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def wait_until(fn, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if fn():
            return True
        time.sleep(0.1)
    return fn()


try:
    start("a")
    start("b")
    status, ack = post(nodes["a"][1], {"id": "set-1", "ops": [{"op": "open", "url": "/product/1"}]})
    check("a command hooked on node a is acknowledged", status == 200 and ack.get("rev") == 1, (status, ack))
    state_b = {}

    def b_has_it():
        with urllib.request.urlopen(f"http://127.0.0.1:{nodes['b'][1]}/api/sessions/demo", timeout=5) as resp:
            state_b.update(json.loads(resp.read()))
        return state_b.get("rev", 0) >= 1
    wait_until(b_has_it, 10)
    check("node b holds the hook's set in the same revision (it is in the log)",
          state_b.get("state", {}).get("data") == {"by": "backend", "n": 0}, state_b.get("state", {}).get("data"))
    with urllib.request.urlopen(f"http://127.0.0.1:{nodes['b'][1]}/api/sessions/demo/history", timeout=5) as resp:
        entries = json.loads(resp.read())["entries"]
    check("...and its history records the hook's op first, by hook", entries and entries[0]["ops"][0].get("by") == "hook", entries[:1])
    acked = [1]
    for i in range(2, 31):
        status, ack = post(nodes["a" if i % 2 else "b"][1], {"id": f"c{i}", "ops": [{"op": "update", "scope": "session", "data": {"i": i}}]})
        if status == 200:
            acked.append(ack["rev"])
    check("30 commands acknowledged across both nodes", len(acked) == 30, acked)
    holder = None
    if wait_until(lambda: r.get("navsync:webhooks:{demo}:lease") is not None, 10):
        holder = r.get("navsync:webhooks:{demo}:lease").decode()
    check("one node holds the session's webhook lease in Redis", holder in ("a", "b"), holder)
    time.sleep(1)
    check("the receiver is down: nothing was delivered yet", not events, len(events))
    nodes[holder][0].send_signal(signal.SIGKILL)
    nodes[holder][0].wait(10)
    down["until"] = 0
    survivor = "b" if holder == "a" else "a"
    check(f"node {holder} killed: node {survivor} takes the lease and delivers every revision",
          wait_until(lambda: {e["rev"] for e in events} >= set(acked), 25), (sorted({e["rev"] for e in events}), acked))
    revs = [e["rev"] for e in events]
    check("...in order", revs == sorted(revs), revs)
    check("...the lease is the survivor's and its cursor is in Redis",
          (r.get("navsync:webhooks:{demo}:lease") or b"").decode() == survivor
          and wait_until(lambda: (r.hget("navsync:webhooks:{demo}:cursor", f"http://127.0.0.1:{bport}/events") or b"").endswith(b":30"), 5),
          r.hgetall("navsync:webhooks:{demo}:cursor"))
    n = len(events)
    status, ack = post(nodes[survivor][1], {"id": "after", "ops": [{"op": "update", "scope": "session", "data": {"after": True}}]})
    check("a revision made after the takeover is delivered once",
          wait_until(lambda: any(e["rev"] == ack.get("rev") for e in events), 10) and len(events) == n + 1, (ack, len(events), n))
finally:
    for proc, _ in nodes.values():
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)
    redis_proc.terminate()
    redis_proc.wait(10)
    backend.shutdown()
finish("cluster_hooks.py")
