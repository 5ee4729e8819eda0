// navsync.js: the browser client of navsync (docs/javascript.md; served by navsyncd at /navsync.js).
//
// One ES module, no dependencies, no build step. It speaks the navsync WebSocket
// protocol (docs/protocol.md): it says hello (resuming its client identity), joins
// sessions, keeps a mirror of each session's state by applying the server's RFC 6902
// patches in revision order (and asks for the missed ones, or a snapshot, on a gap),
// sends commands as promises, and reconnects by itself across a list of URLs.
//
//   import { connect } from "http://HOST:PORT/navsync.js";
//   const client = connect("ws://HOST:PORT/ws", { token, name: "kiosk" });
//   const s = client.session("demo");
//   s.subscribe(() => render(s.getSnapshot()));   // {state, rev, epoch, flow, members, others, status, error}
//   await s.push("detail", { id: 42 });
//
// Types: /navsync.d.ts. Guide: docs/javascript.md.

/** An error the server answered (`code` as in docs/protocol.md), or one of this
 *  module's own: `closed` (the client was closed), `rejected` (the server refused the
 *  connection for good: a bad token, a forbidden origin), `deleted`, `lost`, `timeout`
 *  (no answer within the call's deadline), `reset` (the session was made anew while
 *  away). `new NavsyncError({code, …})` makes the class for its code (GuardedError,
 *  ConflictError, DeadlineError…, each a NavsyncError), so `e instanceof GuardedError`
 *  tells one kind and `e instanceof NavsyncError` every kind. */
export class NavsyncError extends Error {
  constructor(fields) {
    const kind = ERROR_CLASSES[fields.code];
    if (new.target === NavsyncError && kind) return new kind(fields);
    const { code, message, op, rev, guard, route, entry, chain, details, retryAfter } = fields;
    super(message || code);
    this.name = new.target.name;
    this.code = code;
    if (op !== undefined) this.op = op;
    if (rev !== undefined) this.rev = rev;
    // `guarded` and `redirect_loop`: the flow's guard, and the route and entry it protects.
    if (guard !== undefined) { this.guard = guard; this.route = route; this.entry = entry; }
    // `redirect_loop`: each redirect taken, {guard, route, link}, the one that failed again last.
    if (chain !== undefined) this.chain = chain;
    // `refused`: what the app's backend said beside its message (docs/backend.md).
    if (code === "refused") this.details = details || {};
    // `unavailable`: seconds after which the same command may be sent again.
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}
/** `guarded`: a guard of the flow refused the command (`guard`, `route`, `entry`). */
export class GuardedError extends NavsyncError {}
/** `redirect_loop`: redirects went round in a circle (`chain`). */
export class RedirectLoopError extends GuardedError {}
/** `conflict`: with onConflict reject, the command's coordinators changed after its base (`rev`). */
export class ConflictError extends NavsyncError {}
/** `unknown_route`, `bad_params`, `invalid_op`, `not_found`, `bad_request`, `bad_json`: the command does not fit. */
export class InvalidCommandError extends NavsyncError {}
/** `forbidden`: the token's role or sessions do not allow it. */
export class ForbiddenError extends NavsyncError {}
/** `unavailable` / `unconfirmed` after every resend, `rate_limited`: try again later. */
export class UnavailableError extends NavsyncError {}
/** `refused`: the app's backend refused the command through its command hook (`message`, `details`). */
export class RefusedError extends NavsyncError {}
/** `timeout`: no answer within the call's deadline (the server is named). */
export class DeadlineError extends NavsyncError {}
/** `reset`: the session was made anew while this client was away; the command was not sent to it. */
export class ResetError extends NavsyncError {}
/** `closed`, `deleted`, `lost`, `missing`, `rejected`, `offline`: no session to send to. */
export class ClosedError extends NavsyncError {}
const ERROR_CLASSES = {
  guarded: GuardedError, redirect_loop: RedirectLoopError, conflict: ConflictError,
  unknown_route: InvalidCommandError, bad_params: InvalidCommandError, invalid_op: InvalidCommandError,
  not_found: InvalidCommandError, bad_request: InvalidCommandError, bad_json: InvalidCommandError,
  forbidden: ForbiddenError, unavailable: UnavailableError, unconfirmed: UnavailableError, rate_limited: UnavailableError,
  refused: RefusedError, timeout: DeadlineError, reset: ResetError,
  closed: ClosedError, deleted: ClosedError, lost: ClosedError, missing: ClosedError, rejected: ClosedError, offline: ClosedError,
};

/** Connects to one server, or to the first that answers of a list (a cluster, a
 *  standby). Options: `token`, `name`, `role`, `client` (an identity to resume),
 *  `backoff` {`min`, `max`} in ms, `storage` (where the identity is kept between page
 *  loads; `sessionStorage` by default, `null` for nowhere), `timeout` (ms a command
 *  waits for its answer before it rejects with `timeout`; 10000 by default, 0 for
 *  ever; each command may say its own). */
export function connect(urls, options = {}) {
  return new Client(urls, options);
}

/** The default URL: this page's own server. */
function ownURL() {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
}

/** An epoch's lineage: what stays when a cluster's Redis changes primary
 *  (`LINEAGE/GENERATION`; docs/protocol.md, "Epochs"). */
function lineage(epoch) {
  return String(epoch).split("/")[0];
}

// A tiny event emitter: on(name, fn) returns the function that removes fn.
class Emitter {
  #handlers = new Map();
  on(name, fn) {
    if (!this.#handlers.has(name)) this.#handlers.set(name, new Set());
    this.#handlers.get(name).add(fn);
    return () => this.#handlers.get(name).delete(fn);
  }
  emit(name, value) {
    for (const fn of [...(this.#handlers.get(name) || [])]) {
      try { fn(value); } catch (e) { setTimeout(() => { throw e; }); }  // a handler's bug is not ours
    }
  }
}

class Client extends Emitter {
  constructor(urls, options) {
    super();
    this.urls = (Array.isArray(urls) ? urls : urls ? String(urls).split(",") : [ownURL()]).map((u) => u.trim()).filter(Boolean);
    if (!this.urls.length) throw new TypeError("navsync: connect() needs at least one ws:// URL");
    this.options = options;
    this.backoff = { min: 250, max: 5000, ...(options.backoff || {}) };
    this.storage = options.storage !== undefined ? options.storage : (typeof sessionStorage !== "undefined" ? sessionStorage : null);
    this.clientId = options.client || this.storage?.getItem("navsync.client") || null;
    /** {state: "connecting" | "open" | "reconnecting" | "refused" | "closed", url, reason} */
    this.status = { state: "connecting", url: this.urls[0], reason: "" };
    this.sessions = new Map();
    this.requests = new Map();   // request id -> {resolve, reject}: replies that are not commands
    this.nextRequest = 1;
    this.urlIndex = 0;
    this.attempts = 0;
    this.ws = null;
    this.closed = false;
    this.welcomed = false;
    // The browser says the network is back: no need to wait out the backoff.
    this.onOnline = () => this.reconnectNow();
    if (typeof addEventListener === "function") addEventListener("online", this.onOnline);
    this.#open();
  }

  /** The network is back (the browser's `online` event calls it too): a wait before
   *  the next attempt ends now and the backoff starts over. */
  reconnectNow() {
    if (this.closed || this.status.state !== "reconnecting" || this.ws) return;
    clearTimeout(this.retryTimer);
    this.attempts = 0;
    this.#open();
  }

  /** A session of this client: joined now (or when connected), rejoined after every
   *  reconnect. Options: `create` (admin: make it if missing, with `flow`). */
  session(name, options = {}) {
    this.#alive();
    let s = this.sessions.get(name);
    if (!s) {
      s = new Session(this, name, options);
      this.sessions.set(name, s);
      if (this.welcomed) s._join();
    }
    return s;
  }

  /** The sessions on the server: [{session, flow, rev, members}]. */
  async list() {
    return (await this.request({ type: "sessions" })).sessions;
  }

  /** A fresh token for the live connection (a JWT about to expire): resolves to
   *  {role, expires} (expires: seconds since the epoch); rejects, leaving the old token in
   *  force, when it is refused or would raise the role. Later reconnects say hello with it. */
  async refreshToken(token) {
    const reply = await this.request({ type: "auth", token });
    this.options.token = token;
    return { role: reply.role, expires: reply.expires };
  }

  /** Closes the connection for good; every pending promise rejects with `closed`. */
  close() {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.retryTimer);
    if (typeof removeEventListener === "function") removeEventListener("online", this.onOnline);
    if (this.ws) { this.ws.onclose = null; this.ws.close(1000, "client closed"); }
    const error = new NavsyncError({ code: "closed", message: "the navsync client was closed" });
    for (const r of this.requests.values()) r.reject(error);
    this.requests.clear();
    for (const s of this.sessions.values()) s._closed(error);
    this.#setStatus("closed", "closed by the page");
  }

  // ---- internals (used by Session) ----

  send(message) {
    if (this.ws && this.ws.readyState === 1 && this.welcomed) { this.ws.send(JSON.stringify(message)); return true; }
    return false;
  }

  /** A request that is not a command (`sessions`, `get`, `history`, `auth`): its
   *  reply, or `timeout` after `timeout` ms (the client's, 10000 by default; 0: for
   *  ever). A reply that comes after the deadline is dropped. */
  request(message, timeout = this.options.timeout ?? 10000) {
    this.#alive();
    return new Promise((resolve, reject) => {
      const id = "r" + this.nextRequest++;
      const timer = timeout > 0 ? setTimeout(() => {
        if (!this.requests.delete(id)) return;
        reject(new NavsyncError({ code: "timeout", message: "no answer from " + (this.status.url || "the server") + " within " +
          timeout / 1000 + " s to " + message.type }));
      }, timeout) : null;
      const done = (fn) => (value) => { clearTimeout(timer); fn(value); };
      this.requests.set(id, { resolve: done(resolve), reject: done(reject) });
      if (!this.send({ ...message, id })) {
        this.requests.delete(id);
        clearTimeout(timer);
        reject(new NavsyncError({ code: "offline", message: "not connected to navsync right now" }));
      }
    });
  }

  #alive() {
    if (this.closed) throw new NavsyncError({ code: "closed", message: "the navsync client was closed" });
  }

  #setStatus(state, reason = "") {
    this.status = { state, url: this.urls[this.urlIndex], reason };
    this.emit("status", this.status);
    for (const s of this.sessions.values()) s._connection(state, reason);
  }

  #open() {
    const url = this.urls[this.urlIndex];
    let ws;
    try {
      ws = new WebSocket(url, "navsync.v1");
    } catch (e) {
      // A malformed URL never gets better: say so and stop.
      return this.#refuse("bad URL " + url + ": " + e.message);
    }
    this.ws = ws;
    this.welcomed = false;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      const hello = { type: "hello", id: "hello", name: this.options.name || "web" };
      if (this.options.role) hello.role = this.options.role;
      if (this.options.token) hello.token = this.options.token;
      if (this.clientId) hello.client = this.clientId;
      ws.send(JSON.stringify(hello));
    };
    // A server that stops answering (a stalled node) is pinged after 5 s of silence
    // and given up after 10, so the client moves to the next URL.
    let silent = 0;
    const beat = setInterval(() => {
      if (!opened) return;
      silent += 1;
      if (silent === 5) ws.send(JSON.stringify({ type: "ping" }));
      if (silent >= 10) {
        ws.onclose = ws.onmessage = null;
        try { ws.close(); } catch { /* already closing */ }
        lost({ code: 1006, reason: "the server stopped answering" });
      }
    }, 1000);
    ws.onmessage = (event) => { silent = 0; this.#receive(event.data); };
    const lost = (event) => {
      clearInterval(beat);
      this.ws = null;
      this.welcomed = false;
      for (const r of this.requests.values()) r.reject(new NavsyncError({ code: "offline", message: "the connection closed before the answer" }));
      this.requests.clear();
      if (this.closed) return;
      if (event.code === 1008) return this.#refuse(event.reason || "refused by the server (policy)");
      if (opened) this.attempts = 0;
      this.#retry(opened ? (event.reason === "the server stopped answering" ? event.reason : "connection lost") : null, url);
    };
    ws.onclose = lost;
  }

  /** Waits (capped, jittered, growing) and tries the next URL. Before the first
   *  retry of a URL that never opened, it asks the server's /healthz why: gone, or
   *  up but refusing this page's origin (which retrying cannot fix). */
  async #retry(reason, url) {
    if (!reason) reason = await this.#diagnose(url);
    if (this.closed || this.status.state === "refused") return;
    this.#setStatus("reconnecting", reason);
    const delay = Math.min(this.backoff.max, this.backoff.min * 2 ** Math.min(this.attempts++, 10));
    this.urlIndex = (this.urlIndex + 1) % this.urls.length;
    this.retryTimer = setTimeout(() => this.#open(), delay / 2 + Math.random() * delay / 2);
  }

  async #diagnose(url) {
    const http = url.replace(/^ws/, "http").replace(/^(https?:\/\/[^/]+).*$/, "$1") + "/healthz";
    try {
      const r = await fetch(http, { cache: "no-store" });
      if (r.headers.get("X-Navsync-Origin") === "refused") {
        this.#refuse("this page's origin " + location.origin + " is not allowed by " + url +
          " (start navsyncd with --allow-origin " + location.origin + ")");
        return null;
      }
      return "the server at " + url + " refused the connection (full, or shutting down)";
    } catch {
      return "no server answers at " + url;
    }
  }

  /** The server refused us for good (bad token, forbidden origin): no more retries. */
  #refuse(reason) {
    clearTimeout(this.retryTimer);
    if (this.ws) { this.ws.onclose = null; this.ws.close(); this.ws = null; }
    this.#setStatus("refused", reason);
    const error = new NavsyncError({ code: "rejected", message: reason });
    for (const s of this.sessions.values()) s._refused(error);
  }

  #receive(text) {
    let m;
    try {
      m = JSON.parse(text);
      if (!m || typeof m !== "object" || typeof m.type !== "string") throw new Error("not a message object");
    } catch {
      // A message we cannot read may have been a patch: every mirror catches up.
      for (const s of this.sessions.values()) s._resync("unreadable message from the server");
      return;
    }
    if (m.type === "welcome") {
      this.clientId = m.client;
      try { this.storage?.setItem("navsync.client", m.client); } catch { /* storage full or blocked */ }
      this.welcomed = true;
      this.attempts = 0;
      this.#setStatus("open");
      for (const s of this.sessions.values()) s._join();
      return;
    }
    if (m.type === "error" && m.id === "hello") {
      // A bad token in hello: retrying with the same token cannot help.
      return this.#refuse(m.message);
    }
    const waiting = m.id !== undefined && this.requests.get(m.id);
    if (waiting) {
      this.requests.delete(m.id);
      if (m.type === "error") waiting.reject(new NavsyncError(m)); else waiting.resolve(m);
      return;
    }
    // Errors name no session: they find theirs by the id of what they answer.
    let session = m.session !== undefined ? this.sessions.get(m.session) : undefined;
    if (!session && m.id !== undefined) session = [...this.sessions.values()].find((s) => s._owns(m.id));
    if (session) return session._receive(m);
    if (m.type === "error") this.emit("error", new NavsyncError(m));
  }
}

// A JSON Patch target path, split into its tokens (RFC 6901).
function tokens(path) {
  if (path === "") return [];
  if (path[0] !== "/") throw new Error("bad JSON pointer " + path);
  return path.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

// The parent of `path` and its last token. The document sits in a holder under the key
// "doc", so `""` (the whole document) has a parent like any other path.
function parentOf(holder, path) {
  const t = ["doc", ...tokens(path)];
  let node = holder;
  for (const key of t.slice(0, -1)) {
    node = Array.isArray(node) ? node[index(node, key, false)] : node[key];
    if (node === null || typeof node !== "object") throw new Error("no " + path);
  }
  return [node, t[t.length - 1]];
}

function index(array, key, forInsert) {
  if (key === "-" && forInsert) return array.length;
  if (!/^(0|[1-9][0-9]*)$/.test(key)) throw new Error("bad array index " + key);
  const i = Number(key);
  if (i > array.length || (!forInsert && i === array.length)) throw new Error("array index out of range " + key);
  return i;
}

// JSON equality: objects by their members in any order, arrays item by item.
function equal(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.prototype.hasOwnProperty.call(b, k) && equal(a[k], b[k]));
}

/** Applies an RFC 6902 patch to a copy of `doc`; throws on any op that does not fit,
 *  and then the mirror asks for a snapshot instead of guessing. */
export function applyPatch(doc, ops) {
  const holder = { doc: structuredClone(doc) };
  const read = (path) => {
    let node = holder;
    for (const key of ["doc", ...tokens(path)]) {
      if (node === null || typeof node !== "object") throw new Error("no " + path);
      node = Array.isArray(node) ? node[index(node, key, false)] : (key in node ? node[key] : undefined);
      if (node === undefined) throw new Error("no " + path);
    }
    return node;
  };
  const remove = (path) => {
    const [p, k] = parentOf(holder, path);
    if (Array.isArray(p)) return p.splice(index(p, k, false), 1)[0];
    if (!(k in p)) throw new Error("no " + path);
    const v = p[k]; delete p[k]; return v;
  };
  const value = (op) => {
    if (!("value" in op) || op.value === undefined) throw new Error("'" + op.op + "' at " + op.path + " has no value");
    return structuredClone(op.value);
  };
  const add = (path, value) => {
    const [p, k] = parentOf(holder, path);
    if (Array.isArray(p)) p.splice(index(p, k, true), 0, value); else p[k] = value;
  };
  for (const op of ops) {
    switch (op.op) {
      case "add": add(op.path, value(op)); break;
      case "remove": remove(op.path); break;
      case "replace": { const v = value(op); remove(op.path); add(op.path, v); break; }
      case "move": add(op.path, remove(op.from)); break;
      case "copy": add(op.path, structuredClone(read(op.from))); break;
      case "test": if (!equal(read(op.path), value(op))) throw new Error("test failed at " + op.path); break;
      default: throw new Error("unknown patch op " + op.op);
    }
  }
  return holder.doc;
}

let commandCounter = 0;
const commandPrefix = "js" + Math.random().toString(36).slice(2, 8);

class Session extends Emitter {
  constructor(client, name, options) {
    super();
    this.client = client;
    this.name = name;
    this.options = options;
    this.everJoined = false;
    this.pending = new Map();   // command id -> {message, resolve, reject}: resent after a reconnect
    this.joining = false;
    this.joinID = "join:" + name;
    // Bound, so they can be handed over as they are: useSyncExternalStore(s.subscribe, s.getSnapshot).
    this.subscribe = this.subscribe.bind(this);
    this.getSnapshot = this.getSnapshot.bind(this);
    // What getSnapshot() returns: a new frozen object on every change, the same one between.
    this.snapshot = Object.freeze({ state: null, rev: -1, epoch: null, flow: null, members: [], others: 0, status: "connecting", error: null });
  }

  // ---- reading ----

  /** {state, rev, epoch, flow, members, others, status, error}; the same object until
   *  the next change. `status`: connecting, joining, live, offline, missing (the
   *  session does not exist), lost (it was lost while we were away), deleted, refused,
   *  error, closed. */
  getSnapshot() { return this.snapshot; }

  /** Calls `fn` after every change; returns the function that stops it. */
  subscribe(fn) { return this.on("change", fn); }

  // ---- commands ----

  /** Sends one command (the ops apply atomically, as one revision). Resolves to the
   *  ack {rev, results, duplicate?, created?}; rejects with a NavsyncError. While
   *  offline, the command waits and goes out once rejoined; resent with its id after a
   *  reconnect, it is applied once. Options: `base`, `onConflict`, `label`, `id`.
   *  The promise also carries the command's `id` and `ref(n)`: `"~ID.n"`, the n-th
   *  entry it makes, which the next commands may name before the answer comes
   *  (docs/protocol.md, "References to one's own entries"); `ack.created` lists the
   *  ids the server gave them. */
  command(ops, options = {}) {
    if (this.client.closed) return Promise.reject(new NavsyncError({ code: "closed", message: "the navsync client was closed" }));
    if (["deleted", "refused", "missing", "lost"].includes(this.snapshot.status)) {
      const code = this.snapshot.status === "refused" ? "rejected" : this.snapshot.status;
      return Promise.reject(new NavsyncError({ code, message: this.snapshot.error || "session " + this.snapshot.status }));
    }
    const message = { type: "command", session: this.name, id: options.id ?? commandPrefix + "-" + (++commandCounter), ops };
    for (const key of ["base", "onConflict", "label"]) if (options[key] !== undefined) message[key] = options[key];
    const timeout = options.timeout ?? this.client.options.timeout ?? 10000;
    const promise = new Promise((resolve, reject) => {
      let timer = null;
      const done = (f) => (v) => { if (timer) clearTimeout(timer); f(v); };
      this.pending.set(message.id, { message, resolve: done(resolve), reject: done(reject) });
      if (timeout > 0) {
        timer = setTimeout(() => {
          if (!this.pending.has(message.id)) return;
          this.pending.delete(message.id);
          reject(new NavsyncError({ code: "timeout", message: "no answer from " + (this.client.status.url || "the server") + " within " + timeout
            + " ms to command " + message.id + "; it may or may not have been applied (send it again with the same id to find out)" }));
        }, timeout);
      }
      if (this.snapshot.status === "live") this.client.send(message);
    });
    promise.id = message.id;
    promise.ref = (n = 0) => "~" + message.id + "." + n;
    // A lone push or present: until it is answered, it opened the screen this device
    // goes back from (`back()` names it by reference).
    if (ops.length === 1 && ["push", "route", "present"].includes(ops[0]?.op)) {
      this.lastOpened = message.id;
      const forget = () => { if (this.lastOpened === message.id) this.lastOpened = undefined; };
      promise.then(forget, forget);
    }
    return promise;
  }

  // One helper per operation (docs/protocol.md, "Operations"). The last argument may be an
  // options object: `at` (the coordinator) and `hints` go in the op, the rest
  // (`base`, `onConflict`, `label`) in the command.
  #op(op, fields, options = {}) {
    const { at, hints, ...commandOptions } = options;
    const o = { op, ...fields };
    for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
    if (at !== undefined) o.at = at;
    if (hints !== undefined) o.hints = hints;
    return this.command([o], commandOptions);
  }
  push(route, params, options) { return this.#op("push", { route, params }, options); }
  route(route, params, options) { return this.#op("route", { route, params }, options); }
  present(route, params, style, options) { return this.#op("present", { route, params, style }, options); }
  pop(count, options) { return this.#op("pop", { count }, options); }
  /** Pops the top entry this device shows (`pop` `from` it): two devices pressing
   *  Back at once pop one screen, not two. */
  back(options) {
    // A screen this device pushed and the server has not answered yet: by reference.
    if (this.lastOpened !== undefined && this.pending.has(this.lastOpened)) {
      const opened = this.lastOpened;
      this.lastOpened = undefined;
      return this.#op("pop", { from: "~" + opened + ".0" }, options);
    }
    const top = this.topEntry();
    return top ? this.#op("pop", { from: top.id }, options) : this.#op("pop", {}, options);
  }
  popToRoot(options) { return this.#op("popToRoot", {}, options); }
  popToFirst(route, options) { return this.#op("popToFirst", { route }, options); }
  popToLast(route, options) { return this.#op("popToLast", { route }, options); }
  popTo(entry, options) { return this.#op("popTo", { entry }, options); }
  popBefore(route, options) { return this.#op("popBefore", { route }, options); }
  dismiss(all, options) { return this.#op("dismiss", { all: all || undefined }, options); }
  setRoot(route, params, options) { return this.#op("setRoot", { route, params }, options); }
  setStack(routes, options) { return this.#op("setStack", { routes }, options); }
  /** One layer's pushes (layer 0: on the root screen; N: on the Nth sheet or cover) set
   *  to `routes`, every layer above kept: what a path binding writes. Options: `layer`. */
  setPath(routes, { layer, ...options } = {}) { return this.#op("setPath", layer ? { routes, layer } : { routes }, options); }
  jumpTo(routes, options) { return this.#op("jumpTo", { routes }, options); }
  restart(options) { return this.#op("restart", {}, options); }
  /** By route name (a string), index (a number), or `{entry}`. */
  select(tab, options) {
    const f = typeof tab === "number" ? { index: tab } : typeof tab === "string" ? { route: tab } : { entry: tab.entry };
    return this.#op("select", f, options);
  }
  setTabs(routes, options) { return this.#op("setTabs", { routes }, options); }
  appendTab(route, params, options) { return this.#op("appendTab", { route, params }, options); }
  insertTab(route, params, index, options) { return this.#op("insertTab", { route, params, index }, options); }
  removeFirst(route, options) { return this.#op("removeFirst", { route }, options); }
  removeLast(route, options) { return this.#op("removeLast", { route }, options); }
  removeTab(entry, options) { return this.#op("removeTab", { entry }, options); }
  update(data, entry, options) { return this.#op("update", { data, entry }, options); }
  /** Merges `data` into the session's data, what the flow's guards read (signing in,
   *  filling a cart); the ack's `redirects` say where guards sent the session. */
  updateSession(data, options) { return this.#op("update", { data, scope: "session" }, options); }
  open(url, options) { return this.#op("open", { url }, options); }
  alert(title, message, buttons, options) { return this.#op("alert", { title, message, buttons }, options); }
  respond(alert, button, options) { return this.#op("respond", { alert, button }, options); }
  reset(options) { return this.#op("reset", {}, options); }

  // ---- history (docs/protocol.md, "History") ----

  /** A page of history, newest first: {rev (current), earliest (oldest held),
   *  entries: [{rev, ts, client, name, cmd, ops, results, label?}]}. */
  async history({ before, limit = 100 } = {}) {
    const m = { type: "history", session: this.name, limit };
    if (before !== undefined) m.before = before;
    const reply = await this.client.request(m);
    return { rev: reply.rev, earliest: reply.earliest, entries: reply.entries };
  }

  /** The state of a revision history holds: {rev, state, historic}. Never touches the
   *  mirror. Older than history holds: a NavsyncError `gone`. */
  async stateAt(rev) {
    const reply = await this.client.request({ type: "get", session: this.name, rev });
    return { rev: reply.rev, state: reply.state, historic: reply.historic === true };
  }

  /** Brings back a revision (a number) or the newest revision with a label (a string)
   *  as one new revision, ids included. With `base` and `onConflict: "reject"`, an undo
   *  that refuses to clobber a change made since. */
  restore(revOrLabel, options) {
    return this.#op("restore", typeof revOrLabel === "number" ? { rev: revOrLabel } : { label: revOrLabel }, options);
  }

  /** Tells the other members which revision this device shows (and, optionally,
   *  which entry has focus): presence `status`. */
  rendered(rev, focus) {
    const m = { type: "status", session: this.name, rev };
    if (focus !== undefined) m.focus = focus;
    this.client.send(m);
  }

  /** The entry on top of the active path: what this device shows. */
  topEntry() {
    let c = this.snapshot.state?.root, top = null;
    while (c) {
      const v = c.kind === "root" ? c.current : c.kind === "stack" ? c.stack[c.stack.length - 1] : c.tabs.find((t) => t.id === c.selected);
      if (!v) break;
      if (c.kind === "stack" && c.stack.length > 1) top = v;
      c = v.coordinator;
    }
    return top;
  }

  /** Joins again after `missing`, `lost` or `deleted`, for example with `create`. */
  join(options = {}) {
    this.options = { ...this.options, ...options };
    this.everJoined = false;
    this.#change({ status: "joining", error: null });
    this._join();
  }

  /** Leaves the session; the mirror stops. */
  leave() {
    this.client.send({ type: "leave", session: this.name });
    this.client.sessions.delete(this.name);
    this._closed(new NavsyncError({ code: "closed", message: "left the session" }));
  }

  // ---- internals (called by the client) ----

  #change(fields) {
    this.snapshot = Object.freeze({ ...this.snapshot, ...fields });
    this.emit("change", this.snapshot);
  }

  _join() {
    if (["deleted", "refused", "closed"].includes(this.snapshot.status)) return;
    const m = { type: "join", id: this.joinID, session: this.name };
    const s = this.snapshot;
    if (this.everJoined && s.epoch) { m.since = s.rev; m.epoch = s.epoch; }
    // `create` is for the first join only: a session lost while we were away is
    // reported (`lost`), never silently made anew.
    if (!this.everJoined && this.options.create) { m.create = true; if (this.options.flow) m.flow = this.options.flow; }
    this.joining = true;
    if (this.snapshot.status !== "live") this.#change({ status: "joining" });
    this.client.send(m);
  }

  _owns(id) { return id === this.joinID || this.pending.has(id); }

  _connection(state, reason) {
    if (state === "reconnecting" && ["live", "joining", "connecting"].includes(this.snapshot.status)) this.#change({ status: "offline", error: reason });
  }

  _refused(error) {
    this.#change({ status: "refused", error: error.message });
    this.#rejectAll(error);
  }

  _closed(error) {
    this.#rejectAll(error);
    this.#change({ status: "closed" });
  }

  _resync(reason) {
    if (this.snapshot.status !== "live") return;
    this.emit("resync", { reason });
    this.client.send({ type: "sync", session: this.name, since: this.snapshot.rev, epoch: this.snapshot.epoch });
  }

  #rejectAll(error) {
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }

  _receive(m) {
    switch (m.type) {
      case "joined": return this.#joined(m);
      case "patch": return this.#patch(m);
      case "snapshot":
        this.#change({ state: m.state, rev: m.rev });
        return this.emit("resync", { reason: "snapshot", rev: m.rev });
      case "synced": return;
      case "ack": {
        const p = this.pending.get(m.id);
        if (p) { this.pending.delete(m.id); p.resolve(m); }
        return;
      }
      case "presence": return this.#presence(m);
      case "deleted": {
        const error = new NavsyncError({ code: "deleted", message: "session " + this.name + " was deleted by " + m.by });
        this.#change({ status: "deleted", error: error.message });
        this.#rejectAll(error);
        return this.emit("error", error);
      }
      case "left": return;
      case "error": return this.#error(m);
    }
  }

  #joined(m) {
    this.joining = false;
    const s = this.snapshot;
    let state = s.state, rev = s.rev;
    if (s.epoch && lineage(m.epoch) !== lineage(s.epoch)) {
      // Made anew while we were away (another lineage; another generation of the same
      // one is a cluster's new Redis primary, the same session: what waited is resent):
      // commands that waited were made for the session that is gone, so they fail
      // rather than land on this one.
      const error = new NavsyncError({ code: "reset", message: "session " + this.name + " was made anew (another epoch) while this client was away; the command was not sent to the new one" });
      for (const p of this.pending.values()) p.reject(error);
      this.pending.clear();
      this.emit("reset", { session: this.name, epoch: m.epoch, rev: m.rev });
    }
    if (m.state !== undefined) {
      if (s.epoch && m.epoch !== s.epoch) this.emit("resync", { reason: "epoch", epoch: m.epoch });
      state = m.state; rev = m.rev;
    } else {
      try {
        for (const p of m.patches || []) {
          if (p.rev <= rev) continue;
          if (p.rev !== rev + 1) throw new Error("gap");
          state = applyPatch(state, p.ops); rev = p.rev;
          this.emit("patch", p);
        }
      } catch {
        this.client.send({ type: "get", session: this.name });
      }
    }
    this.everJoined = true;
    this.#change({ state, rev, epoch: m.epoch, flow: m.flow, members: m.members || [], others: m.others || 0, status: "live", error: null });
    // Commands issued while away go out now, with their ids: the server applies each once.
    for (const p of this.pending.values()) this.client.send(p.message);
  }

  #patch(m) {
    const s = this.snapshot;
    if (s.status !== "live" || m.rev <= s.rev) return;   // old news (a resend, a race with a snapshot)
    if (m.rev !== s.rev + 1 || (m.base !== undefined && m.base !== s.rev)) return this._resync("missed revisions " + (s.rev + 1) + "-" + (m.rev - 1));
    let state;
    try { state = applyPatch(s.state, m.ops); } catch (e) { return this._resync("a patch did not apply: " + e.message); }
    this.#change({ state, rev: m.rev });
    this.emit("patch", m);
  }

  #presence(m) {
    let members = this.snapshot.members;
    if (m.left) members = members.filter((x) => !m.left.includes(x.client));
    for (const j of m.joined || []) members = members.filter((x) => x.client !== j.client).concat([j]);
    for (const st of m.status || []) {
      members = members.map((x) => x.client === st.client ? { ...x, rev: st.rev, focus: st.focus } : x);
    }
    this.#change({ members, others: m.others ?? this.snapshot.others });
    this.emit("presence", m);
  }

  #error(m) {
    const error = new NavsyncError(m);
    if (m.id === this.joinID) {
      this.joining = false;
      // Our rejoin found no session: it was lost (a restart without --data), or it
      // never existed (a typo): the page decides whether to create it.
      const status = m.code === "unknown_session" ? (this.everJoined || this.snapshot.epoch ? "lost" : "missing") : "error";
      this.#change({ status, error: m.message });
      this.#rejectAll(error);
      return this.emit("error", error);
    }
    const p = m.id !== undefined && this.pending.get(m.id);
    // Cluster mode: with --redis-wait Redis has it and too few replicas confirmed it yet
    // (unconfirmed), or the node cannot reach Redis, a failover under way (unavailable:
    // nothing applied). The same id again is safe and is answered once the store is
    // back (30 tries, a second apart, or after the `retryAfter` a failed backend hook gives).
    if (p && (m.code === "unconfirmed" || m.code === "unavailable") && (p.unconfirmed = (p.unconfirmed || 0) + 1) <= 30) {
      const after = typeof m.retryAfter === "number" && m.retryAfter >= 0 && m.retryAfter <= 60 ? m.retryAfter * 1000 : 1000;
      setTimeout(() => { if (this.pending.get(m.id) === p) this.client.send(p.message); }, after);
      return;
    }
    if (p) { this.pending.delete(m.id); p.reject(error); return; }
    this.emit("error", error);
  }
}
