#!/usr/bin/env bash
# JWTs an app's backend signs (--jwt-key): HS256, RS256 and ES256 tokens made by PyJWT
# (an outside signer), in hello, on the upgrade and as Bearer on the HTTP API; the
# refusals; an `auth` refresh on a live connection; the close at expiry.
. "$(dirname "$0")/lib.sh"

dir="$OUT/jwt"; rm -rf "$dir"; mkdir -p "$dir"
openssl rand -hex 32 >"$dir/hs.key"                                          # a 64-byte secret, newline ended
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/rsa.key" >>"$dir/openssl.log" 2>&1
openssl pkey -in "$dir/rsa.key" -pubout -out "$dir/rsa.pub" >>"$dir/openssl.log" 2>&1
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/ec.key" >>"$dir/openssl.log" 2>&1
openssl pkey -in "$dir/ec.key" -pubout -out "$dir/ec.pub" >>"$dir/openssl.log" 2>&1
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/other.key" >>"$dir/openssl.log" 2>&1

check "a private key is refused as --jwt-key, with what to give instead" bash -c "! '$NAVSYNCD' --port 0 --jwt-key '$dir/ec.key' 2>'$dir/private.txt'; grep -q 'pubout' '$dir/private.txt'"
printf 'short' >"$dir/short.key"
check "an HS256 secret shorter than 32 bytes is refused" bash -c "! '$NAVSYNCD' --port 0 --jwt-key '$dir/short.key' 2>'$dir/short.txt'; grep -q 'at least 32 bytes' '$dir/short.txt'"

start_navsyncd jwt --jwt-key "$dir/hs.key" --jwt-key "$dir/rsa.pub" --jwt-key "$dir/ec.pub" --jwt-audience shop
check "the log names the keys and their algorithms" grep -q "JWTs signed with .*hs.key (HS256), .*rsa.pub (RS256), .*ec.pub (ES256)" "$OUT/jwt.log"

PYTHONPATH="$ROOT/tests/integration" "$PY" - "$WS_URL" "$HTTP_URL" "$dir" <<'PY' || FAILED=$((FAILED + 1))
import asyncio, base64, hashlib, hmac, json, sys, time, urllib.request, urllib.error
import jwt
import websockets
from checks import check, finish, next_of

ws_url, http_url, d = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3]
secret = open(f"{d}/hs.key", "rb").read().rstrip(b"\n")
keys = {"HS256": secret, "RS256": open(f"{d}/rsa.key").read(), "ES256": open(f"{d}/ec.key").read()}


def token(alg="HS256", role="controller", ttl=60, key=None, **claims):
    body = {"sub": f"user-{alg}", "role": role, "exp": int(time.time()) + ttl, "aud": "shop", **claims}
    return jwt.encode(body, key or keys[alg], algorithm=alg)


def confused():
    """HS256 with the RSA public key's PEM as the secret: the classic attack on servers
    that let the token's alg pick how a key is used (PyJWT refuses to make one)."""
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=")
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + b"." + b64(json.dumps(
        {"role": "admin", "exp": int(time.time()) + 60, "aud": "shop"}).encode())
    mac = hmac.new(open(f"{d}/rsa.pub", "rb").read(), head, hashlib.sha256).digest()
    return (head + b"." + b64(mac)).decode()


def http(path, tok):
    req = urllib.request.Request(http_url + path, headers={"Authorization": f"Bearer {tok}"} if tok else {})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def hello(tok, url=ws_url):
    ws = await websockets.connect(url, subprotocols=["navsync.v1"])
    await ws.send(json.dumps({"type": "hello", "token": tok}))
    return ws, await next_of(ws, "welcome", "error")


async def main():
    # Each algorithm, signed by PyJWT, in hello; the claims make the grant.
    for alg, role in [("HS256", "controller"), ("RS256", "viewer"), ("ES256", "admin")]:
        ws, m = await hello(token(alg, role))
        await ws.send(json.dumps({"type": "join", "session": "demo"}))
        joined = await next_of(ws, "joined", "error")
        me = [x for x in joined.get("members", []) if x["name"] == f"user-{alg}"]
        check(f"{alg}: hello with the token joins, named by sub with the role claimed",
              m["type"] == "welcome" and me and me[0]["role"] == role, (m, joined.get("members")))
        await ws.close()

    # Refusals, each with why.
    none = jwt.encode({"role": "admin", "exp": int(time.time()) + 60, "aud": "shop"}, None, algorithm="none")
    cases = [
        ("an expired token", token(ttl=-10), "token expired"),
        ("alg none", none, "alg none is not accepted"),
        ("a bad signature (another key)", token("ES256", key=open(f"{d}/other.key").read()), "signature does not verify"),
        ("another audience", token(aud="other"), "another audience"),
        ("no exp", jwt.encode({"role": "admin", "aud": "shop"}, secret, algorithm="HS256"), "exp is required"),
        ("HS256 signed with the RSA public key's text (algorithm confusion)", confused(), "signature does not verify"),
        ("garbage", "not.a.token", "malformed token"),
    ]
    for name, tok, why in cases:
        ws, m = await hello(tok)
        check(f"hello refuses {name}", m["type"] == "error" and why in m["message"], m)
        await ws.close()
        status, body = http("/api/sessions/demo", tok)
        check(f"the HTTP API refuses {name} with 401 saying why", status == 401 and why in body, (status, body))

    status, body = http("/api/sessions/demo", token("RS256", "viewer"))
    check("Authorization: Bearer with a JWT reads the HTTP API", status == 200 and '"state"' in body, (status, body[:80]))
    status, body = http("/api/sessions/demo", None)
    check("without a token the HTTP API is 401 (--jwt-key alone makes a token required)", status == 401, status)

    # On the upgrade (?token=): an expired one is 401 "expired".
    try:
        await websockets.connect(ws_url + "?token=" + token(ttl=-10), subprotocols=["navsync.v1"])
        check("the upgrade refuses an expired token", False)
    except websockets.exceptions.InvalidStatus as e:
        check("the upgrade refuses an expired token: 401, expired", e.response.status_code == 401 and b"expired" in e.response.body,
              (e.response.status_code, e.response.body))
    ws = await websockets.connect(ws_url + "?token=" + token(ttl=2), subprotocols=["navsync.v1"])
    stay = await websockets.connect(ws_url + "?token=" + token(ttl=2), subprotocols=["navsync.v1"])

    # A refresh on the live connection: never a higher role; a fresh one keeps it open.
    await stay.send(json.dumps({"type": "auth", "id": "a1", "token": token(role="admin", ttl=60)}))
    m = await next_of(stay, "auth", "error")
    check("a refresh may not raise the role", m["type"] == "error" and "may not raise the role" in m["message"], m)
    exp = int(time.time()) + 60
    await stay.send(json.dumps({"type": "auth", "id": "a2", "token": token(role="viewer", exp=exp)}))
    m = await next_of(stay, "auth", "error")
    check("auth answers with the role and expiry now in force", m == {"type": "auth", "id": "a2", "role": "viewer", "expires": exp}, m)

    # The connection that did not refresh is closed with 1008 "token expired".
    t0 = time.monotonic()
    try:
        while True:
            await asyncio.wait_for(ws.recv(), 6)
    except websockets.exceptions.ConnectionClosed as e:
        check("the token's expiry closes the connection: 1008 token expired",
              e.rcvd is not None and e.rcvd.code == 1008 and e.rcvd.reason == "token expired", e)
    check("...within the second of leeway after exp", time.monotonic() - t0 < 4.5, time.monotonic() - t0)
    await stay.send(json.dumps({"type": "ping", "id": "p"}))
    check("the refreshed connection stays open", (await next_of(stay, "pong", "error"))["id"] == "p")
    await stay.close()


asyncio.run(main())
finish("jwt_clients")
PY
stop_navsyncd

# With --auth too, either kind of token is taken.
cat >"$dir/auth.json" <<'JSON'
{ "tokens": [ { "token": "file-token-0123456789", "role": "viewer", "label": "from the file" } ] }
JSON
start_navsyncd jwt-both --auth "$dir/auth.json" --jwt-key "$dir/hs.key"
hs_token="$("$PY" -c "import jwt,time,sys; print(jwt.encode({'role':'controller','exp':int(time.time())+60}, open(sys.argv[1],'rb').read().rstrip(b'\n'), algorithm='HS256'))" "$dir/hs.key")"
check "with --auth and --jwt-key, a token of the file works" bash -c "curl -sf -H 'Authorization: Bearer file-token-0123456789' '${HTTP_URL}api/sessions/demo' | grep -q state"
check "...and so does a JWT" bash -c "curl -sf -H 'Authorization: Bearer $hs_token' '${HTTP_URL}api/sessions/demo' | grep -q state"
check "navclient --token takes a JWT" "$NAVCLIENT" exec "$WS_URL" --token "$hs_token" "open /product/3"
stop_navsyncd

# Key rotation: a SIGHUP re-reads the --jwt-key files and checks the JWTs connections
# hold with the keys as they are now; one whose key is gone loses its connection (1008),
# one signed by a key still there keeps it.
openssl rand -hex 32 >"$dir/old.key"; openssl rand -hex 32 >"$dir/stays.key"
start_navsyncd jwt-rotate --jwt-key "$dir/old.key" --jwt-key "$dir/stays.key"
"$PY" - "$WS_URL" "$dir" "$NAVSYNCD_PID" <<'PY' >"$dir/rotate.txt" 2>&1 || true
import asyncio, json, os, signal, sys, time, jwt, websockets
url, d, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
def token(name):
    return jwt.encode({"role": "controller", "exp": int(time.time()) + 60, "sub": name},
                      open(f"{d}/{name}.key", "rb").read().rstrip(b"\n"), algorithm="HS256")
async def main():
    old, stays = await websockets.connect(url), await websockets.connect(url)
    for ws, name in ((old, "old"), (stays, "stays")):
        await ws.send(json.dumps({"type": "hello", "token": token(name)}))
        print(name, json.loads(await ws.recv())["type"])
    with open(f"{d}/old.key", "w") as f: f.write(os.urandom(32).hex() + "\n")   # the old key replaced
    os.kill(pid, signal.SIGHUP)
    try:
        while True: await asyncio.wait_for(old.recv(), 5)
    except websockets.exceptions.ConnectionClosed as e:
        print("old closed", e.rcvd.code if e.rcvd else None, e.rcvd.reason if e.rcvd else None)
    except asyncio.TimeoutError:
        print("old still open")
    await stays.send(json.dumps({"type": "ping", "id": "p"}))
    print("stays", json.loads(await asyncio.wait_for(stays.recv(), 5))["type"])
asyncio.run(main())
PY
check "a SIGHUP that replaces a JWT key closes the connections of its tokens: 1008 token no longer valid" \
    grep -qx "old closed 1008 token no longer valid" "$dir/rotate.txt"
check "...and those of a key still there stay" bash -c "grep -qx 'old welcome' '$dir/rotate.txt' && grep -qx 'stays pong' '$dir/rotate.txt'"
stop_navsyncd
finish
