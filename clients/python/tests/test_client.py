"""The client's logic with a fake transport: the mirror, commands and their answers,
resend after a reconnect, waiting, several URLs. No server, no sockets."""
import asyncio
import json
from typing import Any, Callable, Coroutine

import pytest

import navsync

STATE = {"root": {"type": "App", "kind": "stack", "stack": [{"id": "e1", "route": "list", "params": {}}]}, "alert": None}


class FakeSocket:
    """One connection: what the client sent, and what the test makes the server say."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.closed = False

    async def send(self, text: str) -> None:
        self.sent.append(json.loads(text))

    async def recv(self) -> str:
        m = await self.inbox.get()
        if m is None:
            raise OSError("connection lost")
        return json.dumps(m)

    async def close(self) -> None:
        self.closed = True

    def say(self, **m: Any) -> None:
        self.inbox.put_nowait(m)

    def drop(self) -> None:
        self.inbox.put_nowait(None)

    async def next_sent(self, kind: str) -> dict[str, Any]:
        for _ in range(200):
            for m in self.sent:
                if m["type"] == kind and not m.get("_seen"):
                    m["_seen"] = True
                    return m
            await asyncio.sleep(0.005)
        raise AssertionError(f"the client sent no {kind}: {self.sent}")


class FakeServer:
    """Hands out sockets; each one answers hello and join as a server would."""

    def __init__(self, dead: tuple[str, ...] = (), heartbeat: float = 30) -> None:
        self.sockets: list[FakeSocket] = []
        self.urls: list[str] = []
        self.dead, self.heartbeat = set(dead), heartbeat

    async def connect(self, url: str) -> FakeSocket:
        self.urls.append(url)
        if url in self.dead:
            raise OSError("connection refused")
        s = FakeSocket()
        self.sockets.append(s)
        s.say(type="welcome", client="c1", heartbeat=self.heartbeat)
        return s


async def until(condition: Callable[[], Any], what: str = "the condition") -> None:
    """Waits (a second at most) for something the client does on its own task."""
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


def patch(rev: int, ops: list[dict[str, Any]], by: str = "c9", cmd: Any = 1) -> dict[str, Any]:
    return {"type": "patch", "session": "s", "rev": rev, "base": rev - 1, "by": by, "cmd": cmd, "ops": ops}


async def joined(server: FakeServer, url: str = "ws://x/ws", **kw: Any) -> tuple[navsync.Session, FakeSocket]:
    s = navsync.connect(url, "s", connector=server.connect, backoff=(0.001, 0.01), **kw)
    task = asyncio.create_task(s.start())
    await asyncio.sleep(0.01)
    sock = server.sockets[-1]
    join = await sock.next_sent("join")
    sock.say(type="joined", id=join["id"], session="s", epoch="ep1", rev=0, flow={}, members=[], state=STATE)
    await task
    return s, sock


def run(coroutine: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(coroutine, 10))


def test_the_mirror_follows_patches_and_asks_for_the_state_on_a_gap() -> None:
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server)
        assert s.rev == 0 and s.active_path()[-1]["route"] == "list" and s.client == "c1"
        sock.say(**patch(1, [{"op": "add", "path": "/root/stack/1", "value": {"id": "e2", "route": "detail", "params": {"id": 7}}}]))
        state = await s.wait_for(lambda st: len(st["root"]["stack"]) == 2)
        assert s.rev == 1 and [e["route"] for e in s.active_path()] == ["detail"] and state is s.state
        sock.say(**patch(3, [{"op": "remove", "path": "/root/stack/1"}]))   # revision 2 never came
        sync = await sock.next_sent("sync")
        assert sync["since"] == 1 and sync["epoch"] == "ep1" and s.rev == 1
        sock.say(type="snapshot", session="s", rev=3, state=STATE)
        await s.wait_for(lambda st: s.rev == 3)
        assert s.state == STATE
        await s.close()
    run(main())


def test_commands_resolve_with_their_ack_or_raise_the_servers_error() -> None:
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server)
        pushed = asyncio.create_task(s.push("detail", id=7))
        sent = await sock.next_sent("command")
        assert sent["ops"] == [{"op": "push", "route": "detail", "params": {"id": 7}}] and sent["session"] == "s"
        sock.say(type="ack", id=sent["id"], session="s", rev=1, results=["redirected"],
                 redirects=[{"op": 0, "guard": "signedIn", "link": "/login"}])
        ack = await pushed
        assert ack.rev == 1 and ack.results == ["redirected"] and ack.redirects[0]["guard"] == "signedIn"
        refused = asyncio.create_task(s.open("/checkout"))
        sent = await sock.next_sent("command")
        sock.say(type="error", id=sent["id"], code="guarded", message="no cart", op=0, guard="cartFull", route="checkout", entry="e4")
        with pytest.raises(navsync.NavError) as e:
            await refused
        assert e.value.code == "guarded" and e.value.op == 0 and e.value.guard == "cartFull" and e.value.extra["route"] == "checkout"
        # A batch is one command of several ops.
        async def batch() -> navsync.Ack | None:
            async with s.batch(label="two") as b:
                b.set_root("main")
                b.select("cart")
            return b.ack
        done = asyncio.create_task(batch())
        sent = await sock.next_sent("command")
        assert [o["op"] for o in sent["ops"]] == ["setRoot", "select"] and sent["label"] == "two"
        sock.say(type="ack", id=sent["id"], session="s", rev=2, results=["applied", "applied"])
        batch_ack = await done
        assert batch_ack is not None and batch_ack.results == ["applied", "applied"]
        await s.close()
    run(main())


def test_an_unanswered_command_is_sent_again_after_a_reconnect_under_the_same_id() -> None:
    async def main() -> None:
        server = FakeServer()
        s, first = await joined(server)
        pending = asyncio.create_task(s.update({"n": 1}, scope="session"))
        sent = await first.next_sent("command")
        first.say(**patch(1, [{"op": "add", "path": "/data", "value": {"n": 1}}], by="c1", cmd=sent["id"]))
        await s.wait_for(lambda st: s.rev == 1)
        first.drop()   # the ack never arrives
        await until(lambda: len(server.sockets) == 2, "a second connection")
        second = server.sockets[1]
        hello = await second.next_sent("hello")
        join = await second.next_sent("join")
        assert hello["client"] == "c1", "the identity is resumed, so the resend is recognised"
        assert join["since"] == 1 and join["epoch"] == "ep1"
        second.say(type="joined", id=join["id"], session="s", epoch="ep1", rev=1, flow={}, members=[], patches=[])
        again = await second.next_sent("command")
        assert again["id"] == sent["id"] and again["ops"] == sent["ops"]
        second.say(type="ack", id=again["id"], session="s", rev=1, results=["applied"], duplicate=True)
        ack = await pending
        assert ack.duplicate and ack.rev == 1 and s.state is not None and s.state["data"] == {"n": 1}
        await s.close()
    run(main())


def test_silence_is_pinged_and_an_unanswered_ping_reconnects() -> None:
    async def main() -> None:
        server = FakeServer(heartbeat=0.05)      # a heartbeat of 50 ms
        s = navsync.connect("ws://x/ws", "s", connector=server.connect, backoff=(0.001, 0.01))
        task = asyncio.create_task(s.start())
        await asyncio.sleep(0.01)
        first = server.sockets[0]
        join = await first.next_sent("join")
        first.say(type="joined", id=join["id"], session="s", epoch="e", rev=0, flow={}, members=[], state=STATE)
        await task
        await first.next_sent("ping")             # silence: a ping
        first.say(type="pong")                    # answered: the connection stays
        await first.next_sent("ping")             # silence again, and no answer this time
        await until(lambda: len(server.sockets) == 2, "a reconnect")
        assert first.closed, "an unanswered ping gives the connection up"
        await s.close()
    run(main())


def test_several_urls_are_tried_in_turn() -> None:
    async def main() -> None:
        server = FakeServer(dead=("ws://dead:1/ws",))
        s = navsync.connect(["dead:1", "http://alive:2/"], "s", connector=server.connect, backoff=(0.001, 0.01))
        task = asyncio.create_task(s.start())
        await until(lambda: server.sockets, "a connection")
        join = await server.sockets[0].next_sent("join")
        server.sockets[0].say(type="joined", id=join["id"], session="s", epoch="e", rev=0, flow={}, members=[], state=STATE)
        await task
        assert server.urls[:2] == ["ws://dead:1/ws", "ws://alive:2/ws"]
        await s.close()
    run(main())


def test_waiting_times_out_showing_the_state_and_a_refused_join_raises() -> None:
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server)
        with pytest.raises(TimeoutError) as e:
            await s.wait_for(lambda st: False, timeout=0.05)
        assert '"route": "list"' in str(e.value)
        await s.close()
        with pytest.raises(navsync.NavError) as refused:
            await s.push("detail", id=1)
        assert refused.value.code == "closed"

        other = navsync.connect("ws://x/ws", "nope", connector=server.connect)
        task = asyncio.create_task(other.start())
        await asyncio.sleep(0.01)
        join = await server.sockets[-1].next_sent("join")
        server.sockets[-1].say(type="error", id=join["id"], code="unknown_session", message="no session 'nope'")
        with pytest.raises(navsync.NavError) as e2:
            await task
        assert e2.value.code == "unknown_session"
    run(main())


def test_the_helpers_write_the_protocols_operations() -> None:
    b = navsync.Batch(None)  # type: ignore[arg-type]  # the helpers only build operations here
    b.push("detail", id=1, at="Home")
    b.present("settings", style="cover")
    b.pop(2)
    b.pop(from_="e4")
    b.pop_to_root()
    b.set_stack(["list", {"route": "detail", "params": {"id": 2}}])
    b.dismiss(all=True)
    b.select(index=1)
    b.alert("Sure?", buttons=[{"id": "yes", "label": "Yes"}])
    b.respond("e9", "yes")
    b.update({"q": "x"}, entry="e3")
    b.restore(label="start")
    b.reset()
    assert b.ops == [
        {"op": "push", "route": "detail", "params": {"id": 1}, "at": "Home"},
        {"op": "present", "style": "cover", "route": "settings"},
        {"op": "pop", "count": 2}, {"op": "pop", "from": "e4"}, {"op": "popToRoot"},
        {"op": "setStack", "routes": ["list", {"route": "detail", "params": {"id": 2}}]},
        {"op": "dismiss", "all": True}, {"op": "select", "index": 1},
        {"op": "alert", "title": "Sure?", "buttons": [{"id": "yes", "label": "Yes"}]},
        {"op": "respond", "alert": "e9", "button": "yes"},
        {"op": "update", "data": {"q": "x"}, "entry": "e3"},
        {"op": "restore", "label": "start"}, {"op": "reset"},
    ]
    assert navsync.active_path(None) == []


def test_an_unconfirmed_command_is_sent_again_under_its_id_until_the_replicas_confirm_it() -> None:
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server)
        pending = asyncio.create_task(s.set_root("main"))
        sent = await sock.next_sent("command")
        # Cluster mode with --redis-wait: Redis has it, no replica confirmed it in time.
        sock.say(type="error", id=sent["id"], code="unconfirmed", message="0 of 1 replicas confirmed it within 1000 ms")
        await asyncio.sleep(0.2)
        assert not pending.done(), "unconfirmed is not the command's answer"
        again = await asyncio.wait_for(sock.next_sent("command"), 3)
        assert again["id"] == sent["id"] and again["ops"] == sent["ops"]
        sock.say(type="ack", id=again["id"], session="s", rev=1, results=["applied"], duplicate=True)
        ack = await pending
        assert ack.rev == 1 and ack.duplicate
        await s.close()
    run(main())


def test_a_store_unavailable_command_is_sent_again_under_its_id() -> None:
    """Cluster mode during a failover: the node cannot reach Redis (`unavailable`,
    nothing applied); the same id goes again a second later instead of raising."""
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server)
        pending = asyncio.create_task(s.set_root("main"))
        sent = await sock.next_sent("command")
        sock.say(type="error", id=sent["id"], code="unavailable",
                 message="store unavailable: Redis at 127.0.0.1:6379 is not answering; nothing was applied, try again")
        await asyncio.sleep(0.2)
        assert not pending.done(), "unavailable is not the command's answer"
        again = await asyncio.wait_for(sock.next_sent("command"), 3)
        assert again["id"] == sent["id"] and again["ops"] == sent["ops"]
        sock.say(type="ack", id=again["id"], session="s", rev=1, results=["applied"])
        ack = await pending
        assert ack.rev == 1
        await s.close()
    run(main())


def test_a_session_not_connected_fails_at_once() -> None:
    async def main() -> None:
        s = navsync.connect("ws://x/ws", "s")
        with pytest.raises(navsync.NavError) as e:
            await s.push("detail", id=1)
        assert e.value.code == "not_connected" and "async with" in e.value.message
    run(main())


def test_a_command_nobody_answers_fails_within_its_deadline_naming_the_server() -> None:
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server, timeout=0.2)
        with pytest.raises(navsync.NavError) as e:
            await s.set_root("main")      # the server says nothing
        assert e.value.code == "timeout" and "ws://x/ws" in e.value.message
        with pytest.raises(navsync.NavError) as e:
            await s.command([{"op": "pop"}], timeout=0.05)   # a deadline of its own
        assert e.value.code == "timeout"
        await s.close()
    run(main())


def test_wait_for_and_changes_end_at_once_on_close() -> None:
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server)
        waiting = asyncio.create_task(s.wait_for(lambda st: False, timeout=30))
        await asyncio.sleep(0.01)
        await s.close()
        with pytest.raises(navsync.NavError) as e:
            await asyncio.wait_for(waiting, 1)
        assert e.value.code == "closed"
        with pytest.raises(navsync.NavError):
            await asyncio.wait_for(s.wait_for(lambda st: False, timeout=30), 1)
        got = [c async for c in s.changes()]
        assert got == []
    run(main())


async def lost_with_a_command_waiting(server: FakeServer, s: navsync.Session, sock: FakeSocket) -> tuple[
        "asyncio.Task[navsync.Change]", "asyncio.Task[navsync.Ack]", FakeSocket, dict[str, Any]]:
    """A command sent, then the connection dropped before its answer: the next change
    awaited, the command's task, the new socket and the rejoin it sent."""
    changes = s.changes()

    async def first_change() -> navsync.Change:
        return await changes.__anext__()
    next_change = asyncio.create_task(first_change())
    pending = asyncio.create_task(s.set_root("main"))
    await sock.next_sent("command")
    sock.drop()
    await until(lambda: len(server.sockets) == 2, "a reconnect")
    again = server.sockets[-1]
    return next_change, pending, again, await again.next_sent("join")


def test_a_session_made_anew_is_reported_and_not_made_again() -> None:
    """A reconnect finds another epoch: the commands that waited fail with `reset`,
    changes() yields a reset item, and the rejoin did not send `create`."""
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server, create=True)
        first_join = next(m for m in sock.sent if m["type"] == "join")
        assert first_join.get("create") is True
        next_change, pending, again, join = await lost_with_a_command_waiting(server, s, sock)
        assert "create" not in join, join
        again.say(type="joined", session="s", epoch="ep-new", rev=0, flow={}, members=[], state=STATE)
        with pytest.raises(navsync.NavError) as e:
            await asyncio.wait_for(pending, 2)
        assert e.value.code == "reset"
        change = await asyncio.wait_for(next_change, 2)
        assert change.reset and change.rev == 0 and change.ops == []
        await s.close()
    run(main())


def test_a_session_it_made_that_is_gone_is_made_again_and_reported_as_a_reset() -> None:
    """A session this client made (`create=True`) is gone after a server restarted
    without its data: the rejoin is refused `unknown_session`, so it joins again with
    `create`; the commands that waited fail with `reset` (not replayed), changes() yields
    a reset, and the session carries on. Regression: the command failed with
    UnknownSession, no reset was reported, and the session stayed dead."""
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server, create=True)
        next_change, pending, again, join = await lost_with_a_command_waiting(server, s, sock)
        assert "create" not in join and "since" in join, join
        again.say(type="error", id="join", code="unknown_session", message="no session 's'")
        recreate = await again.next_sent("join")
        assert recreate.get("create") is True and "since" not in recreate and "epoch" not in recreate, recreate
        again.say(type="joined", session="s", epoch="ep-new", rev=0, flow={}, members=[], state=STATE)
        with pytest.raises(navsync.NavError) as e:
            await asyncio.wait_for(pending, 2)
        assert e.value.code == "reset"
        change = await asyncio.wait_for(next_change, 2)
        assert change.reset and change.rev == 0
        assert not [m for m in again.sent if m["type"] == "command"], "nothing replayed onto the new session"
        later = asyncio.create_task(s.push("detail", id=1))
        cmd = await again.next_sent("command")
        again.say(type="ack", session="s", id=cmd["id"], rev=1, results=["applied"])
        assert (await asyncio.wait_for(later, 2)).rev == 1
        await s.close()
    run(main())


def test_reconnect_now_ends_the_backoff_wait() -> None:
    """`reconnect_now()` (the network is back): the client does not wait out a long
    backoff; it connects again at once, as `reconnectNow()` does in Swift and navsync.js."""
    async def main() -> None:
        server = FakeServer()
        s = navsync.connect("ws://x/ws", "s", connector=server.connect, backoff=(30.0, 60.0))
        task = asyncio.create_task(s.start())
        await asyncio.sleep(0.01)
        join = await server.sockets[-1].next_sent("join")
        server.sockets[-1].say(type="joined", id=join["id"], session="s", epoch="ep1", rev=0, flow={}, members=[], state=STATE)
        await task
        server.sockets[-1].drop()
        await asyncio.sleep(0.05)
        assert len(server.sockets) == 1, "waiting out the backoff (15-30 s)"
        s.reconnect_now()
        await until(lambda: len(server.sockets) == 2, "a reconnect at once")
        await s.close()
    run(main())


def test_a_new_generation_of_the_same_session_resends_what_waited() -> None:
    """A reconnect finds another generation of the same lineage (a cluster's Redis
    changed primary, `ep1/g2`): the same session, so the command that waited is sent
    again under its id and acknowledged, with no reset."""
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server)
        pending = asyncio.create_task(s.set_root("main"))
        sent = await sock.next_sent("command")
        sock.drop()
        await until(lambda: len(server.sockets) == 2, "a reconnect")
        again = server.sockets[-1]
        join = await again.next_sent("join")
        assert join["epoch"] == "ep1", join
        again.say(type="joined", id=join["id"], session="s", epoch="ep1/g2", rev=0, flow={}, members=[], state=STATE)
        resent = await again.next_sent("command")
        assert resent["id"] == sent["id"] and resent["ops"] == sent["ops"]
        again.say(type="ack", id=sent["id"], session="s", rev=1, results=["applied"])
        ack = await asyncio.wait_for(pending, 2)
        assert ack.rev == 1 and s.epoch == "ep1/g2"
        await s.close()
    run(main())


def test_errors_are_classes_per_code_carrying_the_servers_fields() -> None:
    e = navsync.NavError.from_message({"type": "error", "code": "guarded", "message": "no", "op": 0,
                                        "guard": "signedIn", "route": "order", "entry": "e7"})
    assert isinstance(e, navsync.Guarded) and isinstance(e, navsync.NavError)
    assert (e.code, e.guard, e.route, e.entry, e.op) == ("guarded", "signedIn", "order", "e7", 0)
    loop = navsync.NavError.from_message({"type": "error", "code": "redirect_loop", "message": "round",
                                           "chain": [{"guard": "a", "route": "x", "link": "/b"}]})
    assert isinstance(loop, navsync.RedirectLoop) and loop.chain == [{"guard": "a", "route": "x", "link": "/b"}]
    assert isinstance(navsync.NavError("conflict", "x", rev=3), navsync.Conflict)
    assert type(navsync.NavError("something_new", "x")) is navsync.NavError
    import pickle
    again = pickle.loads(pickle.dumps(e))
    assert isinstance(again, navsync.Guarded) and again.guard == "signedIn"


def test_a_request_that_timed_out_leaves_the_session_working() -> None:
    # The late answer to a request given up on is dropped; it used to resolve a
    # cancelled future, which killed the connection's reader and every later call.
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server)
        try:
            await s.request({"type": "sessions"}, timeout=0.05)
            raise AssertionError("expected a timeout")
        except asyncio.TimeoutError:
            pass
        late = next(m for m in sock.sent if m["type"] == "sessions")
        sock.say(type="sessions", id=late["id"], sessions=[])
        sock.say(type="error", id=late["id"], code="internal", message="late too")
        again = asyncio.create_task(s.request({"type": "sessions"}, timeout=2))
        await until(lambda: sum(1 for m in sock.sent if m["type"] == "sessions") == 2, "the second request")
        second = [m for m in sock.sent if m["type"] == "sessions"][-1]
        sock.say(type="sessions", id=second["id"], sessions=[{"session": "s", "flow": "shop", "rev": 0, "members": 1}])
        assert (await again)["sessions"][0]["session"] == "s"
        assert not sock.closed
        await s.close()
    run(main())


def test_every_deadline_is_one_class_naming_the_server_and_what_was_awaited() -> None:
    async def main() -> None:
        server = FakeServer()
        s, sock = await joined(server, url="ws://deadline.test/ws")
        for call in (s.request({"type": "sessions"}, timeout=0.02), s.wait_for(lambda st: False, timeout=0.02)):
            try:
                await call
                raise AssertionError("expected a deadline")
            except navsync.Timeout as e:
                assert isinstance(e, TimeoutError) and isinstance(e, navsync.NavError) and e.code == "timeout"
                assert "ws://deadline.test/ws" in e.message, e.message
        await s.close()
    run(main())
