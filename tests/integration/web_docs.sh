#!/usr/bin/env bash
# docs/javascript.md as a reader would use it: every ```js and ```html block, exactly as
# written there (its 127.0.0.1:7420 made this server's), runs in headless Chromium from
# a page of another origin, and does what the text around it says (web_docs.py).
. "$(dirname "$0")/lib.sh"

freeport() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
PAGE_PORT=$(freeport)
PAGES="$OUT/docs-pages"; rm -rf "$PAGES"; mkdir -p "$PAGES"
cp "$ROOT/tests/integration/pages/react-standin.js" "$PAGES/"
"$PY" -m http.server --bind 127.0.0.1 --directory "$PAGES" "$PAGE_PORT" >"$OUT/docs-pages.log" 2>&1 &
PAGES_PID=$!
start_navsyncd web-docs --allow-origin "http://127.0.0.1:$PAGE_PORT" --log-level warn
trap 'kill "$PAGES_PID" "$NAVSYNCD_PID" 2>/dev/null || true' EXIT
py_checks "$ROOT/tests/integration/web_docs.py" "$ROOT/docs/javascript.md" "$HTTP_URL" "$WS_URL" "http://127.0.0.1:$PAGE_PORT" "$PAGES"
finish
