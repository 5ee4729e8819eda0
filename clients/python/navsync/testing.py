"""A programmable backend for tests of hook-driven flows (docs/backend.md): an HTTP
endpoint on 127.0.0.1 that answers navsyncd's join and command hooks as the test says,
takes its webhooks, checks every signature, and records what it got.

    backend = Backend()                      # or the pytest fixture `navsync_backend`
    backend.on_command = lambda hook: {"allow": False, "message": "no"} if ... else {"allow": True}
    path = backend.write_hooks_file(join=True, commands={"*": ["open"]})
    ... navsyncd --hooks path ...
    backend.wait_for_event(lambda e: e["type"] == "revision" and e["rev"] == 3)
"""
from __future__ import annotations

import base64
import json
import os
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from . import webhooks

Answer = dict[str, Any]


class Backend:
    """The endpoint. `on_join` / `on_command` get each hook's body and return the answer
    (default: allow); `webhook_status` is what webhooks are answered (set 500 to play a
    receiver that is down). `hooks` and `events` record what came, in order (`events`:
    every event of every delivered batch, duplicates of retries included);
    `bad_signatures` counts requests whose signature did not verify (always 0 from a
    real navsyncd)."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory or tempfile.mkdtemp(prefix="navsync-backend-")
        self.secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
        self.secret_file = os.path.join(self.directory, "hooks.secret")
        with open(self.secret_file, "w") as f:
            f.write(self.secret + "\n")
        self.on_join: Callable[[dict[str, Any]], Answer] = lambda hook: {"allow": True}
        self.on_command: Callable[[dict[str, Any]], Answer] = lambda hook: {"allow": True}
        self.webhook_status = 200
        self.hooks: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.batches: list[dict[str, Any]] = []
        self.bad_signatures = 0
        self._changed = threading.Condition()
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go in two writes: with Nagle on, the second waits for the
            # peer's delayed ACK (some 40 ms an answer on Linux).
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    parsed = webhooks.verify(dict(self.headers.items()), body, backend.secret)
                except (webhooks.InvalidSignature, ValueError):
                    with backend._changed:
                        backend.bad_signatures += 1
                    return self._answer(401, {"error": "bad signature"})
                if self.path.endswith("/events"):
                    status = backend.webhook_status
                    if 200 <= status < 300:
                        with backend._changed:
                            backend.batches.append({"id": self.headers.get("webhook-id"), "events": parsed["events"]})
                            backend.events.extend(parsed["events"])
                            backend._changed.notify_all()
                    return self._answer(status, {})
                with backend._changed:
                    backend.hooks.append(parsed)
                    backend._changed.notify_all()
                answer = backend.on_join(parsed) if parsed.get("type") == "join" else backend.on_command(parsed)
                self._answer(200, answer)

            def _answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        #: The hook endpoint; webhooks go to `url + "/events"`.
        self.url = f"http://127.0.0.1:{self.port}/navsync"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def write_hooks_file(self, *, join: bool = False, commands: dict[str, list[str]] | None = None,
                         webhooks: bool = True, headers: list[str] | None = None, **more: Any) -> str:
        """A hooks file pointing at this backend (docs/backend.md); returns its path."""
        config: dict[str, Any] = {"url": self.url, "secretFile": self.secret_file, "join": join,
                                  "commands": commands or {}, "headers": headers or []}
        if webhooks:
            config["webhooks"] = [{"url": self.url + "/events"}]
        config.update(more)
        path = os.path.join(self.directory, "hooks.json")
        with open(path, "w") as f:
            json.dump(config, f)
        return path

    def wait_for_event(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0) -> dict[str, Any]:
        """The first event delivered that satisfies `predicate`, waiting up to `timeout` s."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for e in self.events:
                    if predicate(e):
                        return e
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no such event in {timeout} s; got {[e.get('id') for e in self.events]}")
                self._changed.wait(left)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
