"""Hook-driven flows through the package (docs/backend.md), with the plugin's
programmable backend: a command hook that refuses, one that sets the session's data,
one that fails and is resent, the join hook's user, and signed webhooks."""
import time
from typing import Any

import pytest

import navsync
from navsync import webhooks
from navsync.pytest_plugin import Navsyncd
from navsync.testing import Backend


@pytest.mark.navsyncd_args("--hooks", "{hooks}")
@pytest.mark.navsync_hooks(join=True, commands={"*": ["open"]})
def test_a_hook_driven_checkout(navsyncd: Navsyncd, navsync_backend: Backend) -> None:
    def decide(hook: dict[str, Any]) -> dict[str, Any]:
        url = hook["command"]["ops"][0].get("url", "")
        if url == "/checkout" and hook.get("user") != "ann":
            return {"allow": False, "message": "sign in first", "details": {"signIn": "/login"}}
        return {"allow": True, "set": {"lastOpen": url}}
    navsync_backend.on_command = decide
    navsync_backend.on_join = lambda hook: {"allow": True, "user": "ann" if hook["name"] == "ann" else None}
    with navsync.sync.connect(navsyncd.url, "demo", name="guest") as guest, navsync.sync.connect(navsyncd.url, "demo", name="ann") as ann:
        with pytest.raises(navsync.Refused) as refused:
            guest.open("/checkout")
        assert refused.value.message == "sign in first" and refused.value.details == {"signIn": "/login"}
        ack = ann.open("/product/42")
        assert ack.results == ["applied"]
        guest.wait_for(lambda st: st.get("data", {}).get("lastOpen") == "/product/42")
        assert ann.rev == guest.rev == 1
    joins = [h for h in navsync_backend.hooks if h["type"] == "join"]
    assert sorted(h["name"] for h in joins) == ["ann", "guest"]
    event = navsync_backend.wait_for_event(lambda e: e["type"] == "revision" and e["rev"] == 1)
    assert event["user"] == "ann" and event["command"]["ops"][0]["by"] == "hook"
    assert navsync_backend.bad_signatures == 0


@pytest.mark.navsyncd_args("--hooks", "{hooks}")
@pytest.mark.navsync_hooks(commands={"*": ["*"]}, timeoutMs=300)
def test_a_failing_hook_is_resent_after_retry_after_and_lands_once(navsyncd: Navsyncd, navsync_backend: Backend) -> None:
    calls: list[Any] = []

    def flaky(hook: dict[str, Any]) -> dict[str, Any]:
        calls.append(hook["command"]["id"])
        if len(calls) == 1:
            time.sleep(1.0)          # past timeoutMs: unavailable, retryAfter 1
        return {"allow": True}
    navsync_backend.on_command = flaky
    with navsync.sync.connect(navsyncd.url, "demo") as s:
        ack = s.open("/product/7")
        assert ack.rev == 1 and not ack.duplicate
    assert len(calls) == 2 and calls[0] == calls[1]


def test_verify_takes_navsyncds_signature_and_refuses_others() -> None:
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    headers = {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
               "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}
    assert webhooks.verify(headers, body, secret, now=1614265330) == {"test": 2432232314}
    with pytest.raises(webhooks.InvalidSignature):
        webhooks.verify(headers, body + b" ", secret, now=1614265330)
    with pytest.raises(webhooks.InvalidSignature):
        webhooks.verify(headers, body, secret, now=1614265330 + 301)
    with pytest.raises(webhooks.InvalidSignature):
        webhooks.verify({**headers, "webhook-signature": "v1,AAAA"}, body, secret, now=1614265330)
    rotated = [secret, "whsec_" + "QUFB" * 8]
    assert webhooks.verify({**headers, "webhook-signature": webhooks.sign(headers["webhook-id"], 1614265330, body, rotated)},
                           body, secret, now=1614265330) == {"test": 2432232314}
