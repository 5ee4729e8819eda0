"""navsync.js in real Chromium, imported by a page of another origin
(tests/integration/pages/module.html): two pages mirror one session while three
Python writers send 500 random commands; promises resolve and reject with the right
codes; a dropped or garbled patch is resynced; a restart during a burst applies every
command once; a dead first URL moves on to the second; a refused origin and a bad
token stop the retries with a reason; methods after close reject. Prints the module's
size and the time from a command to the other page's render (p50/p99)."""
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
import urllib.request

import websockets
from checks import check, finish, headless_chromium
from random_ops import normal, random_op

HTTP, WS, PAGE, OUT, RESTART, AUTH_WS, AUTH_FILE, AUTH_PID = sys.argv[1:9]
HTTP = HTTP.rstrip("/")
SERVER = HTTP                       # where the page imports the module from
NAME = "mod-" + str(os.getpid())


def page(url=None):
    d = headless_chromium()
    d.set_script_timeout(60)
    d.get(url or f"{PAGE}/pages/module.html?server={SERVER}")
    for _ in range(100):
        if d.execute_script("return !!window.nav"):
            return d
        time.sleep(0.05)
    raise RuntimeError("the module did not load: " + json.dumps(d.get_log("browser")))


def js(d, body, *args):
    """Runs `body` as an async function in the page (arguments: a0, a1, ...); returns
    {"ok": value} or {"err": message, "code": code}."""
    script = ("const done = arguments[arguments.length - 1];"
              f"(async ({', '.join(f'a{i}' for i in range(len(args)))}) => {{ {body} }})(...Array.from(arguments).slice(0, -1))"
              ".then(v => done({ok: v === undefined ? null : v}), e => done({err: String(e && e.message || e), code: e && e.code, op: e && e.op}));")
    return d.execute_async_script(script, *args)


UNTIL = """const until = async (f, ms = 10000) => { const t = Date.now();
  while (!f()) { if (Date.now() - t > ms) throw new Error('timed out: ' + f); await new Promise(r => setTimeout(r, 20)); } };"""


# Counts the WebSockets the module opens (window.opened): a refusal must stop the retries.
COUNT_OPENS = """window.opened = 0; const W = window.WebSocket;
  window.WebSocket = class extends W { constructor(...a) { super(...a); window.opened++; } };"""


def silent_server():
    """A WebSocket server on a free port that says welcome and then never answers; runs
    on a thread of its own. Returns its port."""
    import socket
    import threading
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]

    async def handler(ws):
        await ws.recv()   # hello
        await ws.send(json.dumps({"type": "welcome", "client": "silent-1", "server": "silent", "heartbeat": 30}))
        async for _ in ws:
            pass

    async def main():
        async with websockets.serve(handler, sock=sock, subprotocols=["navsync.v1"]):
            await asyncio.Future()
    threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
    time.sleep(0.3)
    return port


def server_state(name):
    for _ in range(100):   # the server may be restarting
        try:
            with urllib.request.urlopen(f"{HTTP}/api/sessions/{name}") as r:
                return json.load(r)
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the server did not answer")


async def writers(name, total):
    """Three writers, each with its own connection, send random commands."""
    rng = random.Random(7)
    sent = {"n": 0, "applied": 0}

    async def writer(k):
        async with websockets.connect(WS, subprotocols=["navsync.v1"]) as ws:
            await ws.send(json.dumps({"type": "join", "session": name}))
            state = None
            while sent["n"] < total:
                sent["n"] += 1
                msg = {"type": "command", "session": name, "id": f"w{k}-{sent['n']}", "ops": [random_op(rng, state or {})]}
                await ws.send(json.dumps(msg))
                while True:
                    m = json.loads(await ws.recv())
                    if m.get("type") == "joined":
                        state = m.get("state")
                    if m.get("id") == msg["id"]:
                        sent["applied"] += m["type"] == "ack"
                        break
    await asyncio.gather(*(writer(k) for k in range(3)))
    return sent


def join(d, name, create=False, urls=None, extra=""):
    return js(d, UNTIL + f"""
        window.c = nav.connect(a0, {{ name: 'page', storage: null {extra} }});
        window.s = c.session(a1, {{ create: a2, flow: 'shop' }});
        window.renders = {{}};
        s.subscribe(() => {{ const r = s.getSnapshot().rev; if (!(r in renders)) renders[r] = Date.now(); }});
        await until(() => ['live', 'missing', 'refused', 'error'].includes(s.getSnapshot().status));
        return s.getSnapshot().status;""", urls or WS, name, create)


a, b = page(), page()
try:
    # ---- two pages mirror one session under three writers ----
    check("a page of another origin joins (creating the session) with the module", join(a, NAME, True) == {"ok": "live"}, join)
    check("a second page joins it", join(b, NAME) == {"ok": "live"})
    first = js(a, UNTIL + "await until(() => s.getSnapshot().members.length === 2); return s.getSnapshot();").get("ok", {})
    check("getSnapshot carries state, rev, epoch, flow, members", all(k in first for k in ["state", "rev", "epoch", "flow", "members"])
          and first["flow"]["name"] == "shop", list(first))
    same = js(a, "return s.getSnapshot() === s.getSnapshot();")["ok"]
    check("getSnapshot returns the same object until the next change", same is True)
    # refreshToken asks with `auth`: this server has no tokens, so it is refused with why
    # (tests/integration/jwt.sh refreshes real ones).
    refresh = js(a, "return await c.refreshToken('not-a-token');")
    check("refreshToken rejects with the server's error", refresh.get("code") == "bad_request" and "no auth file" in refresh.get("err", ""), refresh)

    sent = asyncio.run(writers(NAME, 500))
    truth = server_state(NAME)
    settle = UNTIL + "await until(() => s.getSnapshot().rev === a0, 15000); return s.getSnapshot();"
    mirrors = [js(d, settle, truth["rev"]) for d in (a, b)]
    check(f"after 500 random commands from three writers ({sent['applied']} applied) both pages equal GET /api/sessions/NAME",
          all("ok" in m and normal(m["ok"]["state"]) == normal(truth["state"]) and m["ok"]["rev"] == truth["rev"] for m in mirrors),
          [m.get("err") for m in mirrors])

    # ---- promises ----
    r = js(a, "const ack = await s.push('detail', { id: 42 }); return ack;")
    check("a helper resolves to the ack {rev, results}", r.get("ok", {}).get("results") == ["applied"] and r["ok"]["rev"] == truth["rev"] + 1, r)
    r = js(a, "await s.push('nowhere');")
    check("an unknown route rejects with a NavsyncError unknown_route, op 0", r.get("code") == "unknown_route" and r.get("op") == 0, r)
    r = js(a, "await s.command([{ op: 'update', data: { x: 1 } }, { op: 'push', route: 'detail', params: { id: 'x' } }]);")
    check("wrong param types reject with bad_params naming op 1", r.get("code") == "bad_params" and r.get("op") == 1, r)
    r = js(a, "await s.command([{ op: 'push', route: 'detail', params: { id: 1 } }], { base: 0, onConflict: 'reject' });")
    check("a stale base with onConflict reject rejects with conflict", r.get("code") == "conflict", r)
    r = js(a, "const before = s.getSnapshot().rev; const ack = await s.back(); return [before, ack.rev, ack.results];")
    check("back() pops the top entry shown", r.get("ok", [None])[2] == ["applied"], r)
    r = js(a, """const pushed = s.push('detail', { id: 43 }); const back = s.back();
                 const acks = await Promise.all([pushed, back]);
                 return [pushed.ref(), back.id !== pushed.id, acks[0].created, acks[1].results];""")
    check("a push and back() before its answer: back() pops it by reference (~ID.0), ack.created names it",
          bool(r.get("ok")) and r["ok"][0].startswith("~") and r["ok"][0].endswith(".0") and len(r["ok"][2] or []) == 1 and r["ok"][3] == ["applied"], r)
    r = js(a, "const x = s.push('detail', { id: 9 }); await x; try { await s.popTo(x.ref(4)); return 'popped'; } catch (e) { return e.code; }")
    check("a reference out of range rejects with not_found", r.get("ok") == "not_found", r)
    r = js(a, UNTIL + "const x = c.session('nobody-made-this'); await until(() => x.getSnapshot().status !== 'joining' && x.getSnapshot().status !== 'connecting'); "
              "const st = x.getSnapshot().status; try { await x.push('detail', { id: 1 }); return [st, 'sent']; } catch (e) { return [st, e.code]; }")
    check("a session that does not exist is 'missing' and its commands reject", r.get("ok") == ["missing", "missing"], r)

    # ---- the demo's guards (docs/flows.md) ----
    r = js(a, "try { await s.open('/checkout'); return 'opened'; } catch (e) { return [e.name, e.code, e.guard, e.route, e instanceof nav.GuardedError, e instanceof nav.NavsyncError]; }")
    check("a guarded command rejects with a GuardedError (a NavsyncError) naming guard and route",
          r.get("ok") == ["GuardedError", "guarded", "cartFull", "checkout", True, True], r)
    # docs/javascript.md's guarded flow runs as written in web_docs.sh.
    # A command nobody answers rejects within its deadline, naming the server.
    r = js(a, "const c = nav.connect('ws://127.0.0.1:1/ws', { storage: null, backoff: { min: 50, max: 100 } }); const x = c.session('z');"
              "const t = Date.now(); try { await x.push('detail', { id: 1 }, { timeout: 300 }); return 'answered'; }"
              "catch (e) { return [e.code, e.name, e instanceof nav.DeadlineError, e.message.includes('ws://127.0.0.1:1/ws'), Date.now() - t < 3000]; } finally { c.close(); }")
    check("a command with no answer rejects with timeout (DeadlineError) within its deadline, naming the server",
          r.get("ok") == ["timeout", "DeadlineError", True, True, True], r)
    # A server that says welcome and then nothing (stopped, or a proxy that swallows):
    # list() and history() reject with timeout within the deadline, not ~10 s later when
    # the connection drops. Regression: neither had a deadline.
    silent_port = silent_server()
    r = js(a, UNTIL + f"const c = nav.connect('ws://127.0.0.1:{silent_port}/ws', {{ storage: null, timeout: 300 }});"
              "await until(() => c.status.state === 'open'); const out = []; const t = Date.now();"
              "for (const call of [() => c.list(), () => c.session('z').history()]) {"
              "  try { await call(); out.push('answered'); } catch (e) { out.push([e.code, e instanceof nav.DeadlineError, e.message.includes('within 0.3 s')]); } }"
              "c.close(); return [out, Date.now() - t < 3000];")
    check("list() and history() of a server that never answers reject with timeout within the deadline",
          r.get("ok") == [[["timeout", True, True], ["timeout", True, True]], True], r)
    js(a, "await s.open('/product/42');")

    # ---- applyPatch against the public RFC 6902 suite (tests/vectors/json-patch-tests) ----
    vectors = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors", "json-patch-tests")
    suite = [t for name in ("tests.json", "spec_tests.json")
             for t in json.load(open(os.path.join(vectors, name))) if "patch" in t and not t.get("disabled")]
    r = js(a, """const eq = (x, y) => JSON.stringify(sort(x)) === JSON.stringify(sort(y));
      const sort = (v) => Array.isArray(v) ? v.map(sort) : (v && typeof v === 'object')
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort(v[k])])) : v;
      const failed = [];
      for (const t of a0) {
        let got, err;
        try { got = window.nav.applyPatch(t.doc, t.patch); } catch (e) { err = e; }
        const ok = 'error' in t ? err !== undefined : err === undefined && eq(got, 'expected' in t ? t.expected : t.doc);
        if (!ok) failed.push(t.comment || JSON.stringify(t.patch));
      }
      return failed;""", suite)
    check(f"applyPatch passes every enabled case of the public RFC 6902 suite ({len(suite)})", r.get("ok") == [] and len(suite) >= 100, r)

    # ---- a dropped patch and a garbled one: the mirror resyncs ----
    for how, said in [("drop", "dropped"), ("garble", "garbled")]:
        js(b, f"window.tamper = '{how}';")
        js(a, "await s.update({ tamper: a0 });", how)
        js(a, "await s.update({ after: a0 });", how)
        truth = server_state(NAME)
        m = js(b, settle, truth["rev"])
        check(f"a {said} patch makes the mirror resync, never a wrong state",
              js(b, "return window.tampered;")["ok"] >= 1 and "ok" in m and normal(m["ok"]["state"]) == normal(truth["state"]), m.get("err"))

    # ---- latency: a command in one page to the other page's render ----
    lat = js(a, """const out = [];
        for (let i = 0; i < 200; i++) { const t = Date.now(); const ack = await s.update({ n: i }); out.push([ack.rev, t]); }
        return out;""")["ok"]
    js(b, UNTIL + "await until(() => s.getSnapshot().rev >= a0);", lat[-1][0])
    renders = js(b, "return renders;")["ok"]
    delays = sorted(renders[str(rev)] - t for rev, t in lat if str(rev) in renders)
    p50, p99 = delays[len(delays) // 2], delays[int(len(delays) * 0.99) - 1]
    print(f"figures: navsync.js {os.path.getsize(os.path.join(os.path.dirname(__file__), '../../web/navsync.js'))} bytes; "
          f"command to the other page's render over {len(delays)} commands: p50 {p50} ms, p99 {p99} ms")
    check("the other page rendered every one of 200 commands", len(delays) == 200, len(delays))

    # ---- a restart during a burst: every command applied once ----
    before = server_state(NAME)["rev"]
    js(a, """window.burstDone = (async () => { const burst = [];
        for (let i = 0; i < 200; i++) { burst.push(s.update({ burst: i }).then(ack => ack.id)); await new Promise(r => setTimeout(r, 10)); }
        return Promise.all(burst); })();""")
    # The burst runs in the page for about 2 s; the server restarts in the middle.
    time.sleep(0.3)
    subprocess.run(["bash", RESTART], check=True)
    sent_before = js(a, "return s.getSnapshot().rev;")["ok"] - before
    r = js(a, "const ids = await window.burstDone; return [new Set(ids).size, s.getSnapshot().rev];")
    after = server_state(NAME)
    check(f"a server restart during a burst ({sent_before} of 200 applied before it): every command of the module is acknowledged",
          r.get("ok", [0])[0] == 200 and 0 < sent_before < 200, (r, sent_before))
    check("and applied exactly once (the revision grew by the count of distinct acknowledged ids)",
          after["rev"] - before == 200 and r["ok"][1] == after["rev"], (before, after["rev"], r))

    # ---- a list of URLs: a dead first one is passed over ----
    dead = "ws://127.0.0.1:9/ws"
    r = join(b, NAME, urls=[dead, WS])
    check("with the first URL dead, the module moves to the second", r == {"ok": "live"}, r)

    # ---- a session made anew while the page was away: reset ----
    js(b, UNTIL + """window.resets = []; window.d = c.session('demo');
        await until(() => d.getSnapshot().status === 'live');
        d.on('reset', (e) => window.resets.push(e));
        window.queued = new Promise((resolve) => {
          const stop = d.subscribe(() => {
            if (d.getSnapshot().status !== 'offline') return;
            stop();
            // Its own deadline, longer than the restart under load can take: this is about
            // what a reset does to it, not how long a restart takes.
            d.push('detail', { id: 5 }, { timeout: 60000 }).then(() => resolve('acked'), (e) => resolve([e.code, e.name]));
          });
        });""")
    subprocess.run(["bash", RESTART], check=True, env={**os.environ, "WIPE": "1"})
    r = js(b, UNTIL + "const q = await window.queued; await until(() => d.getSnapshot().status === 'live', 30000);"
              "return [q, window.resets.length, d.getSnapshot().rev];")
    check("a session made anew while the page was away: a reset event, and the command made offline for the old one rejected with reset",
          r.get("ok", [None])[0] == ["reset", "ResetError"] and r["ok"][1] == 1 and r["ok"][2] == 0, r)

    # ---- close ----
    r = js(b, "c.close(); try { await s.push('detail', { id: 1 }); return 'sent'; } catch (e) { return e.code; }")
    r2 = js(b, "try { c.session('other'); return 'made'; } catch (e) { return e.code; }")
    check("after close, commands reject and sessions refuse with 'closed'", r == {"ok": "closed"} and r2 == {"ok": "closed"}, (r, r2))
finally:
    a.quit()
    b.quit()

# ---- the example of docs/javascript.md, as written there ----
d = headless_chromium()
try:
    d.get(f"{PAGE}/pages/example.html")
    status = lambda: d.find_element("id", "status").text
    ok = False
    for _ in range(100):
        if status().startswith("live"):
            ok = True
            break
        time.sleep(0.05)
    check("the docs' 30-line example mirrors the session", ok, status())
    req = urllib.request.Request(f"{HTTP}/api/sessions/demo/commands", method="POST",
                                 data=json.dumps({"id": "ex-1", "ops": [{"op": "setRoot", "route": "main"}, {"op": "push", "route": "detail", "params": {"id": 7}}]}).encode())
    urllib.request.urlopen(req).read()
    shows = lambda text: any(text in d.find_element("id", "screen").text for _ in [0])
    for _ in range(100):
        if shows('detail {"id":7}'):
            break
        time.sleep(0.05)
    check("it follows a command from elsewhere", shows('detail {"id":7}'), d.find_element("id", "screen").text)
    d.find_element("id", "open").click()
    for _ in range(100):
        if shows('detail {"id":42}'):
            break
        time.sleep(0.05)
    check("and its button drives the session", shows('detail {"id":42}') and '"id": 42' in json.dumps(server_state("demo")["state"]),
          d.find_element("id", "screen").text)
finally:
    d.quit()

# ---- a refused origin: said, and no endless retries ----
other = PAGE.replace("127.0.0.1", "localhost")   # the same page under an origin not allowed
d = page(f"{other}/pages/module.html?server={SERVER}")
try:
    r = js(d, UNTIL + """window.c = nav.connect(a0, { storage: null }); c.session('demo');
        await until(() => c.status.state === 'refused', 15000); return c.status.reason;""", WS)
    check("a page whose origin is not allowed is told so, naming --allow-origin", "--allow-origin" in r.get("ok", ""), r)
finally:
    d.quit()

# ---- a bad token: the reason, and no retries ----
d = page()
try:
    r = js(d, UNTIL + COUNT_OPENS + """window.c = nav.connect(a0, { token: 'not-a-token-at-all', storage: null }); const x = c.session('demo');
        await until(() => c.status.state === 'refused'); await new Promise(r => setTimeout(r, 1500));
        return [c.status.reason, window.opened, x.getSnapshot().status];""", AUTH_WS)
    check("a bad token stops the retries and says why", r.get("ok", [""])[0].startswith("that token is not valid") and r["ok"][1] == 1
          and r["ok"][2] == "refused", r)
finally:
    d.quit()

# ---- a token revoked while connected: the server closes with 1008, the retries stop ----
d = page()
try:
    r = js(d, UNTIL + COUNT_OPENS + """window.c = nav.connect(a0, { token: 'module-viewer-token-2', storage: null }); window.x = c.session('demo');
        await until(() => x.getSnapshot().status === 'live'); return x.getSnapshot().status;""", AUTH_WS)
    check("a page with a valid token joins", r == {"ok": "live"}, r)
    with open(AUTH_FILE, "w") as f:
        json.dump({"tokens": [{"token": "module-admin-token-1", "role": "admin"}]}, f)
    os.kill(int(AUTH_PID), 1)   # SIGHUP: the viewer token is gone
    r = js(d, UNTIL + """await until(() => c.status.state === 'refused'); await new Promise(r => setTimeout(r, 1500));
        return [c.status.reason, window.opened, x.getSnapshot().status];""")
    check("when the server closes with 1008 (its token revoked) the module stops retrying and says why",
          "token no longer valid" in r.get("ok", [""])[0] and r["ok"][1] == 1 and r["ok"][2] == "refused", r)
finally:
    d.quit()

finish("web_module")
