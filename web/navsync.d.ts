// Type declarations of navsync.js, the browser client of navsync (docs/javascript.md; served by navsyncd at /navsync.js).
// Served by navsyncd at GET /navsync.d.ts. Guide: docs/javascript.md.

export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

/** Error codes of docs/protocol.md, and the module's own: closed, offline, rejected, deleted, lost, missing, timeout, reset. */
export type ErrorCode =
  | "bad_json" | "bad_request" | "unknown_session" | "unknown_route" | "bad_params" | "invalid_op"
  | "not_found" | "conflict" | "busy" | "forbidden" | "rate_limited" | "too_large" | "full" | "gone"
  | "id_reused" | "guarded" | "redirect_loop" | "unconfirmed" | "unavailable" | "refused" | "internal" | "closed" | "offline" | "rejected" | "deleted" | "lost" | "missing" | "timeout" | "reset";

export class NavsyncError extends Error {
  code: ErrorCode;
  /** The index of the operation that failed, for command errors. */
  op?: number;
  /** The session's current revision, for `conflict`. */
  rev?: number;
  /** For `guarded` and `redirect_loop`: the flow's guard that refused, and the route and entry it protects. */
  guard?: string;
  route?: string;
  entry?: string;
  /** For `redirect_loop`: each redirect taken, the one that failed again last. */
  chain?: { guard: string; route: string; link: string }[];
  /** For `refused`: what the app's backend said beside its message (docs/backend.md). */
  details?: { [key: string]: JSONValue };
  /** For `unavailable`: seconds after which the same command may be sent again. */
  retryAfter?: number;
}
/** `refused`: the app's backend refused the command through its command hook. */
export class RefusedError extends NavsyncError { details: { [key: string]: JSONValue } }
/** `guarded`. */
export class GuardedError extends NavsyncError { guard: string; route: string; entry: string }
/** `redirect_loop`. */
export class RedirectLoopError extends GuardedError { chain: { guard: string; route: string; link: string }[] }
/** `conflict` (`rev`: the current revision). */
export class ConflictError extends NavsyncError { rev: number }
/** `unknown_route`, `bad_params`, `invalid_op`, `not_found`, `bad_request`, `bad_json`. */
export class InvalidCommandError extends NavsyncError {}
/** `forbidden`. */
export class ForbiddenError extends NavsyncError {}
/** `unavailable`, `unconfirmed` (after every resend), `rate_limited`. */
export class UnavailableError extends NavsyncError {}
/** `timeout`: no answer within the call's deadline. */
export class DeadlineError extends NavsyncError {}
/** `reset`: the session was made anew while this client was away. */
export class ResetError extends NavsyncError {}
/** `closed`, `deleted`, `lost`, `missing`, `refused`, `offline`. */
export class ClosedError extends NavsyncError {}

export interface ConnectOptions {
  token?: string;
  /** How other members see this device. */
  name?: string;
  role?: "viewer" | "controller" | "admin";
  /** A client identity to resume (by default the one kept in `storage`). */
  client?: string;
  /** Reconnect delays in ms: doubling from `min` to `max` (250 and 5000), jittered. */
  backoff?: { min?: number; max?: number };
  /** Where the client identity is kept between page loads; `null` for nowhere. */
  storage?: Pick<Storage, "getItem" | "setItem"> | null;
  /** How long a command or request (`list`, `history`, `stateAt`, `refreshToken`) waits
   *  for its answer, in ms (10000; 0: for ever), then rejects with `timeout`. */
  timeout?: number;
}

export interface ClientStatus {
  state: "connecting" | "open" | "reconnecting" | "refused" | "closed";
  url: string;
  /** Why it is not open: "no server answers at …", a refused origin or token. */
  reason: string;
}

/** `user`: who the app's backend says this is (its join hook, docs/backend.md), beside `name`. */
export interface Member { client: string; name: string; role: string; rev?: number; focus?: string; user?: string }

export interface Entry {
  id: string;
  route: string;
  params: { [key: string]: JSONValue };
  presentation?: "push" | "sheet" | "cover";
  data?: { [key: string]: JSONValue };
  hints?: { [key: string]: JSONValue };
  coordinator?: Coordinator;
  [key: string]: unknown;
}

export type Coordinator =
  | { id: string; type: string; kind: "stack"; stack: Entry[] }
  | { id: string; type: string; kind: "tabs"; tabs: Entry[]; selected: string }
  | { id: string; type: string; kind: "root"; current: Entry };

export interface NavState {
  root: Coordinator;
  alert: null | { id: string; title: string; message?: string; buttons: { id: string; label: string; role?: string }[] };
  [key: string]: unknown;
}

export type SessionStatus =
  | "connecting" | "joining" | "live" | "offline" | "missing" | "lost" | "deleted" | "refused" | "error" | "closed";

export interface Snapshot {
  state: NavState | null;
  rev: number;
  epoch: string | null;
  /** The flow (route schema) of the session. */
  flow: any;
  members: Member[];
  /** Members not listed (past the server's --presence-detail). */
  others: number;
  status: SessionStatus;
  /** Why the status is not live, when there is a reason. */
  error: string | null;
}

export interface HistoryEntry {
  rev: number;
  /** Server time, ms since the Unix epoch. */
  ts: number;
  client: string;
  name: string;
  cmd: string | number;
  ops: object[];
  results: ("applied" | "noop" | "superseded" | "redirected")[];
  label?: string;
}

/** A redirect a guard made: the op it redirected, the guard, and the link it opened. */
export interface Redirect { op: number; guard: string; link: string }

export interface Ack {
  type: "ack"; id: string | number; session: string; rev: number;
  results: ("applied" | "noop" | "superseded" | "redirected")[];
  duplicate?: boolean;
  /** Only when a guard redirected (docs/flows.md, "Guards and redirects"). */
  redirects?: Redirect[];
  /** The ids of the entries (and alerts) the command made, in order: what "~ID.N" names. */
  created?: string[];
}

/** A command's promise, with its id and references to the entries it makes. */
export interface Sent extends Promise<Ack> {
  readonly id: string | number;
  /** "~ID.n": the n-th entry this command makes, usable before the answer comes. */
  ref(n?: number): string;
}

export interface CommandOptions {
  base?: number; onConflict?: "rebase" | "reject"; label?: string; id?: string | number;
  /** This command's deadline in ms (default: the client's `timeout`). */
  timeout?: number;
}
export interface OpOptions extends CommandOptions { at?: string; hints?: { [key: string]: JSONValue } }

export interface Patch { type: "patch"; session: string; rev: number; base: number; by: string; cmd: string | number; ops: object[] }

export type RouteItem = { route: string; params?: { [key: string]: JSONValue }; presentation?: "push" | "sheet" | "cover" };
export type Params = { [key: string]: JSONValue };

export interface Session {
  readonly name: string;
  getSnapshot(): Snapshot;
  subscribe(listener: () => void): () => void;
  on(event: "patch", handler: (patch: Patch) => void): () => void;
  on(event: "presence", handler: (presence: object) => void): () => void;
  on(event: "resync", handler: (why: { reason: string; rev?: number; epoch?: string }) => void): () => void;
  /** The session was made anew while this client was away: waiting commands rejected with `reset`. */
  on(event: "reset", handler: (what: { session: string; epoch: string; rev: number }) => void): () => void;
  on(event: "error", handler: (error: NavsyncError) => void): () => void;
  on(event: "change", handler: (snapshot: Snapshot) => void): () => void;

  command(ops: object[], options?: CommandOptions): Sent;
  push(route: string, params?: Params, options?: OpOptions): Sent;
  route(route: string, params?: Params, options?: OpOptions): Sent;
  present(route: string, params?: Params, style?: "sheet" | "cover", options?: OpOptions): Sent;
  pop(count?: number, options?: OpOptions): Sent;
  /** Pops the screen this device shows: the one its own unanswered push opened (by reference), else the top entry. */
  back(options?: OpOptions): Sent;
  popToRoot(options?: OpOptions): Sent;
  popToFirst(route: string, options?: OpOptions): Sent;
  popToLast(route: string, options?: OpOptions): Sent;
  popTo(entry: string, options?: OpOptions): Sent;
  popBefore(route: string, options?: OpOptions): Sent;
  dismiss(all?: boolean, options?: OpOptions): Sent;
  setRoot(route: string, params?: Params, options?: OpOptions): Sent;
  setStack(routes: RouteItem[], options?: OpOptions): Sent;
  /** One layer's pushes set (layer 0: on the root screen; N: on the Nth sheet or cover), the layers above kept. */
  setPath(routes: RouteItem[], options?: OpOptions & { layer?: number }): Sent;
  jumpTo(routes: RouteItem[], options?: OpOptions): Sent;
  restart(options?: OpOptions): Sent;
  select(tab: string | number | { entry: string }, options?: OpOptions): Sent;
  setTabs(routes: RouteItem[], options?: OpOptions): Sent;
  appendTab(route: string, params?: Params, options?: OpOptions): Sent;
  insertTab(route: string, params: Params | undefined, index: number, options?: OpOptions): Sent;
  removeFirst(route: string, options?: OpOptions): Sent;
  removeLast(route: string, options?: OpOptions): Sent;
  removeTab(entry: string, options?: OpOptions): Sent;
  update(data: Params, entry?: string, options?: OpOptions): Sent;
  /** Merges `data` into the session's data, what the flow's guards read. */
  updateSession(data: Params, options?: CommandOptions): Sent;
  open(url: string, options?: OpOptions): Sent;
  alert(title: string, message?: string, buttons?: { id?: string; label: string; role?: string }[], options?: OpOptions): Sent;
  respond(alert: string, button: string, options?: OpOptions): Sent;
  reset(options?: OpOptions): Sent;

  /** A page of history, newest first (docs/protocol.md, "History"). */
  history(options?: { before?: number; limit?: number }): Promise<{ rev: number; earliest: number; entries: HistoryEntry[] }>;
  /** The state of a revision history holds; the mirror is untouched. */
  stateAt(rev: number): Promise<{ rev: number; state: NavState; historic: boolean }>;
  /** Brings back a revision (or the newest one with a label) as a new revision. */
  restore(revOrLabel: number | string, options?: OpOptions): Sent;
  /** Tells the other members which revision this device shows. */
  rendered(rev: number, focus?: string): void;
  /** The entry on top of the active path (what `back()` pops), or null at a root. */
  topEntry(): Entry | null;
  /** Joins again (after missing, lost or deleted), for example with `create`. */
  join(options?: { create?: boolean; flow?: string }): void;
  leave(): void;
}

export interface Client {
  readonly status: ClientStatus;
  readonly clientId: string | null;
  session(name: string, options?: { create?: boolean; flow?: string }): Session;
  list(): Promise<{ session: string; flow: string; rev: number; members: number }[]>;
  /** The network is back (the browser's `online` event calls it too): the backoff wait ends now. */
  reconnectNow(): void;
  /** Replaces the connection's token (a JWT about to expire); never raises the role. */
  refreshToken(token: string): Promise<{ role: "viewer" | "controller" | "admin"; expires?: number }>;
  on(event: "status", handler: (status: ClientStatus) => void): () => void;
  on(event: "error", handler: (error: NavsyncError) => void): () => void;
  close(): void;
}

/** Connects to the first server of `urls` that answers (a string, a comma-separated
 *  string or a list; by default this page's own server). */
export function connect(urls?: string | string[], options?: ConnectOptions): Client;

/** Applies an RFC 6902 JSON Patch to a copy of `doc`; throws when it does not fit. */
export function applyPatch<T>(doc: T, ops: object[]): T;
