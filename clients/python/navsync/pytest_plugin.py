"""The pytest plugin (registered as `navsync` through the `pytest11` entry point).

Fixtures:
- `navsyncd`: a navsyncd started for the test on a free port and stopped after it, with
  `.url` (WebSocket), `.http` (base URL), `.port`, `.log` (the file its output goes
  to: shown when the test fails) and `.restart()`. The binary comes
  from `--navsyncd PATH`, else the `NAVSYNCD` environment variable, else
  `.build/release/navsyncd`; flows from `--navsync-flows DIR`. Give it more flags with
  `@pytest.mark.navsyncd_args("--data", "{tmp_path}/data")` (`{tmp_path}`: the test's
  temporary directory).
- `navsync_backend`: a programmable app backend for hook-driven flows
  (`navsync.testing.Backend`): answers join and command hooks as the test says
  (`on_join`, `on_command`), takes webhooks (`events`), checks every signature. Start
  navsyncd with it by `@pytest.mark.navsyncd_args("--hooks", "{hooks}")` and say what
  the file asks for with `@pytest.mark.navsync_hooks(join=True, commands={"*": ["open"]})`.
- `navsync_session`: a fresh session on it (made from the demo flow), connected through
  `navsync.sync` (plain calls, no event loop needed): `navsync_session.open("/product/42")`.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid
from typing import Any, Generator, Iterator

import pytest

from . import sync


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("navsync")
    group.addoption("--navsyncd", default=None, help="the navsyncd binary (default: $NAVSYNCD, else .build/release/navsyncd)")
    group.addoption("--navsync-flows", default=None, help="a directory of *.json flows for navsyncd (--flows)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "navsyncd_args(*args): more command-line flags for the navsyncd fixture")
    config.addinivalue_line("markers", "navsync_hooks(**settings): what the hooks file of navsync_backend asks for ({hooks})")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    # Keeps each phase's report on the test, so the fixture knows at teardown whether
    # the test failed (and then shows the server's log).
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"_navsync_{report.when}", report)


class Navsyncd:
    """A navsyncd process for one test."""

    def __init__(self, binary: str, args: list[str], log: str | None = None) -> None:
        if not os.access(binary, os.X_OK):
            raise FileNotFoundError(f"no navsyncd at {binary} (build it with `swift build -c release`, "
                                    "or pass --navsyncd PATH or set NAVSYNCD)")
        self.binary, self.args = binary, args
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        #: The file navsyncd's output (both streams) goes to. Never a pipe: a pipe that
        #: nobody reads fills up after a few hundred requests' log lines, and then the
        #: server blocks writing its log.
        self.log = log or tempfile.mkstemp(prefix="navsyncd-", suffix=".log")[1]
        self.start()

    def start(self, timeout: float = 10.0) -> None:
        # The same port again on a restart, so clients find it where it was.
        offset = os.path.getsize(self.log) if os.path.exists(self.log) else 0
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen([self.binary, "--port", str(self.port), *self.args],
                                            stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        lines: list[str] = []
        while time.monotonic() < deadline:
            with open(self.log, "rb") as f:
                f.seek(offset)
                lines = f.read().decode(errors="replace").splitlines()
            if any(line.startswith("navsyncd listening on ") for line in lines) or self.process.poll() is not None:
                break
            time.sleep(0.02)
        line = next((line for line in lines if line.startswith("navsyncd listening on ")), "")
        if not line.startswith(("navsyncd listening on ws://", "navsyncd listening on wss://")):
            self.stop("KILL")
            raise RuntimeError(f"navsyncd did not start (its output, {self.log}):\n" + "\n".join(lines[-20:]))
        self.url = line.split()[3]
        #: With --tls-self-signed: the certificate file to trust (`cafile=`).
        self.cafile: str | None = None
        if self.url.startswith("wss://") and "--tls-self-signed" in self.args:
            made = next((m for m in lines if m.startswith("TLS: a self-signed certificate") and " in " in m), "")
            if made:
                self.cafile = made.split(" in ", 1)[1].split(" ", 1)[0]
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])
        self.http = line.split("(web: ", 1)[1].rstrip(")\n") if "(web: " in line else f"http://127.0.0.1:{self.port}/"

    def output(self, lines: int = 60) -> str:
        """The last lines navsyncd wrote."""
        try:
            with open(self.log, "rb") as f:
                return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, signal: str = "TERM", timeout: float = 10.0) -> int:
        """Stops the server for sure: SIGTERM (or SIGKILL), and SIGKILL after `timeout`
        seconds if it has not exited. Returns its exit code."""
        if self.process is None:
            return 0
        process, self.process = self.process, None
        if signal == "KILL":
            process.kill()
        else:
            process.terminate()
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait(5)

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
    if any("{hooks}" in a for a in args):
        backend = request.getfixturevalue("navsync_backend")
        settings: dict[str, Any] = {}
        for mark in request.node.iter_markers("navsync_hooks"):
            settings.update(mark.kwargs)
        hooks = backend.write_hooks_file(**settings)
        args = [a.replace("{hooks}", hooks) for a in args]
    log = str(request.getfixturevalue("tmp_path") / "navsyncd.log")
    server = Navsyncd(binary, args, log=log)
    yield server
    code = server.stop()
    report = getattr(request.node, "_navsync_call", None)
    if report is not None and report.failed:
        print(f"--- navsyncd's output ({server.log}, exit {code}):\n{server.output()}")


@pytest.fixture
def navsync_backend(tmp_path: Any) -> Iterator[Any]:
    from .testing import Backend
    backend = Backend(str(tmp_path))
    yield backend
    backend.close()


@pytest.fixture
def navsync_session(navsyncd: Navsyncd) -> Iterator[Any]:
    with sync.connect(navsyncd.url, "test-" + uuid.uuid4().hex[:8], create=True) as session:
        yield session
