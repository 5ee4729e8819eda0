"""The device page in a cluster, in headless Chromium: a page served by node a and one
served by node c show the same session; commands sent through node b show on both; node
a is killed and its page moves to another node by itself (it learnt the nodes from
GET /api/cluster; the other nodes accept its origin) and keeps up.

usage: cluster_web.py NAVSYNCD OUT_DIR"""
import json
import sys
import time
import urllib.request

from checks import check, finish, headless_chromium, wait
from cluster_faults import Node, Redis, stop_all

NAVSYNCD, OUT = sys.argv[1], sys.argv[2]


def post(node, n):
    body = json.dumps({"id": n, "ops": [{"op": "update", "at": "App", "data": {"n": n}}]}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{node.port}/api/sessions/demo/commands", data=body, method="POST",
                                 headers={"X-Navsync-Client": "web-test"})
    return json.loads(urllib.request.urlopen(req, timeout=5).read())["rev"]


def rev_of(d):
    return d.execute_script("return document.getElementById('rev').textContent")


rd = Redis("web")
nodes = [Node(n, rd.port) for n in ("a", "b", "c")]
pages = []
try:
    time.sleep(1.2)   # the nodes' heartbeats: each lists the others
    for node in (nodes[0], nodes[2]):
        d = headless_chromium()
        d.get(f"http://127.0.0.1:{node.port}/?session=demo")
        pages.append(d)
    check("pages on node a and node c are connected", all(wait(d, lambda d: d.execute_script(
        "return document.getElementById('conn').textContent") == "connected") for d in pages))
    rev = post(nodes[1], 1)
    check("a command sent through node b shows on both pages", all(wait(d, lambda d: rev_of(d) == f"rev {rev}") for d in pages),
          str([rev_of(d) for d in pages]))
    nodes[0].kill()
    started = time.monotonic()
    rev = post(nodes[1], 2)
    moved = wait(pages[0], lambda d: rev_of(d) == f"rev {rev}", 10)
    check("node a killed: its page moves to another node by itself and shows the next command", moved, rev_of(pages[0]))
    print(f"   the page of the killed node showed the next revision {time.monotonic() - started:.2f} s after the kill", flush=True)
    rev = post(nodes[2], 3)
    check("...and keeps up with the cluster", all(wait(d, lambda d: rev_of(d) == f"rev {rev}") for d in pages))
    errors = [e for d in pages for e in d.get_log("browser") if e["level"] == "SEVERE" and "WebSocket" not in e["message"]
              and "ERR_CONNECTION_REFUSED" not in e["message"]]
    check("no errors in the console but the lost connection's", not errors, str(errors)[:300])

    # A new generation of the session (Redis restarted with its data: another run, so
    # another epoch of the same lineage) while navsync.js is away: it is the same
    # session, so the command queued meanwhile is resent and lands, with no reset.
    d = pages[1]
    d.set_script_timeout(30)
    before = d.execute_async_script("""const done = arguments[arguments.length - 1];
        import('/navsync.js').then(async nav => {
          window.c = nav.connect(arguments[0], { storage: null }); window.s = window.c.session('demo');
          window.resets = []; window.s.on('reset', e => window.resets.push(e));
          const t = Date.now(); while (window.s.getSnapshot().status !== 'live' && Date.now() - t < 10000) await new Promise(r => setTimeout(r, 20));
          done(window.s.getSnapshot().epoch);
        }, e => done('import failed: ' + e));""", nodes[1].url)
    rd.stop()
    rd.start()
    post_after = None
    for _ in range(100):   # the next write gives the session its new epoch
        try:
            post_after = post(nodes[2], 4)
            break
        except Exception:
            time.sleep(0.1)
    nodes[1].kill()
    d.execute_script("window.result = null; window.s.command([{ op: 'update', at: 'App', data: { js: 1 } }])"
                     ".then(a => { window.result = { ok: a.rev }; }, e => { window.result = { err: e.code }; });")
    nodes[1].start()
    result = None
    for _ in range(200):
        result = d.execute_script("return window.result")
        if result:
            break
        time.sleep(0.1)
    after = d.execute_script("return [window.s.getSnapshot().epoch, window.resets.length]")
    check(f"navsync.js across a new generation of the session ({before} -> {after[0]}): no reset, the command queued meanwhile lands",
          post_after is not None and result is not None and "ok" in result and after[1] == 0
          and after[0] != before and after[0].startswith(before.split("/")[0] + "/"), f"{post_after} {result} {after}")
finally:
    for d in pages:
        d.quit()
    stop_all(nodes, rd)
finish("cluster_web")
