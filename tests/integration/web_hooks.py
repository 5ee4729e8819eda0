"""navsync.js in headless Chromium against a hook-driven flow (docs/backend.md): a
command the backend refuses rejects with RefusedError and its details; one whose hook
fails once is resent by the module after retryAfter and lands once; a page joined as the
backend's user sees it in presence. The backend is the Python package's programmable
one (navsync.testing.Backend).

usage: web_hooks.py NAVSYNCD OUT_DIR"""
import json
import os
import socket
import subprocess
import sys
import time

from checks import check, finish, headless_chromium
from navsync.testing import Backend

NAVSYNCD, OUT = sys.argv[1], sys.argv[2]
backend = Backend()
calls = []


def on_command(hook):
    calls.append(hook["command"]["id"])
    url = hook["command"]["ops"][0].get("url", "")
    if url == "/checkout":
        return {"allow": False, "message": "the cart is empty", "details": {"items": 0}}
    if url == "/product/3" and calls.count(hook["command"]["id"]) == 1:
        return {"allowed": "not the answer's shape"}          # junk once: unavailable, retryAfter 1
    return {"allow": True, "set": {"lastOpen": url}}


backend.on_command = on_command
backend.on_join = lambda hook: {"allow": True, "user": "page-user"}
hooks = backend.write_hooks_file(join=True, commands={"*": ["open"]})
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
log = open(f"{OUT}/web_hooks.log", "w")
server = subprocess.Popen([NAVSYNCD, "--port", str(port), "--hooks", hooks], stdout=log, stderr=log)
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        break
    except OSError:
        time.sleep(0.05)

d = headless_chromium()
d.set_script_timeout(30)
try:
    d.get(f"http://127.0.0.1:{port}/api")
    run = lambda body: d.execute_async_script(
        "const done = arguments[0]; (async () => { " + body + " })().then(v => done({ok: v}), e => done({err: String(e), name: e && e.name, code: e && e.code, details: e && e.details}));")
    setup = f"""const nav = await import('/navsync.js'); window.nav = nav;
        window.c = nav.connect('ws://127.0.0.1:{port}/ws', {{ storage: null, name: 'page' }}); window.s = c.session('demo');
        const t = Date.now(); while (s.getSnapshot().status !== 'live') {{ if (Date.now() - t > 10000) throw new Error('not live'); await new Promise(r => setTimeout(r, 20)); }}
        return s.getSnapshot().members.map(m => m.user);"""
    r = run(setup)
    check("the page joins through the join hook and is the backend's user in presence", r.get("ok") == ["page-user"], r)
    r = run("try { await s.open('/checkout'); return 'applied'; } catch (e) { return [e instanceof nav.RefusedError, e instanceof nav.NavsyncError, e.code, e.message, e.details]; }")
    check("a refused command rejects with RefusedError, the backend's message and details",
          r.get("ok") == [True, True, "refused", "the cart is empty", {"items": 0}], r)
    started = time.time()
    r = run("const ack = await s.open('/product/3'); return [ack.rev, ack.duplicate || false, s.getSnapshot().state.data];")
    took = time.time() - started
    check("a command whose hook failed once is resent by the module after retryAfter and lands once",
          r.get("ok") and r["ok"][1] is False and r["ok"][2] == {"lastOpen": "/product/3"} and 0.9 < took < 5 and len(calls) >= 3, (r, took, calls))
finally:
    d.quit()
    server.terminate()
    server.wait(10)
    backend.close()
finish("web_hooks.py")
