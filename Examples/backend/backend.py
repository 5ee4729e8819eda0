#!/usr/bin/env python3
"""An app's backend beside navsyncd (docs/backend.md), Python standard library only.

- `GET /login?user=NAME` signs in with a cookie (`sid`); `GET /logout` signs out.
- `POST /cart` with `{"item": "lamp"}` puts an item in the signed-in user's cart;
  `GET /cart` shows it.
- `POST /navsync` is navsyncd's hook endpoint: a join is admitted with the user of
  its cookie (shown in presence), or as a viewer without one; every `open` of the demo
  flow is allowed with the user and the cart copied into the session's data (the flow's
  guards read them: checkout needs a cart, orders a user), and checkout is refused
  without a sign-in.
- `POST /navsync/events` takes navsyncd's webhooks and appends each event to
  `events.log` (one JSON line each).

Every request from navsyncd is checked against the secret (Standard Webhooks).

usage: backend.py [--port 7421] --secret-file FILE [--events events.log]
"""
import argparse
import base64
import hashlib
import hmac
import json
import secrets
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

parser = argparse.ArgumentParser(description="an example backend for navsyncd --hooks")
parser.add_argument("--port", type=int, default=7421)
parser.add_argument("--secret-file", required=True)
parser.add_argument("--events", default="events.log")
args = parser.parse_args()
with open(args.secret_file) as f:
    KEYS = [base64.b64decode(line.strip()[len("whsec_"):]) for line in f if line.strip()]

sessions = {}      # sid -> user
carts = {}         # user -> [items]
clients = {}       # navsync client id -> user (from the join hook, for its commands)


def verified(headers, body):
    """Standard Webhooks: the id, the timestamp (at most 5 minutes off) and one v1 signature."""
    msg_id, stamp, given = headers.get("webhook-id"), headers.get("webhook-timestamp"), headers.get("webhook-signature", "")
    if not msg_id or not stamp or abs(time.time() - int(stamp)) > 300:
        return False
    content = f"{msg_id}.{stamp}.".encode() + body
    wanted = ["v1," + base64.b64encode(hmac.new(k, content, hashlib.sha256).digest()).decode() for k in KEYS]
    return any(hmac.compare_digest(w, g) for w in wanted for g in given.split(" "))


def user_of_cookie(cookie):
    for part in (cookie or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == "sid" and value in sessions:
            return sessions[value]
    return None


def join_hook(hook):
    user = user_of_cookie(hook["headers"].get("cookie"))
    if user is None:
        return {"allow": True, "role": "viewer"}          # look, but do not touch
    clients[hook["client"]] = user
    return {"allow": True, "user": user, "data": {"plan": "gold" if user == "ann" else "basic"}}


def command_hook(hook):
    user = hook.get("user") or clients.get(hook["client"])
    urls = [op.get("url", "") for op in hook["command"]["ops"] if op.get("op") == "open"]
    if any(u.startswith("/checkout") for u in urls) and user is None:
        return {"allow": False, "message": "sign in to check out", "details": {"login": "/login"}}
    cart = carts.get(user, []) if user else []
    # The backend's truth, merged into the session's data in the same revision.
    return {"allow": True, "set": {"user": user, "cart": cart or None}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go in two writes: with Nagle on, the second waits for the
    # peer's delayed ACK (some 40 ms an answer on Linux).
    disable_nagle_algorithm = True

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/login":
            user = parse_qs(url.query).get("user", [""])[0]
            if not user:
                return self.reply(400, {"error": "/login?user=NAME"})
            sid = secrets.token_hex(16)
            sessions[sid] = user
            return self.reply(200, {"user": user}, [("Set-Cookie", f"sid={sid}; HttpOnly; Path=/")])
        if url.path == "/logout":
            sessions.pop(self.sid(), None)
            return self.reply(200, {"user": None})
        if url.path == "/cart":
            return self.reply(200, {"user": self.user(), "cart": carts.get(self.user(), [])})
        self.reply(404, {"error": "not found"})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        path = urlparse(self.path).path
        if path in ("/navsync", "/navsync/events"):
            if not verified({k.lower(): v for k, v in self.headers.items()}, body):
                return self.reply(401, {"error": "bad signature"})
            message = json.loads(body)
            if path == "/navsync/events":
                with open(args.events, "a") as f:
                    for event in message["events"]:
                        f.write(json.dumps(event) + "\n")
                return self.reply(200, {})
            return self.reply(200, join_hook(message) if message["type"] == "join" else command_hook(message))
        if path == "/cart":
            user = self.user()
            if user is None:
                return self.reply(401, {"error": "sign in first: /login?user=NAME"})
            carts.setdefault(user, []).append(json.loads(body or b"{}").get("item", "item"))
            return self.reply(200, {"user": user, "cart": carts[user]})
        self.reply(404, {"error": "not found"})

    def sid(self):
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == "sid":
                return value
        return None

    def user(self):
        return sessions.get(self.sid())

    def reply(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


print(f"backend listening on http://127.0.0.1:{args.port} (hooks at /navsync, webhooks at /navsync/events -> {args.events})", flush=True)
ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
