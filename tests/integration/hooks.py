"""The app's backend in the loop (docs/backend.md) against real HTTP backends: a hook
endpoint that hangs, answers junk, answers 500 or closes mid-answer; a webhook receiver
down for 30 s and then back; navsyncd killed with SIGKILL during delivery with --data;
a bad secret file; a client sending "by": "hook". Nothing acknowledged is lost, nothing
is sequenced twice, and other sessions never wait.

usage: hooks.py NAVSYNCD OUT_DIR"""
import asyncio
import base64
import hashlib
import hmac
import json
import os
import shutil
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

import websockets
from checks import check, finish

NAVSYNCD, OUT = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="navsync-hooks-")
SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
SECRET_FILE = os.path.join(TMP, "secret")
with open(SECRET_FILE, "w") as f:
    f.write(SECRET + "\n")
KEY = base64.b64decode(SECRET[6:])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def signed(headers, body):
    h = {k.lower(): v for k, v in headers.items()}
    mac = hmac.new(KEY, f"{h['webhook-id']}.{h['webhook-timestamp']}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode() in h["webhook-signature"].split(" ") \
        and abs(time.time() - int(h["webhook-timestamp"])) < 300


class Backend:
    """A hook endpoint and a webhook receiver that misbehave on request."""

    def __init__(self):
        self.hooks, self.events, self.bad = [], [], 0
        self.down_until = 0.0          # webhooks answered 503 until then
        self.lock = threading.Lock()
        me = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go in two writes: with Nagle on, the second waits for the
            # peer's delayed ACK (some 40 ms an answer on Linux).
            disable_nagle_algorithm = True

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if not signed(dict(self.headers.items()), body):
                    me.bad += 1
                if self.path == "/events":
                    if time.time() < me.down_until:
                        return self.reply(503, b"{}")
                    with me.lock:
                        me.events.extend(json.loads(body)["events"])
                    return self.reply(200, b"{}")
                hook = json.loads(body)
                with me.lock:
                    me.hooks.append(hook)
                url = hook.get("command", {}).get("ops", [{}])[-1].get("url", "")
                if url == "/product/1":
                    time.sleep(2.5)                      # past timeoutMs
                    return self.reply(200, b'{"allow": true}')
                if url == "/product/2":
                    return self.reply(200, b"<html>not json</html>")
                if url == "/product/3":
                    return self.reply(500, b'{"allow": true}')
                if url == "/product/4":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"allow\"")
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if url == "/product/6":
                    return self.reply(200, json.dumps({"allow": True, "set": {"pad": "x" * 70_000}}).encode())
                if url == "/product/5":
                    return self.reply(200, json.dumps({"allow": True, "set": {"seen": 5}}).encode())
                if url == "/checkout":
                    return self.reply(200, json.dumps({"allow": False, "message": "cart empty", "details": {"items": 0}}).encode())
                self.reply(200, b'{"allow": true}')

            def reply(self, status, data):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass   # navsyncd gave up on it (timeoutMs): as a real backend would see it

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def revisions(self, session):
        with self.lock:
            return [e["rev"] for e in self.events if e["type"] == "revision" and e["session"] == session]


def hooks_file(backend, name="hooks.json", **more):
    config = {"url": f"http://127.0.0.1:{backend.port}/hook", "secretFile": SECRET_FILE, "timeoutMs": 1000,
              "commands": {"*": ["open"]}, "webhooks": [{"url": f"http://127.0.0.1:{backend.port}/events"}]}
    config.update(more)
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def start(*args, name):
    port = free_port()
    log = open(f"{OUT}/hooks-{name}.log", "a")
    proc = subprocess.Popen([NAVSYNCD, "--port", str(port), *args], stdout=log, stderr=log)
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, port
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"navsyncd {name} exited")
            time.sleep(0.05)
    raise RuntimeError(f"navsyncd {name} did not start")


def post(port, session, body, timeout=10, client=None):
    headers = {"Content-Type": "application/json"}
    if client:
        headers["X-Navsync-Client"] = client
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/sessions/{session}/commands", data=json.dumps(body).encode(),
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return json.loads(r.read())


def wait_until(fn, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if fn():
            return True
        time.sleep(0.05)
    return fn()


# ---- files refused at start, the place named; a secret never printed ----
backend = Backend()
bad_secret = os.path.join(TMP, "bad.secret")
with open(bad_secret, "w") as f:
    f.write("not-a-whsec-secret-at-all\n")
for what, path, place in [("a bad secret file", hooks_file(backend, "bad1.json", secretFile=bad_secret), "line 1"),
                          ("an unknown op name", hooks_file(backend, "bad2.json", commands={"shop": ["teleport"]}), "commands.shop[0]"),
                          ("a missing secret file", hooks_file(backend, "bad3.json", secretFile="/nonexistent"), "secretFile")]:
    r = subprocess.run([NAVSYNCD, "--port", "0", "--hooks", path], capture_output=True, text=True, timeout=10)
    check(f"navsyncd refuses {what} at start, naming the place", r.returncode != 0 and place in r.stderr
          and "not-a-whsec" not in r.stderr, r.stderr)

# ---- hooks that fail: unavailable with retryAfter, nothing sequenced; others never wait ----
proc, port = start("--hooks", hooks_file(backend), name="faults")
for url, why in [("/product/1", "hangs past timeoutMs"), ("/product/2", "answers junk"), ("/product/3", "answers 500"),
                 ("/product/4", "closes mid-answer"), ("/product/6", "answers over 64 KiB")]:
    before = get(port, "/api/sessions/demo")["rev"]
    started = time.time()
    other = {}

    def other_session():
        # Another session, whose commands need no hook, while this one's backend misbehaves.
        time.sleep(0.3)
        t = time.time()
        other["answer"] = post(port, "other", {"id": f"o{url}", "ops": [{"op": "push", "route": "detail", "params": {"id": 1}}]})
        other["ms"] = (time.time() - t) * 1000
    if url == "/product/1":
        post(port, "other", {"id": "mk", "ops": [{"op": "reset"}]})   # unknown session: made below through a join
    t = threading.Thread(target=other_session)
    t.start()
    status, answer = post(port, "demo", {"id": f"fail{url}", "ops": [{"op": "open", "url": url}]})
    t.join()
    check(f"a backend that {why}: the command is unavailable (503) with retryAfter, nothing applied",
          status == 503 and answer.get("code") == "unavailable" and answer.get("retryAfter") == 1
          and get(port, "/api/sessions/demo")["rev"] == before, (status, answer))
    if url == "/product/1":
        check("...and another session's command meanwhile is answered at once (no hook, never held)",
              other["answer"][0] in (404, 200) and other["ms"] < 300, other)
status, answer = post(port, "demo", {"id": "checkout", "ops": [{"op": "open", "url": "/checkout"}]})
check("a refusal is refused (409) with the backend's message and details", status == 409 and answer.get("code") == "refused"
      and answer.get("message") == "cart empty" and answer.get("details") == {"items": 0}, (status, answer))
status, answer = post(port, "demo", {"id": "by", "ops": [{"op": "update", "scope": "session", "data": {"paid": True}, "by": "hook"}]})
check("a client that sends \"by\": \"hook\" gets bad_params (422)", status == 422 and answer.get("code") == "bad_params", answer)
status, answer = post(port, "demo", {"id": "ok5", "ops": [{"op": "open", "url": "/product/5"}]}, client="qa")
state = get(port, "/api/sessions/demo")
check("an allowed command with set: one revision, the set in the session's data",
      status == 200 and answer["results"] == ["applied"] and state["state"].get("data") == {"seen": 5}, (answer, state["state"].get("data")))
history = get(port, "/api/sessions/demo/history")
last = history["entries"][-1] if "entries" in history else {}
check("history records the hook's op first, by hook", last.get("ops", [{}])[0].get("by") == "hook", last)
n = len(backend.hooks)
status2, again = post(port, "demo", {"id": "ok5", "ops": [{"op": "open", "url": "/product/5"}]}, client="qa")
check("a resend of the acknowledged id is a duplicate and asks the backend nothing",
      again.get("duplicate") is True and again["rev"] == answer["rev"] and len(backend.hooks) == n, again)


async def concurrent_resends():
    # The same id from one client three times while its hook hangs: one hook call, one revision.
    ws = await websockets.connect(f"ws://127.0.0.1:{port}/ws", subprotocols=["navsync.v1"])
    await ws.send(json.dumps({"type": "hello", "client": "resender"}))
    await ws.recv()
    before = len(backend.hooks)
    for _ in range(3):
        await ws.send(json.dumps({"type": "command", "session": "demo", "id": "same", "ops": [{"op": "open", "url": "/product/9"}]}))
    answers = []
    while len(answers) < 3:
        m = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if m.get("id") == "same":
            answers.append(m)
    await ws.close()
    return len(backend.hooks) - before, answers
calls, answers = asyncio.run(concurrent_resends())
check("three sends of one id while its hook is asked: one hook call, one revision, the others duplicates",
      calls == 1 and len({a["rev"] for a in answers}) == 1 and sum(1 for a in answers if a.get("duplicate")) == 2, (calls, answers))
check("every request navsyncd made was signed with the secret (Standard Webhooks)", backend.bad == 0, backend.bad)
check("webhooks delivered each revision of demo, in order", wait_until(lambda: backend.revisions("demo")[-2:] == [1, 2], 5)
      and backend.revisions("demo") == sorted(backend.revisions("demo")), backend.revisions("demo"))
wait_until(lambda: get(port, "/api/webhooks")["endpoints"][0]["pending"] == 0, 5)
status = get(port, "/api/webhooks")
check("GET /api/webhooks shows the endpoint's delivered, pending and failures",
      status["endpoints"][0]["delivered"] >= 3 and status["endpoints"][0]["pending"] == 0 and status["endpoints"][0]["failures"] == 0, status)
metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
check("/metrics has the webhook and hook counters", "navsync_webhook_events_delivered_total" in metrics
      and 'navsync_hook_calls_total{outcome="failed"}' in metrics, [l for l in metrics.splitlines() if "hook" in l][:6])

# ---- an https:// hook endpoint, trusted through caFile ----
import ssl
cert, key = os.path.join(TMP, "cert.pem"), os.path.join(TMP, "key.pem")
subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
tls = Backend()
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
tls.server.socket = context.wrap_socket(tls.server.socket, server_side=True)
https_hooks = hooks_file(tls, "https.json", url=f"https://127.0.0.1:{tls.port}/hook", caFile=cert, webhooks=[])
tproc, tport = start("--hooks", https_hooks, name="https")
status, answer = post(tport, "demo", {"id": "tls", "ops": [{"op": "open", "url": "/product/5"}]})
check("an https:// hook endpoint whose certificate caFile names answers the hook", status == 200 and len(tls.hooks) == 1, (status, answer))
tproc.terminate()
tproc.wait(10)
untrusted = hooks_file(tls, "https-untrusted.json", url=f"https://127.0.0.1:{tls.port}/hook", webhooks=[])
tproc, tport = start("--hooks", untrusted, name="https")
status, answer = post(tport, "demo", {"id": "tls", "ops": [{"op": "open", "url": "/product/5"}]})
check("...and without caFile its certificate is refused: unavailable, the reason logged",
      status == 503 and answer.get("code") == "unavailable" and len(tls.hooks) == 1, (status, answer))
tproc.terminate()
tproc.wait(10)
with open(f"{OUT}/hooks-https.log") as f:
    check("...the log names the certificate problem", "certificate" in f.read().lower())

# ---- SIGHUP: a bad file keeps the old one ----
good = hooks_file(backend)
with open(good) as f:
    keep = f.read()
with open(good, "w") as f:
    f.write("{ not json")
proc.send_signal(signal.SIGHUP)
time.sleep(0.5)
status, answer = post(port, "demo", {"id": "after-hup", "ops": [{"op": "open", "url": "/checkout"}]})
check("SIGHUP with a broken hooks file keeps the old one (the hook still refuses checkout)", answer.get("code") == "refused", answer)
with open(f"{OUT}/hooks-faults.log") as f:
    check("...and says why", "hooks file not reloaded" in f.read())
with open(good, "w") as f:
    f.write(keep)
proc.terminate()
proc.wait(10)

# ---- a receiver down for 30 s, then back: every event delivered, in order ----
down = Backend()
down.down_until = time.time() + 30
proc, port = start("--hooks", hooks_file(down, "down.json", commands={}), name="down")
for i in range(20):
    post(port, "demo", {"id": i, "ops": [{"op": "update", "scope": "session", "data": {"n": i}}]})
time.sleep(2)
status = get(port, "/api/webhooks")["endpoints"][0]
check("while the receiver is down: events pending, failures counted, the last error named",
      status["pending"] >= 20 and status["failures"] >= 1 and "503" in (status["lastError"] or ""), status)
check("...and the server serves meanwhile", post(port, "demo", {"id": "live", "ops": [{"op": "pop"}]})[0] in (200, 422))
check("once it is back (30 s), every revision is delivered, in order", wait_until(lambda: down.revisions("demo")[:20] == list(range(1, 21)), 75),
      down.revisions("demo"))
proc.terminate()
proc.wait(10)

# ---- a hooked command is journaled with its set: kill -9 and a restart keep both ----
jdata = os.path.join(TMP, "journaled")
proc, port = start("--data", jdata, "--hooks", hooks_file(backend, "journaled.json"), name="journaled")
status, answer = post(port, "demo", {"id": "j5", "ops": [{"op": "open", "url": "/product/5"}]}, client="qa")
proc.send_signal(signal.SIGKILL)
proc.wait(10)
proc, port = start("--data", jdata, "--hooks", hooks_file(backend, "journaled.json"), name="journaled")
state = get(port, "/api/sessions/demo")
entries = get(port, "/api/sessions/demo/history")["entries"]
check("a hooked command survives kill -9: the set in the state, the hook's op in history, and its resend a duplicate",
      status == 200 and state["rev"] == answer["rev"] and state["state"].get("data") == {"seen": 5}
      and entries[0]["ops"][0].get("by") == "hook"
      and post(port, "demo", {"id": "j5", "ops": [{"op": "open", "url": "/product/5"}]}, client="qa")[1].get("duplicate") is True,
      (status, answer, state["state"].get("data"), entries[:1]))
proc.terminate()
proc.wait(10)

# ---- kill -9 during delivery, with --data: every acknowledged revision at least once ----
slow = Backend()
slow.down_until = time.time() + 3600
data = os.path.join(TMP, "data")
path = hooks_file(slow, "slow.json", commands={})
proc, port = start("--data", data, "--hooks", path, name="kill")
acked = []
for i in range(50):
    status, answer = post(port, "demo", {"id": f"k{i}", "ops": [{"op": "update", "scope": "session", "data": {"k": i}}]})
    if status == 200:
        acked.append(answer["rev"])


async def make_session(name):
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", subprotocols=["navsync.v1"]) as ws:
        await ws.send(json.dumps({"type": "join", "session": name, "create": True, "id": 1}))
        while json.loads(await ws.recv()).get("type") != "joined":
            pass
asyncio.run(make_session("fresh"))
time.sleep(0.2)
proc.send_signal(signal.SIGKILL)
proc.wait(10)
slow.down_until = 0
proc, port = start("--data", data, "--hooks", path, name="kill")
check("after kill -9 and a restart, every acknowledged revision is delivered",
      wait_until(lambda: set(acked) <= set(slow.revisions("demo")), 20), (len(acked), sorted(set(slow.revisions("demo")))[:5]))
seen = slow.revisions("demo")
check("...in order", seen == sorted(seen), seen[:20])
check("...and the session events made before the kill too (kept in the data directory)",
      wait_until(lambda: any(e["type"] == "session.created" and e["session"] == "fresh" for e in slow.events), 5)
      and any(e["type"] == "session.occupied" and e["session"] == "fresh" for e in slow.events), [e["id"] for e in slow.events if e["type"] != "revision"])
delivered = len(seen)
proc.send_signal(signal.SIGKILL)
proc.wait(10)
proc, port = start("--data", data, "--hooks", path, name="kill")
time.sleep(1.5)
check("a second restart delivers nothing already delivered (the cursor was kept)", len(slow.revisions("demo")) == delivered,
      (delivered, len(slow.revisions("demo"))))
proc.terminate()
proc.wait(10)
shutil.rmtree(TMP, ignore_errors=True)
finish("hooks.py")
