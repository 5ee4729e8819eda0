"""The same API for plain scripts, without `async`: `navsync.sync.connect(url, session)`
runs the asyncio client on a thread of its own, and each call waits for its answer.

    with navsync.sync.connect("ws://127.0.0.1:7420/ws", "demo") as s:
        s.open("/product/42")
        s.wait_for(lambda st: navsync.active_path(st)[-1]["route"] == "detail")
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, Iterable, Iterator

from .client import Batch, CommandOptions, Connector, Helpers, Session, active_path
from .errors import Ack, Change

__all__ = ["connect", "SyncSession"]


class SyncSession(Helpers[Ack]):
    """A `Session` driven from ordinary code: the same methods, each blocking until the
    server answers (or, for `wait_for`, until the condition holds)."""

    def __init__(self, session: Session) -> None:
        self._async = session
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="navsync", daemon=True)
        self._thread.start()

    def _call(self, coroutine: Any, timeout: float | None = None) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def __enter__(self) -> "SyncSession":
        try:
            self._call(self._async.start())
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._thread.is_alive():
            self._call(self._async.close())
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        # The loop's selector and its self-pipe go with it: each connect and close leaked
        # an epoll handle and two sockets, a ResourceWarning under `pytest -W error`.
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    @property
    def session(self) -> str: return self._async.session

    # What the mirror holds, read as it is.
    @property
    def state(self) -> dict[str, Any] | None: return self._async.state
    @property
    def rev(self) -> int: return self._async.rev
    @property
    def epoch(self) -> str | None: return self._async.epoch
    @property
    def client(self) -> str | None: return self._async.client
    @property
    def members(self) -> list[dict[str, Any]]: return self._async.members
    @property
    def presence(self) -> dict[str, dict[str, Any]]: return self._async.presence

    def active_path(self) -> list[dict[str, Any]]:
        return active_path(self._async.state)

    def command(self, ops: list[dict[str, Any]], *, base: int | None = None, on_conflict: str | None = None,
                label: str | None = None, id: Any = None, timeout: float | None = None) -> Ack:
        """One command of these ops, atomically: its `Ack`, or `NavError` (a class
        per code) with the server's fields; `timeout` (seconds) defaults to the session's."""
        result: Ack = self._call(self._async.command(ops, base=base, on_conflict=on_conflict, label=label, id=id, timeout=timeout))
        return result

    def _one(self, op: dict[str, Any], options: CommandOptions) -> Ack:
        return self.command([op], id=options.id, label=options.label, base=options.base, on_conflict=options.on_conflict,
                            timeout=options.timeout)

    def wait_for(self, predicate: Callable[[dict[str, Any]], Any], timeout: float = 5.0) -> dict[str, Any]:
        """The state once `predicate(state)` holds (checked on every change); raises
        `TimeoutError` showing the last state, or `NavError` `closed` once closed."""
        state: dict[str, Any] = self._call(self._async.wait_for(predicate, timeout))
        return state

    def report(self, rev: int | None = None, focus: str | None = None) -> None:
        self._call(self._async.report(rev, focus))

    def reconnect_now(self) -> None:
        """The network is back: the backoff wait ends now (see `Session.reconnect_now`)."""
        self._loop.call_soon_threadsafe(self._async.reconnect_now)

    def rendered(self, rev: int | None = None, focus: str | None = None) -> None:
        """Tells the others which revision this device shows (see `Session.rendered`)."""
        self._call(self._async.rendered(rev, focus))

    def top_entry(self) -> dict[str, Any] | None:
        return self._async.top_entry()

    def back(self, *, timeout: float | None = None) -> Ack:
        """Pops the screen this device shows (see `Session.back`)."""
        ack: Ack = self._call(self._async.back(timeout=timeout))
        return ack

    def history(self, *, before: int | None = None, limit: int = 100, timeout: float | None = None) -> dict[str, Any]:
        """A page of history, newest first (see `Session.history`)."""
        page: dict[str, Any] = self._call(self._async.history(before=before, limit=limit, timeout=timeout))
        return page

    def state_at(self, rev: int, *, timeout: float | None = None) -> dict[str, Any]:
        """The state of a revision history holds (see `Session.state_at`)."""
        state: dict[str, Any] = self._call(self._async.state_at(rev, timeout=timeout))
        return state

    def sessions(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """The sessions on the server (see `Session.sessions`)."""
        found: list[dict[str, Any]] = self._call(self._async.sessions(timeout=timeout))
        return found

    def request(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Any other request (`history`, `sessions`…): its reply."""
        reply: dict[str, Any] = self._call(self._async.request(message, timeout))
        return reply

    def changes(self, timeout: float = 5.0) -> Iterator[Change]:
        """Each applied patch from now on; stops when none comes within `timeout` s."""
        q: asyncio.Queue[Change | None] = asyncio.Queue()

        async def subscribe() -> None:
            self._async._listeners.append(q)
        self._call(subscribe())
        try:
            while True:
                try:
                    change = self._call(asyncio.wait_for(q.get(), timeout))
                except (TimeoutError, asyncio.TimeoutError):
                    return
                if change is None:
                    return
                yield change
        finally:
            async def unsubscribe() -> None:
                self._async._listeners.remove(q)
            self._call(unsubscribe())

    def batch(self, **options: Any) -> "_SyncBatch":
        return _SyncBatch(self, options)

    def refresh_token(self, token: str) -> dict[str, Any]:
        """Replaces the connection's token without reconnecting (see `Session.refresh_token`)."""
        reply: dict[str, Any] = self._call(self._async.refresh_token(token))
        return reply


class _SyncBatch(Helpers[None]):
    """`with s.batch() as b: b.push(...); b.select(...)`: one atomic command at the end."""

    def __init__(self, session: SyncSession, options: dict[str, Any]) -> None:
        self._batch: Batch = session._async.batch(**options)
        self._session = session
        self.ack: Ack | None = None

    def _one(self, op: dict[str, Any], options: CommandOptions) -> None:
        self._batch._one(op, options)

    @property
    def ops(self) -> list[dict[str, Any]]:
        return self._batch.ops

    def __enter__(self) -> "_SyncBatch":
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        if kind is None and self._batch.ops:
            self.ack = self._session.command(self._batch.ops, **self._batch._options)


def connect(urls: str | Iterable[str], session: str, *, create: bool = False, flow: str | None = None,
            token: str | None = None, name: str | None = None, role: str | None = None,
            connector: Connector | None = None, backoff: tuple[float, float] = (0.1, 5.0),
            cafile: str | None = None, timeout: float = 10.0, recreate: bool = False) -> SyncSession:
    """`navsync.connect` for plain scripts: `with navsync.sync.connect(url, "demo") as s:`."""
    return SyncSession(Session(urls, session, create=create, flow=flow, token=token, name=name, role=role, connector=connector,
                               backoff=backoff, cafile=cafile, timeout=timeout, recreate=recreate))
