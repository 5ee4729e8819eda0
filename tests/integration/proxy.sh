#!/usr/bin/env bash
# docs/deploy.md's nginx recipe, run as written: Debian's nginx terminating TLS in
# front of navsyncd --trusted-proxy 127.0.0.1, with a certificate made for the test.
. "$(dirname "$0")/lib.sh"

dir="$OUT/proxy"; rm -rf "$dir"; mkdir -p "$dir/tmp"
freeport() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
# A certificate for localhost, trusted by the clients through --cacert / cafile only.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$dir/key.pem" -out "$dir/cert.pem" >"$dir/openssl.log" 2>&1

# navsyncd trusts the proxy's address; each client may hold one connection.
start_navsyncd proxy --trusted-proxy 127.0.0.1 --max-connections-per-ip 1
upstream_port="$(echo "$WS_URL" | sed 's#.*:\([0-9]*\)/ws#\1#')"
public_port="$(freeport)"

# The ```nginx block of docs/deploy.md, its addresses and certificate made this test's.
awk '/^```nginx/ { inb = 1; next } inb && /^```/ { exit } inb' "$ROOT/docs/deploy.md" \
  | sed -e "s#127.0.0.1:7420#127.0.0.1:$upstream_port#" -e "s#listen 443 ssl#listen 127.0.0.1:$public_port ssl#" \
        -e "s#server_name nav.example.com#server_name localhost#" \
        -e "s#/etc/ssl/navsync/fullchain.pem#$dir/cert.pem#" -e "s#/etc/ssl/navsync/privkey.pem#$dir/key.pem#" >"$dir/navsync.conf"
cat >"$dir/nginx.conf" <<CONF
pid $dir/nginx.pid;
error_log $dir/error.log;
events {}
http {
    access_log $dir/access.log;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    include $dir/navsync.conf;
}
CONF
check "the recipe is a valid nginx configuration" bash -c "nginx -t -c '$dir/nginx.conf' -p '$dir' >'$dir/nginx-t.log' 2>&1"
nginx -c "$dir/nginx.conf" -p "$dir" -g "daemon off;" >"$dir/nginx.out" 2>&1 &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do curl -s -o /dev/null --cacert "$dir/cert.pem" "https://localhost:$public_port/healthz" && break; sleep 0.1; done

check "curl --cacert: HTTPS through nginx" bash -c "curl -sf --cacert '$dir/cert.pem' 'https://localhost:$public_port/healthz' | grep -qx ok"
check "curl --cacert: the HTTP API through nginx" bash -c "curl -sf --cacert '$dir/cert.pem' 'https://localhost:$public_port/api/sessions/demo' | grep -q '\"state\"'"
check "without the certificate curl refuses the connection" bash -c "! curl -s -o /dev/null 'https://localhost:$public_port/healthz'"
# The recipe's default server: another host name never reaches navsyncd (its origin
# check would take that host for its own). Regression: Host: evil.example with
# Origin: https://evil.example was upgraded.
evil_upgrade() {
    curl -s -o /dev/null -w '%{http_code}' --max-time 3 --cacert "$dir/cert.pem" -H 'Host: evil.example' -H 'Origin: https://evil.example' \
        -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
        "https://localhost:$public_port/ws" || true
}
check "a request naming another host (Host: evil.example, Origin: https://evil.example) is closed unanswered" \
    bash -c "$(declare -f evil_upgrade); dir='$dir' public_port='$public_port'; s=\$(evil_upgrade); echo \"status \$s\"; [ \"\$s\" = 000 ]"
check "...and a TLS handshake naming another host is refused" \
    bash -c "! curl -sk -o /dev/null --max-time 3 --resolve 'evil.example:$public_port:127.0.0.1' 'https://evil.example:$public_port/healthz'"
check "...while the recipe's own host is upgraded" \
    bash -c "s=\$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 --cacert '$dir/cert.pem' -H 'Origin: https://localhost:$public_port' -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' 'https://localhost:$public_port/ws' || true); [ \"\$s\" = 101 ]"
PYTHONPATH="$ROOT/tests/integration" "$PY" - "$public_port" "$upstream_port" "$dir/cert.pem" <<'PY' || FAILED=$((FAILED + 1))
import asyncio, json, ssl, sys
import websockets
from checks import check, finish

public, upstream, cafile = sys.argv[1], sys.argv[2], sys.argv[3]
tls = ssl.create_default_context(cafile=cafile)
PUBLIC = f"wss://localhost:{public}/ws"


async def join(url, origin=None, source="127.0.0.1", **extra):
    ws = await websockets.connect(url, ssl=tls if url.startswith("wss") else None, origin=origin,
                                  local_addr=(source, 0), subprotocols=["navsync.v1"], **extra)
    await ws.send(json.dumps({"type": "join", "session": "demo"}))
    while True:
        m = json.loads(await asyncio.wait_for(ws.recv(), 5))
        if m["type"] == "joined":
            return ws, m


async def refused(*args, **kw):
    try:
        ws, _ = await join(*args, **kw)
        await ws.close()
        return None
    except websockets.exceptions.InvalidStatus as e:
        return e.response.status_code


async def main():
    # Two clients through nginx, from two source addresses: each is counted on its own
    # (the limit is one connection per address), with the public origin accepted.
    a, joined = await join(PUBLIC, origin=f"https://localhost:{public}", source="127.0.0.3")
    check("wss:// through nginx: a page of the public origin joins", joined["session"] == "demo", joined)
    b, also = await join(PUBLIC, origin=f"https://localhost:{public}", source="127.0.0.4")
    check("a second client behind the proxy is another address, not the proxy's again (limit 1 per address)",
          also["session"] == "demo", also)
    await a.send(json.dumps({"type": "command", "session": "demo", "id": 1, "ops": [{"op": "open", "url": "/product/7"}]}))
    got = []
    while len(got) < 2:
        got.append(json.loads(await asyncio.wait_for(b.recv(), 5))["type"])
    check("commands and patches pass the proxy", "patch" in got, got)
    code = await refused(PUBLIC, origin=f"https://localhost:{public}", source="127.0.0.3")
    check("a second connection of the same client is refused by its own limit (503)", code == 503, code)
    code = await refused(PUBLIC, origin="https://evil.example", source="127.0.0.5")
    check("a page of another origin is refused behind the proxy (403)", code == 403, code)
    # Straight to navsyncd from an address that is not the proxy: its headers are ignored.
    direct = f"ws://127.0.0.1:{upstream}/ws"
    c, _ = await join(direct, source="127.0.0.6", additional_headers={"X-Forwarded-For": "203.0.113.1"})
    code = await refused(direct, source="127.0.0.6", additional_headers={"X-Forwarded-For": "203.0.113.2"})
    check("forged X-Forwarded-For from an untrusted address is ignored (counted as itself: 503)", code == 503, code)
    code = await refused(direct, source="127.0.0.7", origin=f"https://localhost:{public}",
                         additional_headers={"X-Forwarded-Proto": "https", "X-Forwarded-Host": f"localhost:{public}"})
    check("...and so is a forged public origin (403)", code == 403, code)
    # Through nginx, a client's own Forwarded / X-Forwarded-For: five connections from
    # one address (127.0.0.8), each claiming another one. The first is that address;
    # the others are refused by its limit of one, whatever they claim.
    spoofed = []
    first, _ = await join(PUBLIC, origin=f"https://localhost:{public}", source="127.0.0.8",
                          additional_headers={"Forwarded": "for=198.51.100.1", "X-Forwarded-For": "198.51.100.1"})
    for n in range(2, 6):
        spoofed.append(await refused(PUBLIC, origin=f"https://localhost:{public}", source="127.0.0.8",
                                     additional_headers={"Forwarded": f"for=198.51.100.{n}", "X-Forwarded-For": f"198.51.100.{n}"}))
    check("spoofed Forwarded / X-Forwarded-For through nginx do not pass the per-address limit (4 of 4 refused, 503)",
          spoofed == [503] * 4, spoofed)
    code = await refused(PUBLIC, origin="https://evil.example", source="127.0.0.9",
                         additional_headers={"Forwarded": "for=127.0.0.9;host=evil.example;proto=https",
                                             "X-Forwarded-Host": "evil.example"})
    check("Forwarded: host=evil.example;proto=https through nginx does not make that origin allowed (403)", code == 403, code)
    for ws in (a, b, c, first):
        await ws.close()


asyncio.run(main())
finish("proxy_clients")
PY
# The device page over HTTPS through nginx: it connects back with wss:// to the page's
# own host (Chromium told to accept the test's certificate).
PYTHONPATH="$ROOT/tests/integration" "$PY" - "$public_port" <<'PY' || FAILED=$((FAILED + 1))
import sys
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from checks import check, finish, wait

options = webdriver.ChromeOptions()
for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--ignore-certificate-errors"]:
    options.add_argument(arg)
options.binary_location = "/usr/bin/chromium"
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    d.get(f"https://localhost:{sys.argv[1]}/?session=demo")
    check("the device page over HTTPS behind nginx joins with wss:// (shows the shared state)",
          wait(d, lambda d: "Product 7" in d.find_element(By.ID, "phone").text, 15), d.find_element(By.ID, "conn").text)
finally:
    d.quit()
finish("proxy_page")
PY
check "navsyncd's log names the clients behind the proxy" bash -c "grep -q 'forwards for 127.0.0.3' '$OUT/proxy.log' && grep -q 'forwards for 127.0.0.4' '$OUT/proxy.log' && ! grep -q 'forwards for 203.0.113' '$OUT/proxy.log'"
check "...and never an address a client claimed through nginx" bash -c "grep -q 'forwards for 127.0.0.8' '$OUT/proxy.log' && ! grep -q '198.51.100' '$OUT/proxy.log'"
kill $nginx_pid 2>/dev/null || true
stop_navsyncd
finish
