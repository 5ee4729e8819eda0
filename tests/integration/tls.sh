#!/usr/bin/env bash
# navsyncd serving TLS itself (--tls-cert/--tls-key): HTTPS and wss:// on one port for
# curl, Python websockets, navclient and Chromium; plain HTTP and stalled handshakes;
# the certificate reloaded on SIGHUP without dropping live connections.
. "$(dirname "$0")/lib.sh"

dir="$OUT/tls"; rm -rf "$dir"; mkdir -p "$dir"
cert() {   # cert NAME: an ECDSA certificate for localhost and 127.0.0.1, in NAME.pem/NAME.key
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=localhost" \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$dir/$1.key" -out "$dir/$1.pem" >>"$dir/openssl.log" 2>&1
}
cert one; cert two
cp "$dir/one.pem" "$dir/cert.pem"; cp "$dir/one.key" "$dir/key.pem"
# Clients trust both certificates (the served one changes on SIGHUP).
cat "$dir/one.pem" "$dir/two.pem" >"$dir/ca.pem"

check "--tls-cert without --tls-key exits 2" bash -c "'$NAVSYNCD' --tls-cert '$dir/one.pem' 2>&1 | grep -q 'go together'; [ \${PIPESTATUS[0]} -eq 2 ]"
check "a certificate file that cannot be read stops the start (exit 1), naming it and why" bash -c "'$NAVSYNCD' --port 0 --tls-cert '$dir/none.pem' --tls-key '$dir/one.key' >'$dir/none.err' 2>&1; [ \$? -eq 1 ] && grep -q 'cannot read the certificate $dir/none.pem: No such file or directory' '$dir/none.err' && ! grep -q 'system lib' '$dir/none.err'"
check "a key that is not the certificate's stops the start" bash -c "'$NAVSYNCD' --port 0 --tls-cert '$dir/one.pem' --tls-key '$dir/two.key' 2>&1 | grep -q 'does not match'"

start_navsyncd tls --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" --handshake-timeout 500
port="$(echo "$WS_URL" | sed 's#.*:\([0-9]*\)/ws#\1#')"
check "the start line names wss:// and https://" bash -c "head -1 '$OUT/tls.stdout' | grep -qx 'navsyncd listening on wss://127.0.0.1:$port/ws (web: https://127.0.0.1:$port/)'"
check "curl --cacert: HTTPS" bash -c "curl -sf --cacert '$dir/ca.pem' 'https://localhost:$port/healthz' | grep -qx ok"
check "curl --cacert: the HTTP API over HTTPS" bash -c "curl -sf --cacert '$dir/ca.pem' 'https://127.0.0.1:$port/api/sessions/demo' | grep -q '\"state\"'"
check "without the certificate curl refuses the server" bash -c "! curl -s -o /dev/null 'https://localhost:$port/healthz'"
check "plain HTTP to the TLS port: 400, told to use https" bash -c "curl -s -i 'http://127.0.0.1:$port/healthz' | tee '$dir/plain.txt' | head -1 | grep -q '^HTTP/1.1 400' && grep -q 'use https://' '$dir/plain.txt'"
check "TLS 1.1 is refused" bash -c "! openssl s_client -connect 127.0.0.1:$port -tls1_1 </dev/null >'$dir/tls11.log' 2>&1"
check "TLS 1.3 is served" bash -c "openssl s_client -connect 127.0.0.1:$port -tls1_3 -CAfile '$dir/ca.pem' </dev/null 2>&1 | grep -q 'TLSv1.3'"
check "navclient --cacert: exec over wss://" "$NAVCLIENT" exec "wss://localhost:$port/ws" --cacert "$dir/ca.pem" "open /product/7"
check "navclient bench --cacert: members and a publisher over wss://" bash -c "'$NAVCLIENT' bench 'wss://localhost:$port/ws' --cacert '$dir/ca.pem' --clients 4 --commands 50 --json 2>/dev/null | '$PY' -c 'import json,sys; r=json.load(sys.stdin); assert r[\"deliveries\"]==200 and r[\"errors\"]==0, r'"
check "navclient: an untrusted certificate is refused with why" bash -c "! '$NAVCLIENT' get 'wss://localhost:$port/ws' 2>&1 | tee '$dir/untrusted.txt' >/dev/null; grep -q 'certificate verify failed' '$dir/untrusted.txt'"

PYTHONPATH="$ROOT/tests/integration" "$PY" - "$port" "$dir" <<'PY' || FAILED=$((FAILED + 1))
import asyncio, hashlib, json, os, shutil, signal, socket, ssl, sys, time
import websockets
from checks import check, finish, next_of

port, d = int(sys.argv[1]), sys.argv[2]
tls = ssl.create_default_context(cafile=f"{d}/ca.pem")
URL = f"wss://localhost:{port}/ws"
pid = int(os.environ["NAVSYNCD_PID"])


def served_certificate():
    with socket.create_connection(("127.0.0.1", port)) as raw, tls.wrap_socket(raw, server_hostname="localhost") as s:
        return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()


def fingerprint(name):
    der = ssl.PEM_cert_to_DER_cert(open(f"{d}/{name}.pem").read())
    return hashlib.sha256(der).hexdigest()


async def member():
    ws = await websockets.connect(URL, ssl=tls, subprotocols=["navsync.v1"])
    await ws.send(json.dumps({"type": "join", "session": "demo"}))
    await next_of(ws, "joined")
    return ws


async def main():
    a, b = await member(), await member()
    await a.send(json.dumps({"type": "command", "session": "demo", "id": 1, "ops": [{"op": "open", "url": "/product/8"}]}))
    ack = await next_of(a, "ack")
    patch = await next_of(b, "patch")
    check("wss://: a command is acked and its patch reaches the other member", ack["rev"] == patch["rev"], (ack, patch))

    # A client that stalls mid-handshake is closed at the handshake timeout (500 ms;
    # ticks are once a second); the members are not disturbed.
    stalled = socket.create_connection(("127.0.0.1", port))
    stalled.sendall(b"\x16\x03\x01\x02\x00\x01")
    stalled.settimeout(5)
    t0 = time.monotonic()
    closed = stalled.recv(100) == b""
    check("a handshake that stalls is closed within the handshake timeout", closed and time.monotonic() - t0 < 3, time.monotonic() - t0)
    broken = socket.create_connection(("127.0.0.1", port))
    broken.sendall(b"\x16\x03\x01\x00\x04junk")
    broken.settimeout(5)
    check("a broken handshake is closed", broken.recv(100)[:1] in (b"", b"\x15"))
    await a.send(json.dumps({"type": "ping", "id": "p"}))
    check("members are served meanwhile", (await next_of(a, "pong"))["id"] == "p")

    # SIGHUP: the new certificate for new connections; the live ones keep going.
    check("the first certificate is served", served_certificate() == fingerprint("one"))
    shutil.copy(f"{d}/two.pem", f"{d}/cert.pem"); shutil.copy(f"{d}/two.key", f"{d}/key.pem")
    os.kill(pid, signal.SIGHUP)
    time.sleep(0.3)
    check("after SIGHUP new connections get the new certificate", served_certificate() == fingerprint("two"))
    await a.send(json.dumps({"type": "command", "session": "demo", "id": 2, "ops": [{"op": "pop"}]}))
    ack = await next_of(a, "ack")
    patch = await next_of(b, "patch")
    check("connections opened before the reload go on", ack["rev"] == patch["rev"] and ack["results"] == ["applied"], (ack, patch))
    # A file that does not load: logged, and the one in force stays.
    open(f"{d}/cert.pem", "w").write("not a certificate\n")
    os.kill(pid, signal.SIGHUP)
    time.sleep(0.3)
    check("a certificate that does not load leaves the old one in force", served_certificate() == fingerprint("two"))
    for ws in (a, b):
        await ws.close()


asyncio.run(main())
finish("tls_clients")
PY
check "the failed reload is logged" grep -q "SIGHUP: .*the certificate loaded before stays in force" "$OUT/tls.log"

# Churn: 200 wss:// clients joining and leaving (clean closes, resets, half-done
# handshakes) while 20 members stay and command; then HTTPS with and without keep-alive.
py_checks "$ROOT/tests/integration/tls_churn.py" "$port" "$dir/ca.pem" "${TLS_CHURN_SECONDS:-60}"

# The device page over HTTPS from navsyncd itself: navsync.js follows the page's scheme.
PYTHONPATH="$ROOT/tests/integration" "$PY" - "$port" <<'PY' || FAILED=$((FAILED + 1))
import sys
from selenium.webdriver.common.by import By
from checks import check, finish, headless_chromium, wait

d = headless_chromium(extra=["--ignore-certificate-errors"])
try:
    d.get(f"https://localhost:{sys.argv[1]}/?session=demo")
    check("Chromium: the device page served over HTTPS joins over wss://",
          wait(d, lambda d: "Products" in d.find_element(By.ID, "phone").text and "connected" in d.find_element(By.ID, "conn").text, 15),
          d.find_element(By.ID, "conn").text)
finally:
    d.quit()
finish("tls_page")
PY
stop_navsyncd

# --tls-self-signed: a certificate made for the run, its file and fingerprint printed.
start_navsyncd tls-self --tls-self-signed
port="$(echo "$WS_URL" | sed 's#.*:\([0-9]*\)/ws#\1#')"
made="$(sed -n 's/^TLS: a self-signed certificate for this run, in \([^ ]*\) .*/\1/p' "$OUT/tls-self.stdout")"
check "--tls-self-signed prints its certificate file and SHA-256 fingerprint" bash -c "[ -s '$made' ] && grep -q 'SHA-256 fingerprint [0-9A-F:]\{95\}' '$OUT/tls-self.stdout'"
check "...which clients trust with --cacert" bash -c "curl -sf --cacert '$made' 'https://localhost:$port/healthz' | grep -qx ok && '$NAVCLIENT' get 'wss://127.0.0.1:$port/ws' --cacert '$made' >/dev/null"
check "...and the fingerprint printed is the certificate's" bash -c "[ \"\$(openssl x509 -in '$made' -noout -fingerprint -sha256 | cut -d= -f2)\" = \"\$(sed -n 's/.*SHA-256 fingerprint //p' '$OUT/tls-self.stdout')\" ]"
# The "try it" line, run as printed (navclient's get instead of the interactive view).
tryit="$(sed -n 's/.*or run: navclient \(.*\)/\1/p' "$OUT/tls-self.log")"
check "the 'try it' line names --cacert, and its navclient command works as printed" bash -c \
    "echo '$tryit' | grep -q -- '--cacert $made' && '$NAVCLIENT' get $tryit >/dev/null"
stop_navsyncd
check "...and the certificate's folder is gone once navsyncd stops" bash -c "[ ! -e '$made' ] && [ ! -e \"\$(dirname '$made')\" ]"
finish
