"""Standard Webhooks signatures, as navsyncd signs every hook request and webhook
(docs/backend.md, "Signing"): verify them in the app's backend.

    from navsync import webhooks

    events = webhooks.verify(request_headers, raw_body, secret)   # raises webhooks.InvalidSignature
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any, Mapping

#: How far a request's `webhook-timestamp` may be from now, in seconds.
TOLERANCE = 5 * 60


class InvalidSignature(Exception):
    """The request is not navsyncd's: no or bad signature, or a timestamp too far off."""


def _keys(secret: str | bytes | list[str]) -> list[bytes]:
    if isinstance(secret, bytes):
        return [secret]
    lines = secret if isinstance(secret, list) else secret.splitlines()
    keys = []
    for line in (s.strip() for s in lines):
        if not line:
            continue
        if not line.startswith("whsec_"):
            raise ValueError("a secret is whsec_ + base64 (the hooks file's secretFile)")
        keys.append(base64.b64decode(line[len("whsec_"):]))
    if not keys:
        raise ValueError("no secret given")
    return keys


def sign(msg_id: str, timestamp: int, body: bytes, secret: str | bytes | list[str]) -> str:
    """The `webhook-signature` value navsyncd sends: `v1,` + base64(HMAC-SHA256), one per key."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    return " ".join("v1," + base64.b64encode(hmac.new(k, content, hashlib.sha256).digest()).decode() for k in _keys(secret))


def verify(headers: Mapping[str, str], body: bytes, secret: str | bytes | list[str], *, now: float | None = None) -> Any:
    """Checks a request's `webhook-id`, `webhook-timestamp` and `webhook-signature`
    against `secret` (the secret file's text, or its lines, or a raw key) and returns
    the body parsed. Raises `InvalidSignature` otherwise; never compares in a way that
    leaks the signature's bytes by timing."""
    lower = {k.lower(): v for k, v in headers.items()}
    msg_id, stamp, given = lower.get("webhook-id"), lower.get("webhook-timestamp"), lower.get("webhook-signature")
    if not msg_id or not stamp or not given:
        raise InvalidSignature("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        ts = int(stamp)
    except ValueError:
        raise InvalidSignature("webhook-timestamp is not a number") from None
    if abs((time.time() if now is None else now) - ts) > TOLERANCE:
        raise InvalidSignature("webhook-timestamp is more than 5 minutes off")
    expected = sign(msg_id, ts, body, secret).split(" ")
    offered = [part for part in given.split(" ") if part.startswith("v1,")]
    if not any(hmac.compare_digest(e, o) for e in expected for o in offered):
        raise InvalidSignature("no signature matches")
    return json.loads(body)
