"""navsync for Python: mirror one shared navigation session, drive it, and wait on it.

    import navsync

    async with navsync.connect("ws://127.0.0.1:7420/ws", "demo") as s:
        await s.open("/product/42")
        await s.wait_for(lambda state: navsync.active_path(state)[-1]["route"] == "detail")

`navsync.sync` is the same without `async`; the pytest plugin (`navsync.pytest_plugin`)
starts navsyncd for tests. The guide is docs/python.md in the navsync repository.
"""
from . import sync
from .client import Batch, Sent, Session, active_path, connect
from .errors import (Ack, BadParams, BadRequest, Change, Closed, Conflict, Forbidden, Gone, Guarded, InvalidOp, NavError,
                     NotConnected, NotFound, Offline, RateLimited, RedirectLoop, Refused, Reset, Timeout, Unavailable,
                     UnknownRoute, UnknownSession)
from . import webhooks

__all__ = ["connect", "Session", "Batch", "Sent", "Ack", "Change", "NavError", "active_path", "sync",
           "Guarded", "RedirectLoop", "Conflict", "BadRequest", "BadParams", "UnknownRoute", "InvalidOp", "NotFound",
           "UnknownSession", "Forbidden", "RateLimited", "Unavailable", "Gone", "Timeout", "Closed", "NotConnected",
           "Offline", "Reset", "Refused", "webhooks"]
__version__ = "0.1.0"
