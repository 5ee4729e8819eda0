"""The package against a real navsyncd, started by the plugin's fixtures."""
import asyncio
import json
import os
import subprocess
import time
import urllib.request
from typing import Any

import pytest

import navsync
from navsync.pytest_plugin import Navsyncd
from navsync.sync import SyncSession


def navclient(server: Navsyncd, *words: str) -> "subprocess.CompletedProcess[str]":
    """navclient from the same build as navsyncd (or $NAVCLIENT)."""
    binary = os.environ.get("NAVCLIENT") or os.path.join(os.path.dirname(server.binary), "navclient")
    return subprocess.run([binary, "exec", server.url, *words], capture_output=True, text=True, timeout=30)


def test_two_sessions_mirror_each_other(navsyncd: Navsyncd) -> None:
    name = "mirror"
    with navsync.sync.connect(navsyncd.url, name, create=True, name="a") as a, \
            navsync.sync.connect(navsyncd.url, name, name="b") as b:
        ack = a.open("/product/42")
        assert ack.results == ["applied"]
        b.wait_for(lambda st: navsync.active_path(st)[-1]["route"] == "detail")
        assert b.state == a.state and b.rev == a.rev == 1
        b.pop()
        a.wait_for(lambda st: navsync.active_path(st)[-1]["route"] == "list")
        assert a.state == b.state and a.rev == b.rev == 2
        # Presence: each sees the other, and what revision it reported showing.
        b.report(focus=navsync.active_path(b.state)[-1]["id"])
        for _ in range(100):   # presence goes out every 50 ms
            if a.presence.get(b.client or "", {}).get("rev") == 2:
                break
            time.sleep(0.02)
        assert b.client is not None and a.presence[b.client]["rev"] == 2 and a.presence[b.client]["name"] == "b"


def test_wait_for_sees_a_change_made_by_navclient(navsyncd: Navsyncd, navsync_session: SyncSession) -> None:
    s = navsync_session
    done = navclient(navsyncd, "--session", s.session, "setRoot main", "select cart")
    assert done.returncode == 0, done.stderr
    s.wait_for(lambda st: [e["route"] for e in navsync.active_path(st)] == ["main", "cart", "items"])
    changes = [c.rev for c in s.changes(timeout=0.3)]
    assert s.rev == 2 and changes == []


def test_bad_input_raises_navsync_errors_with_the_servers_code(navsync_session: SyncSession) -> None:
    s = navsync_session
    with pytest.raises(navsync.NavError) as e:
        s.push("nowhere")
    assert e.value.code == "unknown_route" and e.value.op == 0
    with pytest.raises(navsync.NavError) as e:
        s.command([{"op": "setRoot", "route": "main"}, {"op": "push", "route": "detail", "params": {"id": "x"}}])
    assert e.value.code == "bad_params" and e.value.op == 1 and s.rev == 0
    with pytest.raises(navsync.NavError) as e:
        s.open("/checkout")   # the demo's guard: the cart is empty
    assert e.value.code == "guarded" and e.value.guard == "cartFull" and e.value.route == "checkout"
    ack = s.open("/orders/7")
    assert ack.results == ["redirected"] and ack.redirects[0]["link"].startswith("/login?next=%2Forders%2F7")
    assert navsync.active_path(s.state)[-1]["route"] == "login"


def test_one_dead_url_is_passed_over(navsyncd: Navsyncd) -> None:
    with navsync.sync.connect(["127.0.0.1:1", navsyncd.url], "demo") as s:
        assert s.rev == 0 and s.state is not None and s.state["root"]["type"] == "App"


@pytest.mark.navsyncd_args("--data", "{tmp_path}/data")
def test_a_restart_with_data_mid_command_loses_and_doubles_nothing(navsyncd: Navsyncd) -> None:
    async def main() -> tuple[dict[str, Any], list[navsync.Ack]]:
        async with navsync.connect(navsyncd.url, "durable", create=True) as s:
            await s.set_root("main")
            sends = [asyncio.create_task(s.update({f"k{i}": i}, scope="session")) for i in range(40)]
            await asyncio.sleep(0.02)
            await asyncio.get_running_loop().run_in_executor(None, navsyncd.restart, "KILL")
            acks = await asyncio.wait_for(asyncio.gather(*sends), 30)
            await s.wait_for(lambda st: len(st.get("data", {})) == 40, timeout=10)
            assert s.state is not None
            return s.state, acks
    state, acks = asyncio.run(main())
    assert state["data"] == {f"k{i}": i for i in range(40)}, "nothing acknowledged was lost"
    with urllib.request.urlopen(navsyncd.http + "api/sessions/durable/history?limit=1000") as r:
        history = json.load(r)
    commands = [e["cmd"] for e in history["entries"]]
    assert len(commands) == len(set(commands)) == 41, "each command applied once"
    assert all(a.results == ["applied"] for a in acks)


@pytest.fixture
def hs_key(tmp_path: Any) -> str:
    """An HS256 secret for `--jwt-key {tmp_path}/hs.key`."""
    secret = os.urandom(32).hex()
    (tmp_path / "hs.key").write_text(secret + "\n")
    return secret


@pytest.mark.navsyncd_args("--tls-self-signed", "--jwt-key", "{tmp_path}/hs.key")
def test_tls_and_a_jwt_refreshed_on_the_live_connection(hs_key: str, navsyncd: Navsyncd) -> None:
    jwt = pytest.importorskip("jwt")
    assert navsyncd.url.startswith("wss://") and navsyncd.cafile

    def token(role: str, ttl: float) -> str:
        return str(jwt.encode({"sub": "qa-bot", "role": role, "exp": int(time.time()) + ttl}, hs_key, algorithm="HS256"))

    with navsync.sync.connect(navsyncd.url, "demo", token=token("controller", 60), cafile=navsyncd.cafile) as s:
        assert s.open("/product/5").results == ["applied"]
        renewed = s.refresh_token(token("viewer", 3600))
        assert renewed["role"] == "viewer" and renewed["expires"] > time.time() + 3000
        with pytest.raises(navsync.NavError) as refused:
            s.refresh_token(token("admin", 3600))
        assert "may not raise the role" in str(refused.value)
        with pytest.raises(navsync.NavError) as forbidden:
            s.pop()
        assert forbidden.value.code == "forbidden"   # the viewer token is in force now


def test_a_command_names_the_entries_another_unanswered_one_makes(navsyncd: Navsyncd) -> None:
    """`submit` sends without waiting; `Sent.ref(n)` names what it makes ("~ID.n"), and
    `Ack.created` lists the ids the server gave."""
    async def run() -> None:
        async with navsync.connect(navsyncd.url, "refs-py", create=True) as s:
            await s.set_root("main")
            opened = s.submit([{"op": "push", "route": "detail", "params": {"id": 1}}])
            assert opened.ref() == f"~{opened.id}.0"
            back = s.submit([{"op": "pop", "from": opened.ref()}])   # before the push is answered
            pushed, popped = await opened, await back
            assert len(pushed.created) == 1 and pushed.created[0].startswith("e")
            assert popped.results == ["applied"]
            assert [e["route"] for e in navsync.active_path(s.state)] == ["main", "home", "list"]
            with pytest.raises(navsync.NavError) as refused:
                await s.pop(from_=f"~{opened.id}.3")
            assert refused.value.code == "not_found" and f"~{opened.id}.3" in refused.value.message
    asyncio.run(run())


def test_the_fixture_survives_5000_requests_and_500_connects(navsyncd: Navsyncd) -> None:
    """The server's log goes to a file, never a pipe nobody reads: a busy test does not
    stall it (it did after about 420 requests)."""
    for i in range(5000):
        with urllib.request.urlopen(f"{navsyncd.http.rstrip('/')}/healthz", timeout=5) as r:
            assert r.status == 200
    async def connects() -> None:
        import websockets
        for i in range(500):
            async with websockets.connect(navsyncd.url) as ws:
                await ws.send(json.dumps({"type": "join", "session": "demo"}))
                while json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] != "joined":
                    pass
    asyncio.run(connects())
    with urllib.request.urlopen(f"{navsyncd.http.rstrip('/')}/healthz", timeout=5) as r:
        assert r.status == 200
    assert os.path.getsize(navsyncd.log) > 0


def test_a_server_killed_mid_call_fails_within_the_deadline_naming_it(navsyncd: Navsyncd) -> None:
    async def run() -> None:
        async with navsync.connect(navsyncd.url, "demo", timeout=2.0) as s:
            await s.open("/product/1")
            navsyncd.stop("KILL")
            started = time.monotonic()
            with pytest.raises(navsync.NavError) as e:
                await s.pop()
            took = time.monotonic() - started
            assert e.value.code == "timeout" and navsyncd.url in e.value.message, e.value
            assert took < 4, took
    asyncio.run(run())


def test_the_sync_api_closes_its_event_loop(navsyncd: Navsyncd) -> None:
    # Each connect and close left an event loop open (an epoll handle, two sockets).
    import gc
    import warnings
    before = len(os.listdir("/proc/self/fd"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        for _ in range(5):
            with navsync.sync.connect(navsyncd.url, "demo") as s:
                assert s.rev >= 0
            assert s._loop.is_closed()
        gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= before + 1


def test_every_operation_has_its_helper_as_in_navsync_js(navsync_session: SyncSession) -> None:
    """The helpers navsync.js has, in Python (docs/clients.md): each sends its operation
    and the server applies it as the protocol says."""
    s = navsync_session
    s.set_root("main")
    s.route("detail", id=1)
    s.push("reviews", id=1)
    s.push("detail", id=2)

    def path() -> list[str]:
        return [e["route"] for e in navsync.active_path(s.state)]

    def top() -> dict[str, Any]:
        entry = s.top_entry()
        assert entry is not None
        return entry

    def state() -> dict[str, Any]:
        assert s.state is not None
        return s.state

    def tabs() -> list[str]:
        return [t["route"] for t in state()["root"]["current"]["coordinator"]["tabs"]]
    assert path() == ["main", "home", "detail"]
    s.pop_to_first("detail")
    assert len(navsync.active_path(s.state)[-1:]) == 1 and top()["params"] == {"id": 1}
    s.push("reviews", id=1)
    s.pop_before("reviews")
    assert top()["params"] == {"id": 1}
    s.push("reviews", id=1)
    s.pop_to(top()["id"])
    s.pop_to_last("detail")
    s.present("settings", None, "sheet")
    s.set_path([{"route": "detail", "params": {"id": 5}}], at="Home")
    home = state()["root"]["current"]["coordinator"]["tabs"][0]["coordinator"]["stack"]
    assert [e["route"] for e in home] == ["list", "detail", "settings"] and top()["route"] == "settings", \
        "the path under the sheet changed, the sheet stays on top"
    s.dismiss()
    assert s.back().results == ["applied"] and s.top_entry() is None
    s.restart(at="Home")
    s.jump_to(["list", {"route": "detail", "params": {"id": 3}}])
    s.set_tabs(["home", "cart"], at="Main")
    s.append_tab("profile", at="Main")
    s.insert_tab("search", index=0, at="Main")
    assert tabs() == ["search", "home", "cart", "profile"]
    s.remove_first("search")
    s.remove_last("profile")
    s.remove_tab(state()["root"]["current"]["coordinator"]["tabs"][1]["id"])
    assert tabs() == ["home"]
    s.update_session({"user": "ann"})
    assert state()["data"] == {"user": "ann"}
    page = s.history(limit=3)
    assert page["rev"] == s.rev and len(page["entries"]) == 3 and page["entries"][0]["rev"] == s.rev
    past = s.state_at(1)
    assert past["rev"] == 1 and past["historic"] and past["state"]["root"]["current"]["route"] == "main"
    assert any(x["session"] == s.session for x in s.sessions())
    s.rendered()
