"""Cluster mode on a Redis like the managed ones (issue 42): an ACL user and password
(right, wrong, missing, from a file re-read on SIGHUP), TLS with a CA file and a client
certificate, and Sentinel with a real primary, a replica and three Sentinels on
loopback, failing over under load with --redis-wait 1: every acknowledged command is
in the session afterwards, none twice. Health: /readyz says why a node is not ready,
/healthz stays 200, the log warns, commands fail naming the store.

usage: cluster_managed.py NAVSYNCD OUT_DIR [SCENARIO ...]"""
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import redis
from checks import check, finish
from cluster_faults import Writer, acked_once, connect, drain

NAVSYNCD, OUT = sys.argv[1], sys.argv[2]
ONLY = set(sys.argv[3:])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=10):
    for _ in range(int(seconds * 20)):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def start_redis(name, *args, port=None):
    """redis-server on a free port (or `port`) with these extra arguments (no persistence)."""
    port = port or free_port()
    d = f"{OUT}/managed-{name}"
    os.makedirs(d, exist_ok=True)
    tls = "--tls-port" in args
    base = ["--port", "0"] if tls else ["--port", str(port)]
    args = [a.replace("PORT", str(port)) for a in args]
    proc = subprocess.Popen(["redis-server", *base, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--repl-diskless-sync-delay", "0", "--dir", d, *args],
                            stdout=open(f"{d}/redis.log", "a"), stderr=subprocess.STDOUT)
    if not wait_port(port):
        raise RuntimeError(f"redis-server {name} did not start")
    return proc, port


def start_sentinel(d, i, port, primary_port, listen=None, extra=""):
    """Sentinel `i` of three (quorum 2) watching master `navsync` at `primary_port`,
    quick to judge it down (1 s); `listen`: its listening lines (default `port PORT`),
    `extra`: more settings. Returns once it listens."""
    conf = f"{d}/sentinel-{i}.conf"
    with open(conf, "w") as f:
        f.write((listen or f"port {port}\n") + f"bind 127.0.0.1\ndir {d}\n"
                f"sentinel monitor navsync 127.0.0.1 {primary_port} 2\n"
                "sentinel down-after-milliseconds navsync 1000\nsentinel failover-timeout navsync 5000\n" + extra)
    proc = subprocess.Popen(["redis-server", conf, "--sentinel"], stdout=open(f"{d}/sentinel-{i}.log", "a"), stderr=subprocess.STDOUT)
    wait_port(port)
    return proc


class Node:
    running = []   # every node started; a scenario's finally stops them (Node.stop_all)

    def __init__(self, name, url, *extra):
        self.name, self.port, self.url_arg, self.extra = name, free_port(), url, list(extra)
        self.log = f"{OUT}/managed-node-{name}.log"
        self.proc = subprocess.Popen([NAVSYNCD, "--port", str(self.port), "--cluster", url, "--node", name,
                                      "--rate", "100000", "--burst", "100000", *extra],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "a"))
        Node.running.append(self)
        if not wait_port(self.port):
            raise RuntimeError(f"node {name} did not start")

    @property
    def url(self):
        return f"ws://127.0.0.1:{self.port}/ws"

    def http(self, method, path, body=None):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(), headers={"X-Navsync-Client": "probe"})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw.startswith(b"{") else raw.decode()
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, json.loads(raw) if raw.startswith(b"{") else raw.decode()

    def readyz(self, want, seconds=10):
        """Waits until /readyz answers `want` (200 ready, 503 not, with the reason) or
        the time is up: the last answer."""
        for _ in range(int(seconds * 10)):
            status, body = self.http("GET", "/readyz")
            if status == want:
                break
            time.sleep(0.1)
        return status, body

    def ready(self, seconds=10):
        return self.readyz(200, seconds)

    def not_ready(self, seconds=10):
        return self.readyz(503, seconds)

    def command(self, id, session="demo"):
        return self.http("POST", f"/api/sessions/{session}/commands", {"id": id, "ops": [{"op": "setRoot", "route": "main"}]})

    def command_confirmed(self, id, tries=20):
        """`command`, resent under the same id while it is `unconfirmed` (as clients do)."""
        for _ in range(tries):
            status, body = self.command(id)
            if body.get("code") != "unconfirmed":
                break
            time.sleep(0.3)
        return status, body

    def logged(self):
        return open(self.log).read()

    def stop(self):
        self.proc.kill()
        self.proc.wait()

    @classmethod
    def stop_all(cls):
        while cls.running:
            cls.running.pop().stop()


def serves(node, what):
    """Checks that `node` gets ready and acknowledges a first command (revision 1)."""
    status, body = node.ready()
    check(f"{what}: /readyz is 200", status == 200, str(body))
    status, body = node.command(1)
    check("...and a command is acknowledged", status == 200 and body.get("rev") == 1, f"{status} {body}")


def scenario_acl():
    """An ACL user with only what navsync needs, its password right, wrong, missing,
    and from a file re-read on SIGHUP."""
    d = f"{OUT}/managed-acl"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/users.acl", "w") as f:
        f.write("user default on >admin-secret ~* &* +@all\n")
        # The recipe of docs/cluster.md: its keys, its channels, and the commands it uses.
        f.write("user navsync on >n@v:pw% ~navsync:* &navsync:* &navsync:{*}:live "
                "-@all +@read +@write +@scripting +@pubsub +@connection +info +role +wait\n")
    proc, port = start_redis("acl", "--aclfile", f"{d}/users.acl")
    try:
        good = Node("acl-good", f"redis://navsync:n%40v%3Apw%25@127.0.0.1:{port}")
        serves(good, "ACL user with the right password (%-encoded in the URL)")
        r = redis.Redis(port=port, password="admin-secret", decode_responses=True)
        check("...in Redis's log", r.xlen("navsync:{demo}:log") == 1)
        status, body = good.http("GET", "/api/cluster")
        check("GET /api/cluster shows the URL without the password, the role and the link",
              body["redis"]["url"] == f"redis://navsync@127.0.0.1:{port}/0" and body["redis"]["role"] == "master"
              and body["redis"]["link"] == "up" and "n@v" not in json.dumps(body), str(body))

        wrong = Node("acl-wrong", f"redis://navsync:nope@127.0.0.1:{port}")
        status, body = wrong.not_ready()
        check("a wrong password: /readyz is 503 saying Redis refused it", status == 503 and body["ready"] is False
              and "refused the password of user 'navsync'" in body["reason"], str(body))
        check("...while /healthz (the process) is 200", wrong.http("GET", "/healthz")[0] == 200)
        status, body = wrong.command(1)
        check("...and a command fails naming the store, not unknown_session",
              status == 503 and body["code"] == "unavailable" and "store unavailable" in body["message"]
              and "refused the password" in body["message"], f"{status} {body}")
        missing = Node("acl-missing", f"redis://127.0.0.1:{port}")
        status, body = missing.not_ready()
        check("no password at all: /readyz says Redis wants one (NOAUTH)", status == 503 and "wants a password" in body["reason"], str(body))

        # The password from a file: wrong at first, fixed, SIGHUP.
        pw = f"{d}/password"
        with open(pw, "w") as f:
            f.write("not-it\n")
        filed = Node("acl-file", f"redis://navsync@127.0.0.1:{port}", "--redis-password-file", pw)
        status, body = filed.not_ready()
        check("--redis-password-file with a wrong password: not ready", status == 503 and "refused the password" in body["reason"], str(body))
        time.sleep(2.5)
        check("...and its log warns, with the reason", "not ready: store: Redis at" in filed.logged() and "refused the password" in filed.logged())
        with open(pw, "w") as f:
            f.write("n@v:pw%\n")
        filed.proc.send_signal(signal.SIGHUP)
        status, body = filed.ready()
        check("...the file fixed and SIGHUP: ready, with nothing restarted", status == 200 and filed.proc.poll() is None, str(body))
        check("...and it takes commands", filed.command(2)[1].get("rev") == 2)
        time.sleep(6)
        check("the node with the wrong password warned again (every 5 s while it lasts)",
              wrong.logged().count("not ready: store:") >= 2, wrong.logged()[-400:])
    finally:
        Node.stop_all()
        proc.kill()
        proc.wait()


def make_certificates(d):
    """A CA, a server certificate for localhost and 127.0.0.1, and a client certificate."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{d}/ca.key",
        "-out", f"{d}/ca.pem", "-days", "2", "-subj", "/CN=navsync test CA")
    for who, san in [("server", "subjectAltName=DNS:localhost,IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")]:
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{d}/{who}.key",
            "-out", f"{d}/{who}.csr", "-subj", f"/CN={who}")
        with open(f"{d}/{who}.ext", "w") as f:
            f.write(san + "\n")
        run("x509", "-req", "-in", f"{d}/{who}.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key", "-CAcreateserial",
            "-out", f"{d}/{who}.pem", "-days", "2", "-extfile", f"{d}/{who}.ext")


def scenario_tls():
    """rediss:// against Debian's redis-server speaking TLS: the CA file, a wrong trust,
    and a Redis that asks for a client certificate."""
    d = f"{OUT}/managed-tls"
    os.makedirs(d, exist_ok=True)
    make_certificates(d)
    tls = ["--tls-port", "PORT", "--tls-cert-file", f"{d}/server.pem", "--tls-key-file", f"{d}/server.key",
           "--tls-ca-cert-file", f"{d}/ca.pem", "--requirepass", "tls-secret"]
    proc, port = start_redis("tls", *tls, "--tls-auth-clients", "no")
    proc2, port2 = start_redis("tls-mutual", *tls, "--tls-auth-clients", "yes")
    try:
        good = Node("tls-good", f"rediss://:tls-secret@localhost:{port}?cacert={d}/ca.pem")
        serves(good, "rediss:// with ?cacert= (the certificate checked against 'localhost')")
        untrusted = Node("tls-untrusted", f"rediss://:tls-secret@127.0.0.1:{port}")
        status, body = untrusted.not_ready()
        check("rediss:// without the CA: not ready, saying the certificate check failed",
              status == 503 and "certificate verify failed" in body["reason"], str(body))
        plain = Node("tls-plain", f"redis://:tls-secret@127.0.0.1:{port}")
        check("redis:// (plain) to a TLS port: not ready", plain.not_ready()[0] == 503)
        mutual = Node("tls-mutual", f"rediss://:tls-secret@127.0.0.1:{port2}?cacert={d}/ca.pem&cert={d}/client.pem&key={d}/client.key")
        serves(mutual, "a Redis that asks for a client certificate: ?cert=&key= gets in")
        nocert = Node("tls-nocert", f"rediss://:tls-secret@127.0.0.1:{port2}?cacert={d}/ca.pem")
        status, body = nocert.not_ready()
        check("...without one: not ready", status == 503, str(body))
        bad = subprocess.run([NAVSYNCD, "--port", "0", "--cluster", f"rediss://127.0.0.1:{port}?cacert={d}/missing.pem"],
                             capture_output=True, text=True, timeout=10)
        check("a ?cacert= that does not load is an error at start", bad.returncode == 1 and "missing.pem" in bad.stderr, bad.stderr)
    finally:
        Node.stop_all()
        for p in (proc, proc2):
            p.kill()
            p.wait()


async def scenario_wait():
    """--redis-wait 1 with the replica frozen: HTTP gets `unconfirmed` (503) and its resend
    by id is answered once the replica is back; the Python client and navsync.js in
    Chromium keep the command pending and resend it themselves."""
    primary, pport = start_redis("wait-primary")
    replica, rport = start_redis("wait-replica", "--replicaof", "127.0.0.1", str(pport))
    driver = None
    try:
        for _ in range(100):
            info = redis.Redis(port=rport).info("replication")
            if info.get("master_link_status") == "up" and info.get("master_sync_in_progress") == 0:
                break
            time.sleep(0.05)
        # After a diskless full sync the primary streams writes to the replica only from
        # the replica's first ACK (sent once a second): until then WAIT cannot succeed.
        time.sleep(1.2)
        node = Node("wait", f"redis://127.0.0.1:{pport}", "--redis-wait", "1", "--redis-wait-timeout", "300")
        status, body = node.ready()
        check("--redis-wait 1 with a replica online: ready", status == 200, str(body))
        status, body = node.command(1)
        check("...and a command is acknowledged", body.get("rev") == 1, f"{status} {body}")
        replica.send_signal(signal.SIGSTOP)
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{node.port}/api/sessions/demo/commands", method="POST",
                                         data=json.dumps({"id": 2, "ops": [{"op": "update", "at": "App", "data": {"n": 2}}]}).encode(),
                                         headers={"X-Navsync-Client": "probe"})
            try:
                urllib.request.urlopen(req, timeout=5)
                status, body = 200, {}
            except urllib.error.HTTPError as e:
                status, body = e.code, json.loads(e.read())
            check("the replica frozen: HTTP gets unconfirmed, 503, saying a resend by id is safe",
                  status == 503 and body.get("code") == "unconfirmed" and "same id" in body.get("message", ""), f"{status} {body}")
            check("...and the duplicate of it is unconfirmed too while the replica is away", node.http("POST", "/api/sessions/demo/commands",
                  {"id": 2, "ops": [{"op": "update", "at": "App", "data": {"n": 2}}]})[0] == 503)
            status, body = node.not_ready(6)
            check("...and /readyz soon says no replica is acknowledging", status == 503 and "replicas online and acknowledging" in body["reason"],
                  str(body))
            metrics = node.http("GET", "/metrics")[1]
            check("...and /metrics counts the unconfirmed appends and says the node is not ready",
                  "navsync_cluster_unconfirmed_total 2" in metrics and "navsync_cluster_ready 0" in metrics, metrics[-600:])

            async def python_client():
                import navsync
                async with navsync.connect(node.url, "demo") as s:
                    t = asyncio.create_task(s.update({"py": 1}, at="App"))
                    await asyncio.sleep(1.5)
                    waiting = not t.done()
                    replica.send_signal(signal.SIGCONT)
                    ack = await asyncio.wait_for(t, 10)
                    return waiting, ack
            waiting, ack = await python_client()
            check("the Python client keeps an unconfirmed command pending and resends it by id", waiting)
            check("...which is acknowledged once the replica is back", ack.rev >= 2, str(ack))
            status, body = node.http("POST", "/api/sessions/demo/commands", {"id": 2, "ops": [{"op": "update", "at": "App", "data": {"n": 2}}]})
            check("HTTP's resend of the unconfirmed command, same id: acknowledged as a duplicate", status == 200 and body.get("duplicate") is True,
                  f"{status} {body}")
            node.ready()
            for _ in range(40):   # the readiness line is written on the node's next second
                if "cluster: ready again" in node.logged():
                    break
                time.sleep(0.1)
            check("...and the node's log says it is ready again (its last line is not left 'not ready')",
                  "cluster: ready again (after: " in node.logged(), node.logged()[-600:])

            from checks import headless_chromium
            driver = headless_chromium()
            driver.set_script_timeout(30)
            driver.get(f"http://127.0.0.1:{node.port}/api")
            replica.send_signal(signal.SIGSTOP)
            started = driver.execute_async_script("""const done = arguments[arguments.length - 1];
                import('/navsync.js').then(async nav => {
                  const c = nav.connect(arguments[0], { storage: null }); const s = c.session('demo');
                  const t = Date.now(); while (s.getSnapshot().status !== 'live' && Date.now() - t < 10000) await new Promise(r => setTimeout(r, 20));
                  window.result = null;
                  window.p = s.command([{ op: 'update', at: 'App', data: { js: 1 } }]).then(a => { window.result = { ok: a.rev }; }, e => { window.result = { err: e.code }; });
                  done(s.getSnapshot().status);
                }, e => done('import failed: ' + e));""", node.url)
            time.sleep(1.5)
            pending = driver.execute_script("return window.result") is None
            replica.send_signal(signal.SIGCONT)
            result = None
            for _ in range(100):
                result = driver.execute_script("return window.result")
                if result:
                    break
                time.sleep(0.1)
            check("navsync.js in Chromium keeps an unconfirmed command pending and resends it",
                  started == "live" and pending and result is not None and "ok" in result, f"{started} {pending} {result}")
        finally:
            replica.send_signal(signal.SIGCONT)
    finally:
        if driver:
            driver.quit()
        Node.stop_all()
        for p in (primary, replica):
            p.kill()
            p.wait()


def scenario_hold():
    """A replica promoted behind the node's back (REPLICAOF NO ONE on it, what the
    Sentinels do first in a failover, seen here before they say so): the primary goes
    on with one replica, which alone must not acknowledge, since the promoted one never
    gets those writes. Writes are `unconfirmed` for --redis-wait-hold, /readyz and the
    log say why, and then go on with the replica left. (A spurious failover of a live
    primary on a busy machine lost acknowledged commands this way.)"""
    primary, pport = start_redis("hold-primary")
    kept, kport = start_redis("hold-replica-a", "--replicaof", "127.0.0.1", str(pport))
    promoted, ppport = start_redis("hold-replica-b", "--replicaof", "127.0.0.1", str(pport))
    try:
        for port in (kport, ppport):
            for _ in range(100):
                info = redis.Redis(port=port).info("replication")
                if info.get("master_link_status") == "up" and info.get("master_sync_in_progress") == 0:
                    break
                time.sleep(0.05)
        time.sleep(1.2)   # the replicas' first ACKs (see scenario_wait)
        node = Node("hold", f"redis://127.0.0.1:{pport}", "--redis-wait", "1", "--redis-wait-timeout", "300", "--redis-wait-hold", "4000")
        status, body = node.ready()
        check("hold: two replicas online, ready", status == 200, str(body))
        status, body = node.command(1)
        check("...and a command is acknowledged", body.get("rev") == 1, f"{status} {body}")
        redis.Redis(port=ppport).execute_command("REPLICAOF", "NO", "ONE")
        dropped = time.monotonic()
        time.sleep(1.5)   # the node's look at INFO replication, once a second, sees one replica
        status, body = node.command(2)
        check("a replica promoted behind the node's back: a command with the one left is unconfirmed, not acknowledged",
              status == 503 and body.get("code") == "unconfirmed", f"{status} {body}")
        status, body = node.readyz(503, 1)
        check("...and /readyz says the one gone is waited for (--redis-wait-hold)",
              status == 503 and "--redis-wait-hold" in body.get("reason", ""), str(body))
        status, body = node.command_confirmed(2, tries=40)
        waited = time.monotonic() - dropped
        check(f"...then, the hold over, writes go on with the replica left (acknowledged {waited:.1f} s after the drop, hold 4 s)",
              status == 200 and body.get("rev") == 2 and waited >= 3.5, f"{status} {body}")
        log = node.logged()
        check("...and the log says both", "stopped acknowledging; writes wait for it" in log and "writes go on with the 1 left" in log, log[-800:])
    finally:
        Node.stop_all()
        for p in (primary, kept, promoted):
            p.kill()
            p.wait()


DATA_PW, SENTINEL_PW = "data-secret", "sentinel-secret"


class Sentinels:
    """A primary, its replica and three Sentinels (quorum 2) on loopback; the data nodes
    and the Sentinels each with their own password."""

    def __init__(self, tls=False):
        self.dir = f"{OUT}/managed-sentinel" + ("-tls" if tls else "")
        subprocess.run(["rm", "-rf", self.dir])
        os.makedirs(self.dir)
        os.makedirs(self.dir + "/p")
        self.tls = tls
        # With TLS: every port speaks only TLS, replication and the Sentinels' links too.
        files = {}
        if tls:
            make_certificates(self.dir)
            files = {"cert-file": f"{self.dir}/server.pem", "key-file": f"{self.dir}/server.key", "ca-cert-file": f"{self.dir}/ca.pem"}
        self.tls_args = [a for k, v in files.items() for a in (f"--tls-{k}", v)] + (
            ["--tls-port", "PORT", "--tls-replication", "yes", "--tls-auth-clients", "no"] if tls else [])
        auth = ["--requirepass", DATA_PW, "--masterauth", DATA_PW, *self.tls_args]
        self.primary, self.primary_port = start_redis("sentinel-primary", "--dir", self.dir + "/p", *auth)
        self.replica, self.replica_port = start_redis("sentinel-replica", "--replicaof", "127.0.0.1", str(self.primary_port), *auth)
        self.sentinels, self.ports, self.dead = [], [], free_port()
        for i in range(3):
            port = free_port()
            listen = (f"port 0\ntls-port {port}\ntls-replication yes\ntls-auth-clients no\n"
                      + "".join(f"tls-{k} {v}\n" for k, v in files.items())) if tls else None
            self.sentinels.append(start_sentinel(self.dir, i, port, self.primary_port, listen=listen,
                                                 extra=f"sentinel auth-pass navsync {DATA_PW}\nrequirepass {SENTINEL_PW}\n"
                                                       "sentinel parallel-syncs navsync 1\n"))
            self.ports.append(port)
        # The replica in sync, and every Sentinel aware of it and of the others.
        for _ in range(100):
            info = self.redis(self.primary_port, DATA_PW).info("replication")
            known = [self.redis(p, SENTINEL_PW).sentinel_master("navsync") for p in self.ports]
            if info.get("connected_slaves") == 1 and all(k["num-other-sentinels"] == 2 and k["num-slaves"] == 1 for k in known):
                return
            time.sleep(0.1)
        raise RuntimeError("the Sentinels did not settle")

    def redis(self, port, password, **kw):
        if self.tls:
            kw.update(ssl=True, ssl_ca_certs=f"{self.dir}/ca.pem")
        return redis.Redis(port=port, password=password, **kw)

    @property
    def url(self):
        # The first Sentinel of the list does not answer: it is skipped.
        return (f"redis{'s' if self.tls else ''}+sentinel://:{DATA_PW}@127.0.0.1:{self.dead}," + ",".join(f"127.0.0.1:{p}" for p in self.ports)
                + f"/navsync?sentinel_password={SENTINEL_PW}" + (f"&cacert={self.dir}/ca.pem" if self.tls else ""))

    def primary_now(self):
        return self.redis(self.ports[0], SENTINEL_PW, decode_responses=True).sentinel_get_master_addr_by_name("navsync")

    def stop(self):
        for p in self.sentinels + [self.primary, self.replica]:
            try:
                p.kill()
                p.wait()
            except Exception:
                pass


async def scenario_sentinel():
    """Failover under load with --redis-wait 1: writers on two nodes, the replica frozen
    for a moment (on loopback it is never behind otherwise), the primary killed; the
    Sentinels promote the replica, the nodes follow, the old primary comes back as a
    replica. Every acknowledged command is in the new primary's log exactly once."""
    s = Sentinels()
    nodes = []
    try:
        wrong = Node("sw", s.url.replace(SENTINEL_PW, "nope"))
        for _ in range(50):   # the Sentinels are tried in turn: each one's refusal is named
            status, body = wrong.http("GET", "/readyz")
            if "refused the password" in json.dumps(body):
                break
            time.sleep(0.1)
        check("a wrong sentinel_password: not ready, saying the Sentinel refused it",
              status == 503 and "Sentinel" in body["reason"] and "refused the password" in body["reason"], str(body))
        wrong.stop()
        for name in ("sa", "sb"):
            nodes.append(Node(name, s.url, "--redis-wait", "1", "--redis-wait-timeout", "300"))
        for n in nodes:
            status, body = n.ready()
            check(f"{n.name}: ready through the Sentinels (the first of the list down; their password and the data nodes')",
                  status == 200, str(body))
        status, body = nodes[0].http("GET", "/api/cluster")
        check("GET /api/cluster: the primary the Sentinels named, its role and its replica online",
              body["redis"]["primary"] == f"127.0.0.1:{s.primary_port}" and body["redis"]["role"] == "master"
              and [r["state"] for r in body["redis"]["replicas"]] == ["online"] and body["redis"]["wait"] == 1, str(body))
        ws = await connect(nodes[0].url)
        for name in ("s1", "s2"):
            await ws.send(json.dumps({"type": "join", "session": name, "create": True, "id": name}))
            while (m := json.loads(await ws.recv())).get("type") == "presence":
                pass
            check(f"session {name} created", m.get("type") == "joined", str(m))
        await ws.close()

        stop = asyncio.Event()
        urls = [n.url for n in nodes]
        # Writers go on until after the failover (their count is set then).
        writers = [Writer(i, urls, 1_000_000, stop) for i in range(4)]
        tasks = [asyncio.create_task(w.run()) for w in writers]
        await asyncio.sleep(1.0)
        # Freeze the replica, let commands pile up on the primary, then kill it.
        print(f"   at the freeze: {[len(w.acked) for w in writers]} acknowledged", flush=True)
        epoch_before = nodes[0].http("GET", "/api/sessions/s1")[1]["epoch"]
        s.replica.send_signal(signal.SIGSTOP)
        await asyncio.sleep(0.5)
        killed_at = time.monotonic()
        s.primary.kill()
        s.primary.wait()
        s.replica.send_signal(signal.SIGCONT)
        status, body = await asyncio.get_running_loop().run_in_executor(None, nodes[0].not_ready, 5)
        check("the primary gone: /readyz is 503 with the reason", status == 503 and "store" in body.get("reason", ""), str(body))
        print(f"   not ready: {body.get('reason')}", flush=True)
        moved = None
        for _ in range(300):
            host, port = s.primary_now()
            if int(port) == s.replica_port:
                moved = time.monotonic() - killed_at
                break
            await asyncio.sleep(0.05)
        linked = None
        for _ in range(200):
            body = nodes[0].http("GET", "/api/cluster")[1]
            if body["redis"]["primary"] == f"127.0.0.1:{s.replica_port}" and body["redis"]["link"] == "up":
                linked = time.monotonic() - killed_at
                break
            await asyncio.sleep(0.05)
        print(f"   promoted after {moved or 0:.2f} s, the nodes on it after {linked or 0:.2f} s: {[len(w.acked) for w in writers]} acknowledged", flush=True)
        check("the Sentinels promoted the replica", moved is not None)
        # The old primary comes back on its port as a replica of the new one (as an
        # orchestrator restarts it; the Sentinels would convert it too, some 10 s later),
        # and WAIT 1 can be met again.
        s.primary, _ = start_redis("sentinel-primary-again", "--dir", s.dir + "/p", "--replicaof", "127.0.0.1", str(s.replica_port),
                                   "--requirepass", DATA_PW, "--masterauth", DATA_PW, *s.tls_args, port=s.primary_port)
        reasons = []
        for _ in range(300):
            answers = [n.http("GET", "/readyz") for n in nodes]
            if all(a[0] == 200 for a in answers):
                break
            for a in answers:
                if a[0] != 200 and (not reasons or reasons[-1][1] != a[1]["reason"]):
                    reasons.append((round(time.monotonic() - killed_at, 2), a[1]["reason"]))
            await asyncio.sleep(0.1)
        print(f"   not ready meanwhile: {reasons}", flush=True)
        back = time.monotonic() - killed_at
        print(f"   ready again after {back:.2f} s: {[len(w.acked) for w in writers]} acknowledged", flush=True)
        check("both nodes are ready again on the new primary", all(n.http("GET", "/readyz")[0] == 200 for n in nodes))
        epoch_after = nodes[1].http("GET", "/api/sessions/s1")[1]["epoch"]
        check(f"the new primary's epoch keeps the session's lineage, so clients resend rather than reset ({epoch_before} -> {epoch_after})",
              epoch_after != epoch_before and epoch_after.startswith(epoch_before.split("/")[0] + "/"))
        check("every writer got every command it sent acknowledged, after the failover too",
              await drain(writers, tasks, stop, 100, 90), str([(len(w.acked), w.count) for w in writers]))
        unconfirmed = sum(w.errors.count("unconfirmed") for w in writers)
        r = s.redis(s.replica_port, DATA_PW, decode_responses=True)
        for name in ("s1", "s2"):
            ok, n = acked_once(r, name, writers)
            check(f"{name}: every acknowledged command is in the new primary's log, exactly once ({n}); none made two revisions", ok)
        status, body = nodes[1].http("GET", "/api/cluster")
        check("GET /api/cluster names the new primary", body["redis"]["primary"] == f"127.0.0.1:{s.replica_port}", str(body["redis"]))
        check("the nodes logged the Sentinels' move", "moved from" in nodes[0].logged())
        print(f"   failover: Sentinels promoted the replica {moved or 0:.2f} s after the kill; nodes ready again after {back:.2f} s; "
              f"{unconfirmed} commands answered unconfirmed and resent", flush=True)
    finally:
        Node.stop_all()
        s.stop()


async def scenario_sentinel_tls():
    """rediss+sentinel://: TLS to the Sentinels and to the data nodes they name, through
    a failover (no load: the one under load is scenario_sentinel)."""
    s = Sentinels(tls=True)
    try:
        node = Node("stls", s.url, "--redis-wait", "1")
        status, body = node.ready()
        check("rediss+sentinel://: ready over TLS to the Sentinels and the primary", status == 200, str(body))
        check("...and a command is acknowledged (a replica confirming it)", node.command_confirmed(1)[1].get("rev") == 1)
        s.primary.kill()
        s.primary.wait()
        moved = False
        for _ in range(200):
            if node.http("GET", "/api/cluster")[1]["redis"]["primary"] == f"127.0.0.1:{s.replica_port}":
                moved = True
                break
            await asyncio.sleep(0.05)
        check("...the primary killed: the node follows the Sentinels to the new one", moved)
        s.primary, _ = start_redis("sentinel-tls-primary-again", "--dir", s.dir + "/p", "--replicaof", "127.0.0.1", str(s.replica_port),
                                   "--requirepass", DATA_PW, "--masterauth", DATA_PW, *s.tls_args, port=s.primary_port)
        status, body = node.ready(20)
        check("...and is ready there, its replica back", status == 200, str(body))
        status, body = node.command_confirmed(2)
        check("...and acknowledges on the new primary, the session's revisions going on", body.get("rev") == 2, f"{status} {body}")
    finally:
        Node.stop_all()
        s.stop()


NAVSYNC_PW = "navsync-secret"
# The ACL user of docs/cluster.md's recipe, as a line of an ACL file.
ACL_RULES = ("on ~navsync:* &navsync:* &navsync:{*}:live -@all +@read +@write +@scripting +@pubsub "
             "+@connection +info +role +wait")


class RecipeRedis:
    """docs/cluster.md's failover recipe on loopback: a primary, two replicas and three
    Sentinels; the navsync ACL user defined on every Redis (`how`: "aclfile", each
    loading the same ACL file, or "setuser", ACL SETUSER run on each), as the recipe
    says, so a promoted replica has it."""

    def __init__(self, how):
        self.how, self.dir = how, os.path.abspath(f"{OUT}/managed-recipe-{how}")
        subprocess.run(["rm", "-rf", self.dir])
        os.makedirs(self.dir)
        self.acl = f"{self.dir}/users.acl"
        with open(self.acl, "w") as f:
            f.write("user default on nopass ~* &* +@all\n")
            f.write(f"user navsync {ACL_RULES} >{NAVSYNC_PW}\n")
        self.ports = [free_port() for _ in range(3)]
        self.procs = [None, None, None]
        self.start(0)
        self.start(1, replica_of=self.ports[0])
        self.start(2, replica_of=self.ports[0])
        self.sentinel_ports, self.sentinels = [], []
        for i in range(3):
            port = free_port()
            self.sentinels.append(start_sentinel(self.dir, i, port, self.ports[0], extra="sentinel parallel-syncs navsync 2\n"))
            self.sentinel_ports.append(port)
        for _ in range(150):
            known = [redis.Redis(port=p).sentinel_master("navsync") for p in self.sentinel_ports]
            if all(k["num-other-sentinels"] == 2 and k["num-slaves"] == 2 for k in known):
                return
            time.sleep(0.1)
        raise RuntimeError("the Sentinels did not settle")

    def start(self, i, replica_of=None):
        d = f"{self.dir}/r{i}"
        os.makedirs(d, exist_ok=True)
        args = ["redis-server", "--port", str(self.ports[i]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--repl-diskless-sync-delay", "0", "--dir", d]
        if self.how == "aclfile":
            args += ["--aclfile", self.acl]
        if replica_of:
            args += ["--replicaof", "127.0.0.1", str(replica_of)]
        self.procs[i] = subprocess.Popen(args, stdout=open(f"{d}/redis.log", "a"), stderr=subprocess.STDOUT)
        if not wait_port(self.ports[i]):
            raise RuntimeError(f"redis {i} did not start")
        if self.how == "setuser":
            redis.Redis(port=self.ports[i]).execute_command("ACL", "SETUSER", "navsync", *ACL_RULES.split(), f">{NAVSYNC_PW}")

    @property
    def url(self):
        return "redis+sentinel://navsync@" + ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports) + "/navsync"

    def primary(self):
        host, port = redis.Redis(port=self.sentinel_ports[0], decode_responses=True).sentinel_get_master_addr_by_name("navsync")
        return self.ports.index(int(port))

    def stop(self):
        for p in self.sentinels + self.procs:
            try:
                p.kill()
                p.wait()
            except Exception:
                pass


class PackageWriter:
    """A QA script's loop through the Python package: commands one after another on
    both nodes' URLs; a call that raises is counted (it must never happen)."""

    def __init__(self, index, urls, session, stop):
        self.index, self.urls, self.session, self.stop = index, urls, session, stop
        self.acked, self.raised, self.client = {}, [], None

    async def run(self):
        import navsync
        async with navsync.connect(self.urls[self.index % 2:] + self.urls[:self.index % 2], self.session, name=f"qa{self.index}") as s:
            self.client = s.client
            n = 0
            while not self.stop.is_set():
                n += 1
                try:
                    ack = await s.command([{"op": "update", "at": "App", "data": {f"qa{self.index}": n}}])
                    self.acked[ack.id] = ack.rev
                except Exception as e:
                    self.raised.append(f"{type(e).__name__}: {e}")
                await asyncio.sleep(0.02)


async def scenario_recipe(how):
    """The recipe run as written, the primary SIGKILLed under load three times: writes
    resume with nothing done by hand (the time printed), every acknowledged command is
    in the log once, and the Python package's calls never raise."""
    rr = RecipeRedis(how)
    pwfile = f"{rr.dir}/redis-password"
    with open(pwfile, "w") as f:
        f.write(NAVSYNC_PW + "\n")
    try:
        for i in range(2):   # this run's logs only (the checks read them)
            subprocess.run(["rm", "-f", f"{OUT}/managed-node-r{how[0]}{i}.log"])
        nodes = [Node(f"r{how[0]}{i}", rr.url, "--redis-password-file", pwfile, "--redis-wait", "1") for i in range(2)]
        for n in nodes:
            status, body = n.ready(20)
            check(f"{how}: {n.name} is ready through the Sentinels as the ACL user, with two replicas", status == 200, str(body))
        status, body = nodes[0].http("GET", "/api/cluster")
        check(f"{how}: two replicas online", [r["state"] for r in body["redis"]["replicas"]] == ["online", "online"], str(body["redis"]))
        stop = asyncio.Event()
        urls = [n.url for n in nodes]
        qa = [PackageWriter(i, urls, "demo", stop) for i in range(4)]
        tasks = [asyncio.create_task(w.run()) for w in qa]
        resumed_after, probe = [], 0
        for round_ in range(3):
            await asyncio.sleep(1.0)
            victim = rr.primary()
            killed_at = time.monotonic()
            rr.procs[victim].kill()
            rr.procs[victim].wait()
            # A fresh command on node 0, again and again, until one is acknowledged.
            resumed = None
            while time.monotonic() - killed_at < 30:
                probe += 1
                status, body = await asyncio.get_running_loop().run_in_executor(None, lambda: nodes[0].http(
                    "POST", "/api/sessions/demo/commands", {"id": f"probe-{how}-{probe}", "ops": [{"op": "update", "at": "App", "data": {"probe": probe}}]}))
                if status == 200:
                    resumed = time.monotonic() - killed_at
                    break
                await asyncio.sleep(0.1)
            resumed_after.append(resumed)
            print(f"   {how}: primary {victim} killed; writes resumed after {resumed if resumed is None else round(resumed, 2)} s "
                  f"on {rr.primary()}, nothing done by hand", flush=True)
            # As an orchestrator would, the dead one comes back, as a replica of the new primary.
            rr.start(victim, replica_of=rr.ports[rr.primary()])
            for _ in range(100):
                body = nodes[0].http("GET", "/api/cluster")[1]
                if [r["state"] for r in body["redis"]["replicas"]] == ["online", "online"]:
                    break
                await asyncio.sleep(0.1)
        check(f"{how}: after each of 3 primary kills writes resumed by themselves (goal <= 5 s): {[r if r is None else round(r, 2) for r in resumed_after]} s",
              all(r is not None and r <= 10 for r in resumed_after), resumed_after)
        await asyncio.sleep(1.0)
        stop.set()
        _, unfinished = await asyncio.wait(tasks, timeout=60)
        check(f"{how}: every QA script's session closed within 60 s of the stop", not unfinished, f"{len(unfinished)} still open")
        for t in unfinished:
            t.cancel()
        raised = [e for w in qa for e in w.raised]
        check(f"{how}: the Python package's calls never raised ({sum(len(w.acked) for w in qa)} acknowledged)", not raised, raised[:3])
        r = redis.Redis(port=rr.ports[rr.primary()], decode_responses=True)
        from cluster_faults import log_of
        _, entries = log_of(r, "demo")
        acked = [(w.client, i) for w in qa for i in w.acked]
        missing = [k for k in acked if entries.count(k) != 1]
        check(f"{how}: every acknowledged command ({len(acked)}) is in the new primary's log exactly once", not missing, missing[:3])
        for n in nodes:
            # An ordinary failover (a new epoch, every revision kept) is not a loss; a
            # revision going back is, though only of commands never acknowledged (the
            # log check above): that is the one warning allowed.
            lost = [line for line in n.logged().splitlines() if "lost writes" in line]
            check(f"{how}: {n.name} warned of lost writes only where a revision went back, of writes it never acknowledged ({len(lost)} such)",
                  all("went back from revision" in line and "never acknowledged" in line for line in lost), lost[:2])
    finally:
        Node.stop_all()
        rr.stop()


async def main():
    if not ONLY or "acl" in ONLY:
        print("-- acl", flush=True)
        scenario_acl()
    if not ONLY or "tls" in ONLY:
        print("-- tls", flush=True)
        scenario_tls()
    if not ONLY or "wait" in ONLY:
        print("-- wait", flush=True)
        await scenario_wait()
    if not ONLY or "hold" in ONLY:
        print("-- hold", flush=True)
        scenario_hold()
    if not ONLY or "sentinel" in ONLY:
        print("-- sentinel", flush=True)
        await scenario_sentinel()
    for how in ("aclfile", "setuser"):
        if not ONLY or "recipe" in ONLY or f"recipe-{how}" in ONLY:
            print(f"-- recipe ({how})", flush=True)
            await scenario_recipe(how)
    if not ONLY or "sentinel-tls" in ONLY:
        print("-- sentinel-tls", flush=True)
        await scenario_sentinel_tls()


if __name__ == "__main__":
    asyncio.run(main())
    finish("cluster_managed")
