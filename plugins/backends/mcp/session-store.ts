import type { Logger, SharedEvents, SharedTopic } from 'switchyard/sdk';
import type { InputEntry, InputRegistry } from './revisions/2026-07-28/inputs.ts';
import { INPUT_WAIT_MS } from './revisions/2026-07-28/inputs.ts';
import type { BackendRuntime } from './runtime.ts';
import { McpSession } from './session.ts';
import { unsealSession } from './session-token.ts';
import type { ClientContext } from './http-util.ts';

/** How long an ended session's id is refused rather than resumed (DELETE, expiry) on this replica. */
const TOMBSTONE_MS = 24 * 60 * 60 * 1000;
/** Ended sessions remembered at most (oldest forgotten first): initialize + DELETE in a loop must not grow memory. */
export const MAX_TOMBSTONES = 100_000;
/** Ids a re-sealed session stays mapped under (older ones are found again by the session's identity). */
const MAX_IDS_PER_SESSION = 8;
/** How long a copy idle past its timeout waits for another worker to say the session is in use there. */
const ALIVE_WAIT_MS = 500;
/** Idle sessions kept for 2026-07-28 clients (one per client identity); busy ones are never evicted. */
export const POOL_LIMIT_20260728 = 16;

/**
 * The live sessions of one `mcp` backend. Kept in the resource cache under the backend's config, so a reload that
 * leaves the backend unchanged keeps every session; disposed (children stopped) when no config uses it any more.
 */
export class SessionStore {
  private readonly sessions = new Map<string, McpSession>();
  /** Sessions by identity (`uuid`), whatever id they were last reached by. */
  private readonly byUuid = new Map<string, McpSession>();
  /** The ids each session is held under, oldest first. */
  private readonly ids = new WeakMap<McpSession, string[]>();
  /** Ended sessions' identities, refused until the time given (kept past this store, tombstones.ts). */
  private readonly ended: Map<string, number>;
  private readonly idleMs: number;
  /** Live sessions held at most (`maxSessions`), sessions being initialized included. */
  readonly maxSessions: number;
  /** Sessions admitted and still initializing (not held yet). */
  private starting = 0;
  private tombstonesWarned = false;
  private refusedLoggedAt = 0;
  private readonly logger: Logger;
  private readonly timer: NodeJS.Timeout;
  private disposed = false;
  /**
   * What the stores of this backend in the other workers are told (with one worker: nobody): `end` (a session ended
   * everywhere), `idle` (is this session in use in your worker?) and its answer `alive`.
   */
  private readonly others: SharedTopic | undefined;
  /** Other workers of the gateway may hold copies of this store's sessions (`config.workers`). */
  private readonly copies: boolean;
  /** Sessions idle here past their timeout, asked about: whether another worker answered that it uses them. */
  private readonly asking = new Map<string, boolean>();
  /** Sessions serving 2026-07-28 clients, by client identity (least recently used first). */
  private readonly pooled = new Map<string, McpSession>();
  /** Calls waiting for a 2026-07-28 client's retry, by the `requestState` handed out. */
  private readonly waiting = new Map<string, { entry: InputEntry; until: number }>();
  readonly inputs: InputRegistry = {
    set: (token, entry) => void this.waiting.set(token, { entry, until: Date.now() + INPUT_WAIT_MS }),
    get: (token) => {
      const w = this.waiting.get(token);
      return w && w.until > Date.now() ? w.entry : undefined;
    },
    delete: (token) => void this.waiting.delete(token),
  };

  /**
   * `events` and `topic`: how the stores of this backend in the other workers are told of ended and idle sessions;
   * `ended`: the tombstones a store under the same key left (tombstones.ts).
   */
  constructor(idleMs: number, maxSessions: number, logger: Logger, events?: { readonly events: SharedEvents; readonly topic: string }, ended = new Map<string, number>()) {
    this.ended = ended;
    this.idleMs = idleMs;
    this.maxSessions = maxSessions;
    this.logger = logger;
    this.others = events?.events.subscribe(events.topic, (m) => this.heard(m));
    this.copies = events?.events.others ?? false;
    this.timer = setInterval(() => this.reap(), Math.max(250, Math.min(idleMs / 4, 30_000)));
    this.timer.unref();
  }

  get size(): number {
    return this.byUuid.size;
  }

  /**
   * Take a place for a new session (`initialize`, `GET /sse`), or return the refusal message when `maxSessions` are
   * live or starting. A place taken must be given back with `settle` once the session is held (`add`) or failed.
   */
  admit(): string | undefined {
    if (!this.disposed && this.byUuid.size + this.pooled.size + this.starting < this.maxSessions) {
      this.starting++;
      return undefined;
    }
    return this.refusal();
  }

  private refusal(): string {
    // Logged at most once a minute: a client hammering a full endpoint must not flood the log.
    const now = Date.now();
    if (now - this.refusedLoggedAt > 60_000) {
      this.refusedLoggedAt = now;
      this.logger.warn('MCP sessions refused: the endpoint holds its maxSessions', { maxSessions: this.maxSessions });
    }
    return `too many MCP sessions: this endpoint holds its limit of ${this.maxSessions} (maxSessions); try again when a session ends`;
  }

  settle(): void {
    if (this.starting > 0) this.starting--;
  }

  /**
   * Hold a session under `id`. A session re-sealed later (its resource subscriptions changed) is held under each new
   * id too; the newest few ids are mapped, older ones find it again through its identity (`resume`).
   */
  add(session: McpSession, id: string): void {
    this.sessions.set(id, session);
    let ids = this.ids.get(session);
    if (!ids) {
      this.ids.set(session, (ids = []));
      this.byUuid.set(session.uuid, session);
      session.onResealed = (token) => this.add(session, token);
    }
    ids.push(id);
    while (ids.length > MAX_IDS_PER_SESSION) {
      const old = ids.shift()!;
      if (this.sessions.get(old) === session) this.sessions.delete(old);
    }
  }

  get(id: string): McpSession | undefined {
    return this.sessions.get(id);
  }

  /**
   * Rebuild a session this replica has never seen (or has forgotten) from its sealed id. Targets reconnect on first
   * use: a streamable-HTTP target resumes its upstream session, the others start fresh and are re-initialized. A
   * session rebuilt counts against `maxSessions` as a new one does: past it, the refusal message (sealed ids of
   * sessions ended elsewhere, replayed here, must not hold more sessions than the endpoint allows).
   */
  resume(id: string, rt: BackendRuntime, client: ClientContext, caller: string | undefined): McpSession | string | undefined {
    if (this.disposed) return undefined;
    const claims = unsealSession(rt.key, rt.aad, id);
    if (!claims) return undefined;
    // Another caller's session (ADR 0120): not found, and nothing is held for it.
    if (claims.w !== undefined && claims.w !== caller) return undefined;
    const ended = this.ended.get(claims.u);
    if (ended !== undefined && ended > Date.now()) return undefined;
    // An older id of a session held here (it was re-sealed since): the same session.
    const held = this.byUuid.get(claims.u);
    if (held && !held.closed) {
      if (held.kind !== 'streamable') return undefined;
      this.add(held, id);
      return held;
    }
    if (this.byUuid.size + this.pooled.size + this.starting >= this.maxSessions) return this.refusal();
    const session = new McpSession(rt, claims.u, 'streamable', claims.i, client, claims);
    session.token = id;
    this.add(session, id);
    this.logger.info('resumed MCP session from its sealed id', { session: claims.u.slice(0, 8) });
    // Targets the client had resource subscriptions with start now and subscribe again: nothing else may restart them.
    session.subscriptions.startSubscribed(session.conns);
    return session;
  }

  /**
   * The session serving 2026-07-28 requests of one client identity (capabilities, client info and forwarded headers
   * hashed into `key`): target connections, stdio processes included, are reused across its requests. At most
   * POOL_LIMIT_20260728 idle ones are kept; each ends after the idle timeout. They count against `maxSessions` with
   * the others: a new identity past it is refused (the message says so) unless an idle one can make room.
   */
  pooledSession(key: string, create: () => McpSession): McpSession | string | undefined {
    if (this.disposed) return undefined;
    let session = this.pooled.get(key);
    if (session && session.closed) {
      this.pooled.delete(key);
      session = undefined;
    }
    if (session) {
      this.pooled.delete(key);
      this.pooled.set(key, session);
      return session;
    }
    if (this.pooled.size + this.byUuid.size + this.starting >= this.maxSessions) {
      for (const [k, s] of this.pooled) {
        if (!s.idle) continue;
        this.pooled.delete(k);
        void s.close(true, 'evicted to make room under maxSessions');
        break;
      }
      if (this.pooled.size + this.byUuid.size + this.starting >= this.maxSessions) return this.refusal();
    }
    session = create();
    session.inputRegistry = this.inputs;
    this.pooled.set(key, session);
    if (this.pooled.size > POOL_LIMIT_20260728) {
      for (const [k, s] of this.pooled) {
        if (this.pooled.size <= POOL_LIMIT_20260728) break;
        if (s === session || !s.idle) continue;
        this.pooled.delete(k);
        this.logger.debug('closing the least recently used 2026-07-28 client session', { session: s.uuid.slice(0, 8) });
        void s.close(true, 'evicted from the 2026-07-28 session pool');
      }
    }
    return session;
  }

  /** Sessions kept for 2026-07-28 clients (for tests and logs). */
  get pooledSize(): number {
    return this.pooled.size;
  }

  /**
   * End a session: forget it, refuse its id from now on, close it. `everywhere` (the client's DELETE, an idle timeout
   * no worker objected to): the other workers refuse it too and close their copies, or a request reaching one would
   * resume it.
   */
  end(id: string, session: McpSession, terminate: boolean, reason: string, everywhere = false): Promise<void> {
    if (this.sessions.get(id) === session) this.sessions.delete(id);
    this.forget(session);
    // Kept as long as the id is refused, for workers that start later (a restart), which would resume it.
    if (everywhere) this.others?.post({ t: 'end', u: session.uuid }, TOMBSTONE_MS);
    this.logger.debug('MCP session ended', { session: session.uuid.slice(0, 8), reason });
    return session.close(terminate, reason);
  }

  /** Drop every id of `session` and refuse its identity for TOMBSTONE_MS. */
  private forget(session: McpSession): void {
    this.drop(session);
    this.bury(session.uuid);
  }

  /** Drop every id of `session` (a later request may resume it from its seal). */
  private drop(session: McpSession): void {
    for (const other of this.ids.get(session) ?? []) if (this.sessions.get(other) === session) this.sessions.delete(other);
    if (this.byUuid.get(session.uuid) === session) this.byUuid.delete(session.uuid);
  }

  private bury(uuid: string): void {
    this.ended.set(uuid, Date.now() + TOMBSTONE_MS);
    if (this.ended.size > MAX_TOMBSTONES) {
      this.ended.delete(this.ended.keys().next().value!);
      if (!this.tombstonesWarned) {
        this.tombstonesWarned = true;
        this.logger.warn('many MCP sessions ended recently; the oldest ended ids are forgotten (a replica holding the key could resume them)', { kept: MAX_TOMBSTONES });
      }
    }
  }

  /** Whether `s` has been idle past the timeout. */
  private expired(s: McpSession): boolean {
    return s.idle && Date.now() - s.lastActivity > this.idleMs;
  }

  /**
   * A copy idle here past its timeout while other workers may hold the session: ask them. One that uses it answers
   * `alive`, and only this copy closes (the id stays valid, a later request here resumes it; the upstream sessions
   * stay, the other copy uses them). No answer: the session ends everywhere, as with one worker.
   */
  private expireCopy(id: string, s: McpSession): void {
    if (this.asking.has(s.uuid)) return;
    this.asking.set(s.uuid, false);
    this.others?.post({ t: 'idle', u: s.uuid });
    const timer = setTimeout(() => {
      const alive = this.asking.get(s.uuid);
      this.asking.delete(s.uuid);
      if (this.disposed || s.closed || this.byUuid.get(s.uuid) !== s || !this.expired(s)) return;
      if (alive) {
        this.logger.info("MCP session idle on this worker and in use on another: this worker's copy is closed", { session: s.uuid.slice(0, 8), idleMs: this.idleMs });
        this.drop(s);
        void s.close(false, 'idle timeout');
        return;
      }
      this.logger.info('MCP session expired after being idle', { session: s.uuid.slice(0, 8), idleMs: this.idleMs });
      void this.end(id, s, true, 'idle timeout', true);
    }, ALIVE_WAIT_MS);
    timer.unref();
  }

  /** A message of another worker's store of this backend. */
  private heard(message: unknown): void {
    const { t, u } = (message ?? {}) as { t?: unknown; u?: unknown };
    if (this.disposed || typeof u !== 'string') return;
    if (t === 'idle') {
      const held = this.byUuid.get(u);
      if (held && !held.closed && !this.expired(held)) this.others?.post({ t: 'alive', u });
      return;
    }
    if (t === 'alive') {
      if (this.asking.has(u)) this.asking.set(u, true);
      return;
    }
    if (t !== 'end') return;
    // Ended by its client or its idle timeout in another worker: refuse it here too; a copy held here closes (its
    // upstream sessions are already deleted).
    const held = this.byUuid.get(u);
    if (!held) return this.bury(u);
    this.forget(held);
    this.logger.debug('MCP session ended', { session: u.slice(0, 8), reason: 'ended in another worker' });
    void held.close(false, 'the session ended');
  }

  private reap(): void {
    const now = Date.now();
    for (const [id, s] of this.sessions) {
      if (s.kind === 'streamable' && this.expired(s)) {
        if (this.copies) {
          this.expireCopy(id, s);
          continue;
        }
        this.logger.info('MCP session expired after being idle', { session: s.uuid.slice(0, 8), idleMs: this.idleMs });
        void this.end(id, s, true, 'idle timeout');
      }
    }
    for (const [u, until] of this.ended) if (until <= now) this.ended.delete(u);
    for (const [k, s] of this.pooled) {
      if (this.expired(s)) {
        this.pooled.delete(k);
        this.logger.info('2026-07-28 client session expired after being idle', { session: s.uuid.slice(0, 8), idleMs: this.idleMs });
        void s.close(true, 'idle timeout');
      }
    }
    for (const [t, w] of this.waiting) if (w.until <= now) this.waiting.delete(t);
  }

  /** The backend left the config (or the gateway stops): close every session, leaving resumable upstreams alone. */
  async dispose(): Promise<void> {
    this.disposed = true;
    clearInterval(this.timer);
    this.others?.close();
    const all = [...new Set(this.sessions.values()), ...this.pooled.values()];
    this.sessions.clear();
    this.byUuid.clear();
    this.pooled.clear();
    this.waiting.clear();
    await Promise.all(all.map((s) => s.close(s.kind !== 'streamable', 'the gateway stopped serving this backend')));
  }
}
