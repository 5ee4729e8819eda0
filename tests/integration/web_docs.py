"""docs/javascript.md's code blocks, as written, in headless Chromium (web_docs.sh).

Every ```js and ```html block is taken from the page with its 127.0.0.1:7420 made the
test server's, put in a page of another origin, and run; then what the text around it
says is checked against the server. A block under a heading this script does not know
fails, so a new example cannot go untested.

usage: web_docs.py DOC HTTP WS PAGES_URL PAGES_DIR"""
import json
import os
import re
import sys
import time
import urllib.request

from checks import check, finish, headless_chromium, wait

DOC, HTTP, WS, PAGES_URL, PAGES_DIR = sys.argv[1:6]
HTTP = HTTP.rstrip("/")
HOSTPORT = re.match(r"ws://([^/]+)/", WS).group(1)


def blocks():
    """(heading, language, code) of each ```js / ```html block, in order."""
    heading, out = "", []
    lines = open(DOC).read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("```js") or line.startswith("```html"):
            lang = line[3:].strip()
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            out.append((heading, lang, "\n".join(lines[i + 1:j]).replace("127.0.0.1:7420", HOSTPORT)))
            i = j
        i += 1
    return out


def server(path="/api/sessions/demo"):
    with urllib.request.urlopen(HTTP + path, timeout=5) as r:
        return json.load(r)


def command(*ops):
    body = json.dumps({"id": "web-docs-" + str(time.monotonic_ns()), "ops": list(ops)}).encode()
    req = urllib.request.Request(HTTP + "/api/sessions/demo/commands", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


def top(state):
    """The entry on top of the active path."""
    c, entry = state["root"], None
    while c:
        entry = c["current"] if c["kind"] == "root" else c["stack"][-1] if c["kind"] == "stack" else \
            next(t for t in c["tabs"] if t["id"] == c["selected"])
        c = entry.get("coordinator")
    return entry


logged = []


def errors(d):
    """The page's console errors (uncaught exceptions, unhandled rejections) since it
    was opened (Chromium hands each log line out once: they are kept here)."""
    logged.extend(e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"])
    return list(logged)


def open_page(d, name, html):
    with open(os.path.join(PAGES_DIR, name), "w") as f:
        f.write(html)
    d.get(f"{PAGES_URL}/{name}")


def module_page(code, head=""):
    return f"<!doctype html><meta charset='utf-8'>{head}<body><script type='module'>\n{code}\n</script>"


def any_page(d, code):
    before = server()["members"]
    open_page(d, "any-page.html", module_page(code))
    joined = wait(d, lambda _: server()["members"] > before, 10)
    check("'Using it from any page' runs as written (token from the address, none here): it joins demo",
          joined and not errors(d), errors(d))


def mirror(d, code):
    with open(os.path.join(PAGES_DIR, "mirror.html"), "w") as f:
        f.write(code)
    d.get(f"{PAGES_URL}/mirror.html")
    live = wait(d, lambda d: "live" in d.find_element("id", "status").text, 10)
    d.find_element("id", "open").click()
    opened = wait(d, lambda d: d.find_element("id", "screen").text == 'detail {"id":42}', 10)
    check("'A page that mirrors a session' runs as written: live, and its button opens product 42",
          live and opened and not errors(d), [d.find_element("id", "screen").text, errors(d)])
    d.find_element("id", "back").click()
    back = wait(d, lambda _: top(server()["state"])["route"] == "list", 10)
    check("...and its Back pops it on the server", back, top(server()["state"]))


def react(d, code):
    with open(os.path.join(PAGES_DIR, "react-example.js"), "w") as f:
        f.write(code)
    opened = command({"op": "open", "url": "/product/7"})
    check("(the test opens product 7 over HTTP first)", opened.get("results") == ["applied"], opened)
    head = "<script type='importmap'>{\"imports\": {\"react\": \"./react-standin.js\"}}</script>"
    open_page(d, "react.html", module_page(
        "import { render } from 'react'; import { Screen, useNavigation } from './react-example.js';\n"
        "window.exported = typeof useNavigation; render(Screen, document.body);", head))
    shown = wait(d, lambda d: d.execute_script("const b = document.querySelector('button'); return b && b.textContent") == "Back from main", 10)
    check("'React' runs as written (a stand-in with useSyncExternalStore's contract): the screen renders from the snapshot",
          shown and d.execute_script("return window.exported") == "function" and not errors(d),
          [d.execute_script("return document.body.innerHTML"), errors(d)])
    d.execute_script("document.querySelector('button').click()")
    popped = wait(d, lambda _: top(server()["state"])["route"] == "list", 10)
    check("...and its button's session.back() pops product 7 on the server", popped and not errors(d),
          [top(server()["state"]), errors(d)])


def guarded_error(d, code):
    open_page(d, "errors.html", module_page(code))
    refused = wait(d, lambda d: d.execute_script("return document.body.dataset.refusedBy") == "cartFull", 10)
    check("'Errors' runs as written: the guarded checkout is a GuardedError, and showWhy gets its guard",
          refused and not errors(d), [d.execute_script("return document.body.dataset.refusedBy"), errors(d)])


def guarded_flow(d, code):
    open_page(d, "guarded.html", module_page(code + "\ndocument.body.dataset.done = JSON.stringify([ack.results, login.route]);"))
    done = wait(d, lambda d: d.execute_script("return document.body.dataset.done"), 10)
    state = server()["state"]
    check("'A guarded flow' runs as written: redirected to sign-in, then on order 7 once signed in",
          done and json.loads(d.execute_script("return document.body.dataset.done")) == [["redirected"], "login"]
          and top(state)["route"] == "order" and top(state)["params"] == {"id": 7} and state.get("data") == {"user": "ann"}
          and not errors(d), [d.execute_script("return document.body.dataset.done"), top(state), errors(d)])


RUNS = {
    "Using it from any page": any_page,
    "A page that mirrors a session (30 lines)": mirror,
    "React": react,
    "Errors": guarded_error,
    "A guarded flow": guarded_flow,
}

found = blocks()
check("docs/javascript.md has its examples", len(found) >= len(RUNS), found)
d = headless_chromium()
d.set_script_timeout(30)
try:
    for heading, lang, code in found:
        run = RUNS.get(heading)
        if run is None:
            check(f"a check for the {lang} block under '{heading}'", False, "add one to web_docs.py")
            continue
        d.get_log("browser")   # drops what earlier pages logged
        logged.clear()
        run(d, code)
finally:
    d.quit()
finish("web_docs")
