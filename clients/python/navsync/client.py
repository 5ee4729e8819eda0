"""An asyncio client of navsync protocol v1 (docs/protocol.md): one `Session` mirrors
one session of one server (or of the first of several URLs that answers), sends route
operations as commands, and waits on the state.

The rules are those of the Swift and JavaScript clients:
- The mirror changes only by the server's patches, applied in revision order; a gap
  or a patch that does not apply makes the client ask for the state (`sync`).
- A command is kept until the server answers it. After a reconnect (with backoff, to
  each URL in turn) the client resumes its identity, catches up from its revision, and
  sends every unanswered command again under the same id: the server applies a command
  id once, so nothing is ever applied twice.
- On silence longer than the server's heartbeat the client pings; with no answer it
  reconnects.
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import ssl
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Coroutine, Generator, Generic, Iterable, TypeVar

import jsonpatch
import websockets
from websockets.exceptions import WebSocketException
from websockets.typing import Subprotocol

from .errors import Ack, Change, NavError

__all__ = ["Session", "connect", "Batch", "Sent", "Helpers", "CommandOptions"]

Connector = Callable[[str], Awaitable[Any]]


async def _websocket(url: str) -> Any:
    return await websockets.connect(url, subprotocols=[Subprotocol("navsync.v1")], max_size=None, ping_interval=None)


def _trusting(cafile: str) -> Connector:
    """A connector whose wss:// connections trust the CA certificates in `cafile` (PEM),
    instead of the system's: a server's own certificate file, say."""
    context = ssl.create_default_context(cafile=cafile)

    async def connect(url: str) -> Any:
        return await websockets.connect(url, subprotocols=[Subprotocol("navsync.v1")], max_size=None, ping_interval=None,
                                        ssl=context if url.startswith("wss://") else None)
    return connect


def _normal_url(url: str) -> str:
    """`ws://host:port/ws`; `host:port` and `http://host:port/` are taken too."""
    if url.startswith(("http://", "https://")):
        url = "ws" + url[4:]   # https:// becomes wss://
    if "://" not in url:
        url = "ws://" + url
    scheme, rest = url.split("://", 1)
    if "/" not in rest:
        rest += "/ws"
    elif rest.endswith("/"):
        rest += "ws"
    return scheme + "://" + rest


class Sent:
    """A command sent and not yet answered: `await` it for its `Ack` (or its
    `NavError`); `ref(n)` names the n-th entry it makes (`"~ID.n"`), usable in the
    next commands before the answer comes (docs/protocol.md, "References")."""

    def __init__(self, id: Any, future: "asyncio.Future[Ack]", session: "Session | None" = None) -> None:
        self.id = id
        self._future = future
        self._session = session

    async def result(self, timeout: float | None = None) -> Ack:
        """The `Ack`, waiting at most `timeout` seconds (None: as long as it takes);
        past it, `NavError` `timeout` naming the server, and the command is no longer
        resent (it may or may not have been applied: send it again under the same id
        to find out)."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._future), timeout)
        except asyncio.TimeoutError:
            url = "the server"
            if self._session is not None:
                self._session._pending.pop(self.id, None)
                url = self._session.url
            raise NavError("timeout", f"no answer from {url} within {timeout:g} s to command {self.id!r}; it may or may "
                           f"not have been applied (send it again with id={self.id!r} to find out)") from None

    def ref(self, n: int = 0) -> str:
        """`"~ID.n"`: the n-th entry (0-based, in allocation order) this command makes."""
        return f"~{self.id}.{n}"

    def done(self) -> bool:
        return self._future.done()

    def __await__(self) -> Generator[Any, None, Ack]:
        return self._future.__await__()


def _op(name: str, **fields: Any) -> dict[str, Any]:
    """An operation: the fields given, leaving out those not set (None, and empty params)."""
    return {"op": name, **{k: v for k, v in fields.items() if v is not None and not (k == "params" and not v)}}


def _params(params: dict[str, Any] | None, more: dict[str, Any]) -> dict[str, Any]:
    """A route's params: the dict given (any names, `at` and `label` included) and the
    keyword arguments besides."""
    return {**(params or {}), **more}


@dataclass(frozen=True)
class CommandOptions:
    """What a helper's command carries besides its operation: its id (the idempotency
    key; one is made when None), a history label, the base revision, onConflict
    (`rebase` or `reject`) and how long to wait for the answer (seconds)."""
    id: Any = None
    label: str | None = None
    base: int | None = None
    on_conflict: str | None = None
    timeout: float | None = None

    @property
    def given(self) -> bool:
        return self != CommandOptions()


R = TypeVar("R")


class Helpers(Generic[R]):
    """One method per operation of docs/protocol.md. Route params come as a dict (any
    names) and/or as keyword arguments; the command's own options as `command_id`,
    `command_label`, `base`, `on_conflict` and `timeout` (keyword only), so a param may
    be called anything: `push("detail", {"id": 7, "at": "x"}, command_id="c-1")`.
    A `Session` returns awaitables of the `Ack`, the sync API the `Ack`, a batch nothing
    (the batch is one command)."""

    def _one(self, op: dict[str, Any], options: CommandOptions) -> R:
        raise NotImplementedError

    def push(self, route: str, params: dict[str, Any] | None = None, /, *, at: str | None = None,
             hints: dict[str, Any] | None = None, command_id: Any = None, command_label: str | None = None,
             base: int | None = None, on_conflict: str | None = None, timeout: float | None = None, **more: Any) -> R:
        """Pushes `route` with its params (the route's declared presentation: a sheet
        route is presented)."""
        return self._one(_op("push", route=route, params=_params(params, more), hints=hints, at=at),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def route(self, route: str, params: dict[str, Any] | None = None, /, *, at: str | None = None,
              hints: dict[str, Any] | None = None, command_id: Any = None, command_label: str | None = None,
              base: int | None = None, on_conflict: str | None = None, timeout: float | None = None, **more: Any) -> R:
        """The same as `push` (the protocol's own name)."""
        return self._one(_op("route", route=route, params=_params(params, more), hints=hints, at=at),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def present(self, route: str, params: dict[str, Any] | None = None, /, style: str = "sheet", *, at: str | None = None,
                hints: dict[str, Any] | None = None, command_id: Any = None, command_label: str | None = None,
                base: int | None = None, on_conflict: str | None = None, timeout: float | None = None, **more: Any) -> R:
        """Presents `route` modally (`style`: `sheet` or `cover`)."""
        return self._one(_op("present", route=route, params=_params(params, more), style=style, hints=hints, at=at),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def pop(self, count: int = 1, *, from_: str | None = None, at: str | None = None, command_id: Any = None,
            command_label: str | None = None, base: int | None = None, on_conflict: str | None = None,
            timeout: float | None = None) -> R:
        """Pops `count` screens, or (`from_`, an entry id or "~CMD.N") that screen and
        everything above it: two devices pressing Back on it at once pop it once."""
        return self._one(_op("pop", count=None if from_ is not None or count == 1 else count, at=at, **{"from": from_}),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def pop_to_root(self, *, at: str | None = None, command_id: Any = None, command_label: str | None = None,
                    base: int | None = None, on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Keeps only the stack's root screen."""
        return self._one(_op("popToRoot", at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def pop_to(self, entry: str, *, at: str | None = None, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Removes what is above that screen (an entry id or "~CMD.N")."""
        return self._one(_op("popTo", entry=entry, at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def pop_to_first(self, route: str, *, at: str | None = None, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Removes what is above the first screen of `route` (nothing if there is none)."""
        return self._one(_op("popToFirst", route=route, at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def pop_to_last(self, route: str, *, at: str | None = None, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Removes what is above the last screen of `route` (nothing if there is none)."""
        return self._one(_op("popToLast", route=route, at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def pop_before(self, route: str, *, at: str | None = None, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Removes the first screen of `route` and everything above it."""
        return self._one(_op("popBefore", route=route, at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def restart(self, *, at: str | None = None, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Puts a coordinator (the deepest, or `at`) back in its flow's initial state."""
        return self._one(_op("restart", at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def set_tabs(self, routes: Iterable[str | dict[str, Any]], *, at: str | None = None, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Replaces the tabs; a tab of the same route is kept with its state."""
        return self._one(_op("setTabs", routes=list(routes), at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def append_tab(self, route: str, params: dict[str, Any] | None = None, /, *, at: str | None = None,
                   hints: dict[str, Any] | None = None, command_id: Any = None, command_label: str | None = None,
                   base: int | None = None, on_conflict: str | None = None, timeout: float | None = None, **more: Any) -> R:
        """Adds a tab at the end."""
        return self._one(_op("appendTab", route=route, params=_params(params, more), hints=hints, at=at),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def insert_tab(self, route: str, params: dict[str, Any] | None = None, /, *, index: int, at: str | None = None,
                   hints: dict[str, Any] | None = None, command_id: Any = None, command_label: str | None = None,
                   base: int | None = None, on_conflict: str | None = None, timeout: float | None = None, **more: Any) -> R:
        """Adds a tab at `index`."""
        return self._one(_op("insertTab", route=route, params=_params(params, more), index=index, hints=hints, at=at),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def remove_first(self, route: str, *, at: str | None = None, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Removes the first tab of `route` (nothing if there is none)."""
        return self._one(_op("removeFirst", route=route, at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def remove_last(self, route: str, *, at: str | None = None, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Removes the last tab of `route` (nothing if there is none)."""
        return self._one(_op("removeLast", route=route, at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def remove_tab(self, entry: str, *, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Removes that tab (an entry id)."""
        return self._one(_op("removeTab", entry=entry), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def update_session(self, data: dict[str, Any], *, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Merges `data` into the session's data, what the flow's guards read (signing
        in, filling a cart): `update(data, scope="session")`."""
        return self._one(_op("update", data=data, scope="session"), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def set_root(self, route: str, params: dict[str, Any] | None = None, /, *, at: str | None = None,
                 hints: dict[str, Any] | None = None, command_id: Any = None, command_label: str | None = None,
                 base: int | None = None, on_conflict: str | None = None, timeout: float | None = None, **more: Any) -> R:
        """Switches a root coordinator to `route` (on a stack: a new root, the stack cleared)."""
        return self._one(_op("setRoot", route=route, params=_params(params, more), hints=hints, at=at),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def set_stack(self, routes: Iterable[str | dict[str, Any]], *, at: str | None = None, command_id: Any = None,
                  command_label: str | None = None, base: int | None = None, on_conflict: str | None = None,
                  timeout: float | None = None) -> R:
        """Replaces the whole stack (route names or {route, params, presentation})."""
        return self._one(_op("setStack", routes=list(routes), at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def jump_to(self, routes: Iterable[str | dict[str, Any]], *, at: str | None = None, command_id: Any = None, command_label: str | None = None, base: int | None = None,
            on_conflict: str | None = None, timeout: float | None = None) -> R:
        """The same as `set_stack` (FlowStacks' name)."""
        return self._one(_op("setStack", routes=list(routes), at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def set_path(self, routes: Iterable[str | dict[str, Any]], *, layer: int = 0, at: str | None = None, command_id: Any = None,
                 command_label: str | None = None, base: int | None = None, on_conflict: str | None = None,
                 timeout: float | None = None) -> R:
        """Sets one layer's pushes (layer 0: on the root screen; N: on the Nth sheet or
        cover), the screens that still match and every layer above kept."""
        return self._one(_op("setPath", routes=list(routes), layer=layer or None, at=at),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def dismiss(self, all: bool = False, *, at: str | None = None, command_id: Any = None, command_label: str | None = None,
                base: int | None = None, on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Dismisses the topmost sheet or cover (`all`: the lowest, and everything above)."""
        return self._one(_op("dismiss", all=True if all else None, at=at), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def select(self, route: str | None = None, *, index: int | None = None, entry: str | None = None,
               at: str | None = None, command_id: Any = None, command_label: str | None = None, base: int | None = None,
               on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Selects a tab: by route, by `index` or by `entry` id."""
        return self._one(_op("select", route=route, index=index, entry=entry, at=at),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def open(self, url: str, *, command_id: Any = None, command_label: str | None = None, base: int | None = None,
             on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Opens a deep link of the flow (`/product/42`)."""
        return self._one(_op("open", url=url), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def alert(self, title: str, message: str | None = None, buttons: list[dict[str, Any]] | None = None, *,
              command_id: Any = None, command_label: str | None = None, base: int | None = None,
              on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Shows an alert ({id, label, role?} buttons; one OK button by default)."""
        return self._one(_op("alert", title=title, message=message, buttons=buttons),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def respond(self, alert: str, button: str, *, command_id: Any = None, command_label: str | None = None,
                base: int | None = None, on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Answers the alert `alert` with `button`."""
        return self._one(_op("respond", alert=alert, button=button), CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def update(self, data: dict[str, Any], *, entry: str | None = None, scope: str | None = None, at: str | None = None,
               command_id: Any = None, command_label: str | None = None, base: int | None = None,
               on_conflict: str | None = None, timeout: float | None = None) -> R:
        """Merges `data` into a screen's data (the deepest one's by default), or with
        `scope="session"` into the session's data, what the flow's guards read."""
        return self._one(_op("update", data=data, entry=entry, scope=scope, at=at),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def restore(self, rev: int | None = None, *, label: str | None = None, command_id: Any = None,
                command_label: str | None = None, base: int | None = None, on_conflict: str | None = None,
                timeout: float | None = None) -> R:
        """Makes the state that of revision `rev` again (or of the newest revision with
        history label `label`)."""
        return self._one(_op("restore", rev=rev, label=None if rev is not None else label),
                         CommandOptions(command_id, command_label, base, on_conflict, timeout))

    def reset(self, *, command_id: Any = None, command_label: str | None = None, base: int | None = None,
              on_conflict: str | None = None, timeout: float | None = None) -> R:
        """The whole session back to its flow's initial state (admins)."""
        return self._one(_op("reset"), CommandOptions(command_id, command_label, base, on_conflict, timeout))


class Batch(Helpers[None]):
    """Operations collected by the helpers, sent as one atomic command
    (`async with session.batch() as b: b.push(...); b.select(...)`). The command's
    options go to `batch(...)`, not to each helper."""

    def __init__(self, session: "Session", **options: Any) -> None:
        self._session, self._options = session, options
        self.ops: list[dict[str, Any]] = []
        self.ack: Ack | None = None

    def _one(self, op: dict[str, Any], options: CommandOptions) -> None:
        if options.given:
            raise TypeError("a batch is one command: give its options to batch(...), not to each operation")
        self.ops.append(op)

    async def __aenter__(self) -> "Batch":
        return self

    async def __aexit__(self, kind: Any, error: Any, tb: Any) -> None:
        if kind is None and self.ops:
            self.ack = await self._session.command(self.ops, **self._options)


class Session(Helpers[Coroutine[Any, Any, Ack]]):
    """One session, mirrored. Made by `navsync.connect`; use it as an async context
    manager (it connects on entry and closes on exit)."""

    def __init__(self, urls: str | Iterable[str], session: str, *, create: bool = False, flow: str | None = None,
                 token: str | None = None, name: str | None = None, role: str | None = None,
                 connector: Connector | None = None, backoff: tuple[float, float] = (0.25, 5.0),
                 cafile: str | None = None, timeout: float = 10.0, recreate: bool = False) -> None:
        if connector is None:
            connector = _trusting(cafile) if cafile else _websocket
        self.urls = [_normal_url(u) for u in ([urls] if isinstance(urls, str) else list(urls))]
        if not self.urls:
            raise ValueError("navsync.connect needs at least one server URL")
        self.session, self.create, self.flow = session, create, flow
        self.token, self.name, self.role = token, name, role
        self._connector, self._backoff = connector, backoff
        #: The mirrored state document (None until joined), its revision and epoch.
        self.state: dict[str, Any] | None = None
        self.rev = 0
        self.epoch: str | None = None
        #: This client's identity (kept across reconnects: resends are recognised).
        self.client: str | None = None
        #: The session's flow, as the server sent it.
        self.flow_document: dict[str, Any] | None = None
        #: Members by client id: {client, name, role, rev?, focus?}.
        self.presence: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._prefix = "py" + "".join(random.choice("0123456789abcdef") for _ in range(6)) + "-"
        self._pending: dict[Any, tuple[dict[str, Any], asyncio.Future[Ack]]] = {}
        #: Tries of commands answered `unconfirmed`, by id (resent a second apart).
        self._unconfirmed: dict[Any, int] = {}
        self._waiters: list[tuple[Callable[[dict[str, Any]], Any], asyncio.Future[dict[str, Any]]]] = []
        self._listeners: list[asyncio.Queue[Change | None]] = []
        self._requests: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._ws: Any = None
        self._task: asyncio.Task[None] | None = None
        self._joined: asyncio.Future[None] | None = None
        self._closed = False
        self._fatal: NavError | None = None
        self._heartbeat = 30.0
        self._outbox: list[dict[str, Any]] = []
        #: How long a call waits for its answer by default (seconds); each call may say.
        self.timeout = timeout
        #: Send `create` again on a reconnect (by default only the first join does: a
        #: session made anew is reported, not silently made again).
        self.recreate = recreate
        #: The server of the current (or last) connection.
        self.url = self.urls[0]
        self._sends: list[asyncio.Task[None]] = []
        self._wake = asyncio.Event()

    # ---- connecting ----

    async def __aenter__(self) -> "Session":
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def start(self) -> None:
        """Connects and joins (what `async with` does); raises `NavError` when the session is refused (an unknown
        session without `create`, a bad token) or no server answers."""
        self._joined = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run())
        try:
            await self._joined
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Leaves: unanswered commands fail with `closed`. Bounded: it returns within
        seconds even if the server does not answer the close."""
        self._closed = True
        task, ws = self._task, self._ws
        if task is not None:
            task.cancel()
        # The socket closed too: a cancellation that `asyncio.wait_for` swallowed (a
        # receive completing at the same moment) must not leave the task serving on.
        if ws is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(ws.close(), 5)
        for _ in range(10):
            if task is None or task.done():
                break
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), 1)
        self._fail_all(NavError("closed", "the navsync session was closed"))

    @property
    def members(self) -> list[dict[str, Any]]:
        return list(self.presence.values())

    async def _run(self) -> None:
        delay = self._backoff[0]
        for attempt in itertools.count():
            url = self.urls[attempt % len(self.urls)]
            self.url = url
            try:
                self._ws = await asyncio.wait_for(self._connector(url), timeout=10)
            except (OSError, asyncio.TimeoutError, WebSocketException) as e:
                if self._joined is not None and not self._joined.done() and attempt + 1 >= len(self.urls) * 3:
                    self._joined.set_exception(NavError("offline", f"no server answered ({url}: {e})"))
                    return
                delay = self._backoff[0] if await self._pause(delay) else min(delay * 2, self._backoff[1])
                continue
            try:
                await self._serve()
                delay = self._backoff[0]
            except NavError as e:
                # Refused for good (unknown session, bad token): nothing to retry.
                self._fatal = e
                if self._joined is not None and not self._joined.done():
                    self._joined.set_exception(e)
                self._fail_all(e)
                return
            except (OSError, asyncio.TimeoutError, WebSocketException):
                pass
            finally:
                with contextlib.suppress(BaseException):
                    await self._ws.close()
                self._ws = None
            if self._closed:
                return
            delay = self._backoff[0] if await self._pause(delay) else min(delay * 2, self._backoff[1])

    async def _pause(self, delay: float) -> bool:
        """The backoff wait: a random 50-100% of `delay`; True when `reconnect_now()`
        ended it early."""
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), delay * (0.5 + random.random() / 2))
            return True
        except asyncio.TimeoutError:
            return False

    def reconnect_now(self) -> None:
        """The network is back (the agent knows it): a wait before the next attempt ends
        now and the backoff starts over (`reconnectNow()` in Swift and navsync.js)."""
        self._wake.set()

    async def _resend(self, cid: Any, after: float) -> None:
        """A command still pending, sent again under its id (a reconnect resends it too)."""
        await asyncio.sleep(after)
        entry = self._pending.get(cid)
        if entry is not None:
            with contextlib.suppress(websockets.ConnectionClosed):
                await self._send(entry[0])

    async def _send(self, message: dict[str, Any]) -> None:
        if self._ws is not None:
            await self._ws.send(json.dumps(message))

    async def _recv(self) -> dict[str, Any]:
        """The next message; on silence longer than the heartbeat a ping, and with no
        answer to it the connection is given up."""
        try:
            message: dict[str, Any] = json.loads(await asyncio.wait_for(self._ws.recv(), timeout=self._heartbeat))
            return message
        except asyncio.TimeoutError:
            await self._send({"type": "ping"})
            message = json.loads(await asyncio.wait_for(self._ws.recv(), timeout=self._heartbeat))
            return message

    async def _serve(self) -> None:
        hello: dict[str, Any] = {"type": "hello"}
        for key, value in (("client", self.client), ("name", self.name), ("role", self.role), ("token", self.token)):
            if value is not None:
                hello[key] = value
        await self._send(hello)
        welcome = await self._recv()
        if welcome.get("type") == "error":
            raise NavError.from_message(welcome)
        self.client = welcome.get("client", self.client)
        self._heartbeat = float(welcome.get("heartbeat", 30))
        join: dict[str, Any] = {"type": "join", "session": self.session, "id": "join"}
        if self.create and (self.epoch is None or self.recreate):
            join["create"] = True
        if self.flow is not None:
            join["flow"] = self.flow
        if self.state is not None and self.epoch is not None:
            join.update(since=self.rev, epoch=self.epoch)
        await self._send(join)
        while True:
            m = await self._recv()
            if m.get("type") == "joined":
                break
            if m.get("type") == "error" and m.get("id") == "join":
                # A session this client made (`create=True`) that is gone (a server
                # restarted without its data): made again, and reported as a reset below.
                if m.get("code") == "unknown_session" and self.create and "create" not in join:
                    join["create"] = True
                    join.pop("since", None)
                    join.pop("epoch", None)
                    await self._send(join)
                    continue
                raise NavError.from_message(m)
        # Another lineage: made anew. Another generation of the same one (a cluster's new
        # Redis primary, `LINEAGE/GENERATION`) is the same session: what waited is resent.
        made_anew = self.epoch is not None and m["epoch"].split("/")[0] != self.epoch.split("/")[0]
        self.epoch = m["epoch"]
        self.flow_document = m.get("flow", self.flow_document)
        if made_anew:
            # The session was made anew while we were away: commands that waited were
            # made for the one that is gone, so they fail rather than land on this one.
            reset = NavError("reset", f"session '{self.session}' was made anew (another epoch) on {self.url} while "
                             "this client was away; the command was not sent to the new one")
            for _, future in list(self._pending.values()):
                if not future.done():
                    future.set_exception(reset)
            self._pending.clear()
        self.presence = {x["client"]: x for x in m.get("members", [])}
        if "state" in m:
            self._set_state(m["state"], m["rev"])
            if made_anew:
                for q in self._listeners:
                    q.put_nowait(Change(rev=m["rev"], by="", ops=[], state=m["state"], reset=True))
        else:
            for p in m.get("patches", []):
                self._apply(p)
        if self._joined is not None and not self._joined.done():
            self._joined.set_result(None)
        # Every command not answered yet, again, under the same id.
        for message, _ in list(self._pending.values()):
            await self._send(message)
        while True:
            self._dispatch(await self._recv())
            await self._flush()

    # ---- what the server sends ----

    async def _flush(self) -> None:
        while self._outbox:
            await self._send(self._outbox.pop(0))

    def _later(self, message: dict[str, Any]) -> None:
        """A request the mirror needs (`sync`, `get`), sent after the message at hand."""
        self._outbox.append(message)

    def _dispatch(self, m: dict[str, Any]) -> None:
        kind = m.get("type")
        if kind == "patch" and m.get("session") == self.session:
            self._apply(m)
        elif kind == "ack":
            entry = self._pending.pop(m.get("id"), None)
            if entry and not entry[1].done():
                entry[1].set_result(Ack.from_message(m))
        elif kind == "error":
            if m.get("code") in ("unconfirmed", "unavailable") and m.get("id") in self._pending:
                # Cluster mode: with --redis-wait Redis has it and too few replicas
                # confirmed it yet (`unconfirmed`), or the node cannot reach Redis, a
                # failover under way (`unavailable`: nothing applied). The same id again
                # is safe, and is answered once the store is back.
                # A backend hook that failed says when to try again (`retryAfter`, seconds).
                tries = self._unconfirmed[m["id"]] = self._unconfirmed.get(m["id"], 0) + 1
                if tries <= 30:
                    after = m.get("retryAfter")
                    delay = float(after) if isinstance(after, (int, float)) and 0 <= after <= 60 else 1.0
                    asyncio.get_running_loop().create_task(self._resend(m["id"], after=delay))
                    return
            self._unconfirmed.pop(m.get("id"), None)
            entry = self._pending.pop(m.get("id"), None)
            if entry and not entry[1].done():
                entry[1].set_exception(NavError.from_message(m))
            elif m.get("id") in self._requests:
                waiting = self._requests.pop(m["id"])
                if not waiting.done():
                    waiting.set_exception(NavError.from_message(m))
        elif kind == "snapshot" and m.get("session") == self.session and not m.get("historic"):
            self._set_state(m["state"], m["rev"])
            if m.get("id") in self._requests:
                self._answer(m)
        elif kind in ("history", "snapshot", "synced", "sessions", "pong", "auth") and m.get("id") in self._requests:
            self._answer(m)
        elif kind == "presence" and m.get("session") == self.session:
            for x in m.get("joined", []):
                self.presence[x["client"]] = x
            for c in m.get("left", []):
                self.presence.pop(c, None)
            for s in m.get("status", []):
                if s.get("client") in self.presence:
                    self.presence[s["client"]].update({k: v for k, v in s.items() if k != "client"})
        elif kind == "deleted" and m.get("session") == self.session:
            self._fatal = NavError("deleted", f"session '{self.session}' was deleted by {m.get('by', '?')}")
            self._fail_all(self._fatal)

    def _apply(self, m: dict[str, Any]) -> None:
        if self.state is None or m["rev"] <= self.rev:
            return
        if m.get("base", m["rev"] - 1) != self.rev:
            return self._later({"type": "sync", "session": self.session, "since": self.rev, "epoch": self.epoch})
        try:
            state = jsonpatch.apply_patch(self.state, m["ops"])
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
            return self._later({"type": "get", "session": self.session})
        self.state, self.rev = state, m["rev"]
        self._changed(Change(rev=m["rev"], by=m.get("by", ""), ops=m["ops"], state=state))

    def _set_state(self, state: dict[str, Any], rev: int) -> None:
        self.state, self.rev = state, rev
        self._changed(None)

    def _changed(self, change: Change | None) -> None:
        assert self.state is not None
        for predicate, future in list(self._waiters):
            if future.done():
                self._waiters.remove((predicate, future))
                continue
            try:
                if predicate(self.state):
                    future.set_result(self.state)
                    self._waiters.remove((predicate, future))
            except Exception as e:  # a predicate that fails fails its wait
                future.set_exception(e)
                self._waiters.remove((predicate, future))
        if change is not None:
            for q in self._listeners:
                q.put_nowait(change)

    def _fail_all(self, error: NavError) -> None:
        for _, answer in self._pending.values():
            if not answer.done():
                answer.set_exception(error)
        self._pending.clear()
        for _, waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(error)
        self._waiters.clear()
        for q in self._listeners:
            q.put_nowait(None)

    # ---- commands ----

    async def command(self, ops: list[dict[str, Any]], *, base: int | None = None, on_conflict: str | None = None,
                      label: str | None = None, id: Any = None, timeout: float | None = None) -> Ack:
        """Sends one command (its ops applied atomically) and returns its `Ack`, or
        raises `NavError` with the server's code. Kept and sent again after a
        reconnect until answered; the same `id` is never applied twice. With no answer
        within `timeout` seconds (the session's `timeout` by default) it raises
        `NavError` `timeout`, naming the server."""
        sent = self.submit(ops, base=base, on_conflict=on_conflict, label=label, id=id)
        return await sent.result(self.timeout if timeout is None else timeout)

    def submit(self, ops: list[dict[str, Any]], *, base: int | None = None, on_conflict: str | None = None,
               label: str | None = None, id: Any = None) -> "Sent":
        """Sends one command without waiting for its answer: the `Sent` it returns is
        awaited for the `Ack`, and names the entries the command makes before the
        server has answered (`sent.ref(0)`: `"~ID.0"`, resolved by the server), so a
        next command can act on them at once:

            opened = s.submit([{"op": "push", "route": "detail", "params": {"id": 1}}])
            await s.pop(from_=opened.ref())   # back from that very screen
            await opened
        """
        if self._fatal is not None:
            raise self._fatal
        if self._closed:
            raise NavError("closed", "the navsync session was closed")
        if self._task is None:
            raise NavError("not_connected", "this Session is not connected: use it as `async with navsync.connect(...) as s:` "
                           "(or `await s.start()`) before sending")
        cid = id if id is not None else self._prefix + str(next(self._ids))
        message: dict[str, Any] = {"type": "command", "session": self.session, "id": cid, "ops": list(ops)}
        if base is not None:
            message["base"] = base
        if on_conflict is not None:
            message["onConflict"] = on_conflict
        if label is not None:
            message["label"] = label
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Ack] = loop.create_future()
        self._pending[cid] = (message, future)
        self._sends.append(loop.create_task(self._send_quietly(message)))
        return Sent(cid, future, self)

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError, WebSocketException):
            await self._send(message)   # if the link is down, the reconnect sends it
        self._sends = [t for t in self._sends if not t.done()]

    def batch(self, **options: Any) -> Batch:
        """Helpers called on the batch are sent as one atomic command when the block ends."""
        return Batch(self, **options)

    def _one(self, op: dict[str, Any], options: CommandOptions) -> Coroutine[Any, Any, Ack]:
        return self.command([op], id=options.id, label=options.label, base=options.base,
                            on_conflict=options.on_conflict, timeout=options.timeout)

    # ---- reading and waiting ----

    async def wait_for(self, predicate: Callable[[dict[str, Any]], Any], timeout: float = 5.0) -> dict[str, Any]:
        """Returns the state once `predicate(state)` is true, checked now and on every
        change (never by polling); raises `navsync.Timeout` (a `TimeoutError` too) showing the last state."""
        if self.state is not None and predicate(self.state):
            return self.state
        if self._fatal is not None:
            raise self._fatal
        if self._closed:
            raise NavError("closed", "the navsync session was closed")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise NavError("timeout", f"the state of '{self.session}' on {self.url} did not satisfy the condition within "
                                      f"{timeout:g} s; at revision {self.rev}: {json.dumps(self.state)}") from None

    async def changes(self) -> AsyncIterator[Change]:
        """Each applied patch from now on, in revision order (`async for c in s.changes()`);
        a session made anew comes as a `Change` with `reset`. It ends when the session
        closes."""
        if self._closed:
            return
        q: asyncio.Queue[Change | None] = asyncio.Queue()
        self._listeners.append(q)
        try:
            while (change := await q.get()) is not None:
                yield change
        finally:
            self._listeners.remove(q)

    def active_path(self) -> list[dict[str, Any]]:
        """The entries a device shows, root first: each coordinator's current entry,
        selected tab or top of stack."""
        return active_path(self.state)

    async def rendered(self, rev: int | None = None, focus: str | None = None) -> None:
        """Tells the others which revision this device shows (presence `status`); the
        same name in navsync.js, `renderedRevision` in Swift."""
        await self.report(rev, focus)

    def top_entry(self) -> dict[str, Any] | None:
        """The entry on top of the active path that a Back would pop (the deepest stack
        with more than its root), or None."""
        top: dict[str, Any] | None = None
        c = (self.state or {}).get("root")
        while c:
            if c["kind"] == "root":
                v = c.get("current")
            elif c["kind"] == "stack":
                v = c["stack"][-1] if c["stack"] else None
                if len(c["stack"]) > 1:
                    top = v
            else:
                v = next((t for t in c["tabs"] if t["id"] == c.get("selected")), None)
            if not v:
                break
            c = v.get("coordinator")
        return top

    async def back(self, *, timeout: float | None = None) -> Ack:
        """Pops the screen this device shows (`pop` from its entry id): two devices
        pressing Back at once pop one screen, not two."""
        top = self.top_entry()
        return await self.pop(from_=top["id"] if top else None, timeout=timeout)

    async def history(self, *, before: int | None = None, limit: int = 100, timeout: float | None = None) -> dict[str, Any]:
        """A page of history, newest first: `{"rev", "earliest", "entries": [{rev, ts,
        client, name, cmd, ops, results, label?}]}` (docs/protocol.md, "History")."""
        message: dict[str, Any] = {"type": "history", "session": self.session, "limit": limit}
        if before is not None:
            message["before"] = before
        reply = await self.request(message, timeout)
        return {"rev": reply["rev"], "earliest": reply["earliest"], "entries": reply["entries"]}

    async def state_at(self, rev: int, *, timeout: float | None = None) -> dict[str, Any]:
        """The state of a revision history holds: `{"rev", "state", "historic"}`; never
        touches the mirror. Older than history holds: `navsync.Gone`."""
        reply = await self.request({"type": "get", "session": self.session, "rev": rev}, timeout)
        return {"rev": reply["rev"], "state": reply["state"], "historic": reply.get("historic") is True}

    async def sessions(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """The sessions on the server: `[{"session", "flow", "rev", "members"}]`
        (`client.list()` in navsync.js)."""
        reply = await self.request({"type": "sessions"}, timeout)
        sessions: list[dict[str, Any]] = reply["sessions"]
        return sessions

    async def report(self, rev: int | None = None, focus: str | None = None) -> None:
        """Tells the others which revision this device shows (presence `status`); also
        `rendered`."""
        message: dict[str, Any] = {"type": "status", "session": self.session, "rev": self.rev if rev is None else rev}
        if focus is not None:
            message["focus"] = focus
        await self._send(message)

    async def refresh_token(self, token: str) -> dict[str, Any]:
        """Replaces the connection's token (a JWT about to expire) without reconnecting:
        `{"role", "expires"}` (seconds since the epoch). A refused token raises NavError
        and leaves the old one in force; a refresh never raises the role. Reconnects
        say hello with the new one."""
        reply = await self.request({"type": "auth", "token": token})
        self.token = token
        return {"role": reply["role"], "expires": reply.get("expires")}

    def _answer(self, m: dict[str, Any]) -> None:
        waiting = self._requests.pop(m["id"])
        if not waiting.done():
            waiting.set_result(m)

    async def request(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Any other request (`history`, `get` of a past revision, `sessions`): its reply,
        waiting at most `timeout` seconds (the session's `timeout` by default)."""
        timeout = self.timeout if timeout is None else timeout
        rid = self._prefix + "r" + str(next(self._ids))
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._requests[rid] = future
        try:
            await self._send({**message, "id": rid})
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise NavError("timeout", f"no answer from {self.url} within {timeout:g} s to {message.get('type')!r}") from None
        finally:
            # Given up on (a timeout) or answered: a late answer finds nothing to resolve,
            # and is dropped rather than resolving a cancelled future (which killed the
            # connection's reader).
            self._requests.pop(rid, None)


def active_path(state: dict[str, Any] | None) -> list[dict[str, Any]]:
    path: list[dict[str, Any]] = []
    c = state["root"] if state else None
    while c:
        if c["kind"] == "root":
            e = c["current"]
        elif c["kind"] == "tabs":
            e = next((t for t in c["tabs"] if t["id"] == c.get("selected")), None)
        else:
            e = c["stack"][-1] if c["stack"] else None
        if e is None:
            break
        path.append(e)
        c = e.get("coordinator")
    return path


def connect(urls: str | Iterable[str], session: str, *, create: bool = False, flow: str | None = None,
            token: str | None = None, name: str | None = None, role: str | None = None,
            connector: Connector | None = None, backoff: tuple[float, float] = (0.25, 5.0),
            cafile: str | None = None, timeout: float = 10.0, recreate: bool = False) -> Session:
    """A `Session` of `session` on the first of `urls` that answers (tried in turn, and
    again on every reconnect). Use it as `async with navsync.connect(url, "demo") as s:`.
    Every option is typed, so `mypy --strict` refuses `creat=True` or `timeout="10"`."""
    return Session(urls, session, create=create, flow=flow, token=token, name=name, role=role, connector=connector,
                   backoff=backoff, cafile=cafile, timeout=timeout, recreate=recreate)
