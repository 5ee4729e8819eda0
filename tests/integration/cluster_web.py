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
finally:
    for d in pages:
        d.quit()
    stop_all(nodes, rd)
finish("cluster_web")
