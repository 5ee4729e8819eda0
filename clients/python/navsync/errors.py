"""What navsync refuses, and what an ack says."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class NavError(Exception):
    """The server refused a request (docs/protocol.md, "Error codes"), or the client
    could not carry it: `code` is the server's (`bad_params`, `conflict`, `guarded`…)
    or the client's own (`closed`, `deleted`, `timeout`, `not_connected`, `reset`,
    `offline`). `op` is the index of the operation at fault, `rev` the current revision
    (for `conflict`); `extra` holds any other field of the error.

    `NavError(code, message)` makes the class for that code (`Guarded`, `Conflict`,
    `Timeout`…, all subclasses of `NavError`), so `except navsync.Guarded as e:` catches
    one kind and `except navsync.NavError` every kind."""

    #: The error code a subclass stands for.
    code_name: str = ""

    def __new__(cls, code: str = "", message: str = "", **kwargs: Any) -> "NavError":
        if cls is NavError:
            cls = _BY_CODE.get(code, NavError)
        return super().__new__(cls)

    def __init__(self, code: str, message: str, *, op: int | None = None, rev: int | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        # (OSError, a base of `Timeout`, takes its args in __new__, not here.)
        self.args = (f"{code}: {message}",)
        self.code = code
        self.message = message
        self.op = op
        self.rev = rev
        self.extra: dict[str, Any] = extra or {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.code, self.message, self.op, self.rev, self.extra))

    @classmethod
    def from_message(cls, m: dict[str, Any]) -> "NavError":
        known = {"type", "id", "code", "message", "op", "rev"}
        return NavError(m.get("code", "internal"), m.get("message", ""), op=m.get("op"), rev=m.get("rev"),
                        extra={k: v for k, v in m.items() if k not in known})

    def __getattr__(self, name: str) -> Any:
        # Any other field the server sent (`e.guard` of a `guarded` error…).
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError(name)


def _rebuild(code: str, message: str, op: int | None, rev: int | None, extra: dict[str, Any]) -> NavError:
    return NavError(code, message, op=op, rev=rev, extra=extra)


class Guarded(NavError):
    """`guarded`: a guard of the flow refused the command (docs/flows.md)."""
    code_name = "guarded"

    @property
    def guard(self) -> str:
        """The guard that refused."""
        return str(self.extra.get("guard", ""))

    @property
    def route(self) -> str:
        """The route it protects."""
        return str(self.extra.get("route", ""))

    @property
    def entry(self) -> str:
        """The guarded entry's id."""
        return str(self.extra.get("entry", ""))


class RedirectLoop(Guarded):
    """`redirect_loop`: redirects went round in a circle, or past the limit. `chain`:
    each redirect taken, {guard, route, link}, the one that failed again last."""
    code_name = "redirect_loop"

    @property
    def chain(self) -> list[dict[str, str]]:
        return list(self.extra.get("chain", []))


class Conflict(NavError):
    """`conflict`: with onConflict reject, something the command touches changed after
    its base (`rev` is the current revision)."""
    code_name = "conflict"


class BadRequest(NavError):
    """`bad_request` / `bad_json`: the message itself is wrong."""
    code_name = "bad_request"


class BadParams(NavError):
    """`bad_params`: a field or param is missing or of the wrong type."""
    code_name = "bad_params"


class UnknownRoute(NavError):
    """`unknown_route`: no coordinator on the active path declares the route."""
    code_name = "unknown_route"


class InvalidOp(NavError):
    """`invalid_op`: the op does not fit where it goes."""
    code_name = "invalid_op"


class NotFound(NavError):
    """`not_found`: an entry, a reference ("~CMD.N"), a link or a revision that is not there."""
    code_name = "not_found"


class UnknownSession(NavError):
    """`unknown_session`: no such session (and `create` was not asked for)."""
    code_name = "unknown_session"


class Forbidden(NavError):
    """`forbidden`: the token's role or sessions do not allow it."""
    code_name = "forbidden"


class RateLimited(NavError):
    """`rate_limited`: too many commands too fast on one connection."""
    code_name = "rate_limited"


class Unavailable(NavError):
    """`unavailable` / `unconfirmed`: a cluster node could not confirm it in time (the
    client has already resent it as often as it may)."""
    code_name = "unavailable"


class Refused(NavError):
    """`refused`: the app's backend refused the command through its command hook
    (docs/backend.md): `message` is its reason, `details` what else it said."""
    code_name = "refused"

    @property
    def details(self) -> dict[str, Any]:
        """The backend's `details` object ({} when it gave none)."""
        return dict(self.extra.get("details") or {})


class Gone(NavError):
    """`gone`: a revision older than history holds."""
    code_name = "gone"


class Timeout(NavError, TimeoutError):
    """`timeout`: no answer within the call's deadline, for a command, a request or
    `wait_for` alike; the message names the server and what was awaited. Also a
    `TimeoutError`, so `except TimeoutError` catches it as well."""
    code_name = "timeout"


class Closed(NavError):
    """`closed` / `deleted`: the session was closed, or deleted on the server."""
    code_name = "closed"


class NotConnected(NavError):
    """`not_connected`: a `Session` used before `async with` / `start()`."""
    code_name = "not_connected"


class Offline(NavError):
    """`offline`: no server answered."""
    code_name = "offline"


class Reset(NavError):
    """`reset`: the session was made anew while this client was away; the command was
    not sent to the new one."""
    code_name = "reset"


_BY_CODE: dict[str, type[NavError]] = {c.code_name: c for c in (
    Guarded, RedirectLoop, Conflict, BadRequest, BadParams, UnknownRoute, InvalidOp, NotFound, UnknownSession,
    Forbidden, RateLimited, Unavailable, Refused, Gone, Timeout, Closed, NotConnected, Offline, Reset)}
_BY_CODE.update({"bad_json": BadRequest, "unconfirmed": Unavailable, "deleted": Closed})


@dataclass(frozen=True)
class Ack:
    """A command's acknowledgement: the revision it made (or the current one), one
    result per operation (`applied`, `noop`, `superseded`, `redirected`), whether it was
    a resend of a command acknowledged before, where guards redirected it, and the ids
    of the entries (and alerts) its ops made, in order (`created`: what `"~ID.N"`
    names)."""
    id: Any
    rev: int
    results: list[str]
    duplicate: bool = False
    redirects: list[dict[str, Any]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)

    @classmethod
    def from_message(cls, m: dict[str, Any]) -> "Ack":
        return cls(id=m.get("id"), rev=m["rev"], results=list(m.get("results", [])),
                   duplicate=bool(m.get("duplicate", False)), redirects=list(m.get("redirects", [])),
                   created=list(m.get("created", [])))


@dataclass(frozen=True)
class Change:
    """One applied patch: its revision, who sent it, its JSON Patch ops, and the state
    after it. With `reset`, the session was made anew while this client was away
    (another epoch): `state` is the new session's, `ops` is empty, and commands that
    were waiting failed with `reset`."""
    rev: int
    by: str
    ops: list[dict[str, Any]]
    state: dict[str, Any]
    reset: bool = False
