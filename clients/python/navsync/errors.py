"""What navsync refuses, and what an ack says."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class NavError(Exception):
    """The server refused a request (docs/protocol.md, "Error codes"), or the client
    could not carry it: `code` is the server's (`bad_params`, `conflict`, `guarded`…)
    or the client's own (`closed`, `deleted`, `timeout`). `op` is the index of the
    operation at fault, `rev` the current revision (for `conflict`); `extra` holds any
    other field of the error (`guard`, `route` and `entry` for `guarded`)."""

    def __init__(self, code: str, message: str, *, op: int | None = None, rev: int | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.op = op
        self.rev = rev
        self.extra: dict[str, Any] = extra or {}

    @classmethod
    def from_message(cls, m: dict[str, Any]) -> "NavError":
        known = {"type", "id", "code", "message", "op", "rev"}
        return cls(m.get("code", "internal"), m.get("message", ""), op=m.get("op"), rev=m.get("rev"),
                   extra={k: v for k, v in m.items() if k not in known})

    def __getattr__(self, name: str) -> Any:
        # `e.guard`, `e.route`, `e.entry` for a `guarded` error.
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError(name)


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
