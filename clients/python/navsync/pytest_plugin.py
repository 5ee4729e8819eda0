"""The pytest plugin (registered as `navsync` through the `pytest11` entry point).

Fixtures:
- `navsyncd`: a navsyncd started for the test on a free port and stopped after it, with
  `.url` (WebSocket), `.http` (base URL), `.port`, and `.restart()`. The binary comes
  from `--navsyncd PATH`, else the `NAVSYNCD` environment variable, else
  `.build/release/navsyncd`; flows from `--navsync-flows DIR`. Give it more flags with
  `@pytest.mark.navsyncd_args("--data", "{tmp_path}/data")` (`{tmp_path}`: the test's
  temporary directory).
- `navsync_session`: a fresh session on it (made from the demo flow), connected through
  `navsync.sync` (plain calls, no event loop needed): `navsync_session.open("/product/42")`.
"""
from __future__ import annotations

import os
import subprocess
import time
import uuid
from typing import Any, Iterator

import pytest

from . import sync


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("navsync")
    group.addoption("--navsyncd", default=None, help="the navsyncd binary (default: $NAVSYNCD, else .build/release/navsyncd)")
    group.addoption("--navsync-flows", default=None, help="a directory of *.json flows for navsyncd (--flows)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "navsyncd_args(*args): more command-line flags for the navsyncd fixture")


class Navsyncd:
    """A navsyncd process for one test."""

    def __init__(self, binary: str, args: list[str]) -> None:
        if not os.access(binary, os.X_OK):
            raise FileNotFoundError(f"no navsyncd at {binary} (build it with `swift build -c release`, "
                                    "or pass --navsyncd PATH or set NAVSYNCD)")
        self.binary, self.args = binary, args
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.start()

    def start(self) -> None:
        # The same port again on a restart, so clients find it where it was.
        self.process = subprocess.Popen([self.binary, "--port", str(self.port), *self.args],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.startswith(("navsyncd listening on ws://", "navsyncd listening on wss://")):
            err = self.process.stderr.read() if self.process.stderr else ""
            raise RuntimeError(f"navsyncd did not start: {line!r} {err}")
        self.url = line.split()[3]
        #: With --tls-self-signed: the certificate file to trust (`cafile=`).
        self.cafile: str | None = None
        if self.url.startswith("wss://") and "--tls-self-signed" in self.args and self.process.stdout:
            made = self.process.stdout.readline()
            if " in " in made:
                self.cafile = made.split(" in ", 1)[1].split(" ", 1)[0]
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])
        self.http = line.split("(web: ", 1)[1].rstrip(")\n") if "(web: " in line else f"http://127.0.0.1:{self.port}/"

    def stop(self, signal: str = "TERM") -> int:
        if self.process is None:
            return 0
        if signal == "KILL":
            self.process.kill()
        else:
            self.process.terminate()
        code = self.process.wait(10)
        self.process = None
        return code

    def restart(self, signal: str = "TERM") -> None:
        """Stops the server and starts it again on the same port (with the same flags)."""
        self.stop(signal)
        for _ in range(50):
            try:
                self.start()
                return
            except RuntimeError:
                time.sleep(0.1)   # the port may take a moment to come free
        self.start()


@pytest.fixture
def navsyncd(request: pytest.FixtureRequest) -> Iterator[Navsyncd]:
    config = request.config
    binary = config.getoption("--navsyncd") or os.environ.get("NAVSYNCD") or ".build/release/navsyncd"
    args: list[str] = []
    if config.getoption("--navsync-flows"):
        args += ["--flows", config.getoption("--navsync-flows")]
    for mark in request.node.iter_markers("navsyncd_args"):
        args += [str(a) for a in mark.args]
    if any("{tmp_path}" in a for a in args):
        tmp = str(request.getfixturevalue("tmp_path"))
        args = [a.replace("{tmp_path}", tmp) for a in args]
    server = Navsyncd(binary, args)
    yield server
    server.stop()


@pytest.fixture
def navsync_session(navsyncd: Navsyncd) -> Iterator[Any]:
    with sync.connect(navsyncd.url, "test-" + uuid.uuid4().hex[:8], create=True) as session:
        yield session
