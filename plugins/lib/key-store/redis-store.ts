// The shared store (ADR 0035): keys and budget counters in Redis, so several gateway replicas draw from the same
// budgets. A reservation is one Lua script, which Redis runs atomically: check every counter, then add to each. A
// request makes one round trip (ADR 0061): its key comes from a cache that the reservation's script confirms (by the
// keys version, ADR 0106), its settlement rides on a later reservation, and reservations made while another is in
// flight go together in one script at the end of the event-loop turn. The script and the building of its calls are in
// redis-reserve.ts; this file batches reservations, acts on the script's answers and keeps the keys.
import { createHash } from 'node:crypto';
import { KEY_RECHECK_MS, KeysVersionCache } from './keys-version-cache.ts';
import { RedisError, RespClient } from './resp.ts';
import { settleGrouped } from './counter-groups.ts';
import { LEASE_REFUSED, LeaseBook, NOTHING_TAKEN } from './counter-leases.ts';
import type { LeaseOptions } from './counter-leases.ts';
import { dueEverything, joinQueue, LazySums, queuedLazyState } from './lazy-sums.ts';
import type { QueuedLazyState } from './lazy-sums.ts';
import { counterKeyOf, digestKey, RedisCounter, RESERVE, RESERVE_OLD, ReserveCalls } from './redis-reserve.ts';
import type { Waiting } from './redis-reserve.ts';
import { SettlementQueue } from './settlement-queue.ts';
import type { RespValue } from './resp.ts';
import { KEY_GONE, OPEN_DEADLINE_MS } from './types.ts';
import type { CounterDelta, CounterLine, CounterMemo, KeyRecord, KeyStore } from './types.ts';

/** Most reservations sent in one script; more wait for the next. */
const BATCH_MAX = 64;
/** Lazy (lifetime) settlements a script carries per reservation at most: a burst is spread over the next ones. */
const LAZY_PER_RESERVATION = 8;

/** A reservation's answer when the keys version it was sent against changed: nothing taken, sent again with its digest. */
const UNCHECKED = -3;

/**
 * KEYS: old digest key, new digest key, id key, keys version. ARGV: record JSON, new digest, the digest the id must
 * still map to ('' when creating). Moves a key to a new secret atomically and raises the keys version (ADR 0106); 0
 * when another replica changed or revoked it first.
 */
const MOVE = `
local current = redis.call('GET', KEYS[3])
if (ARGV[3] == '' and current) or (ARGV[3] ~= '' and current ~= ARGV[3]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], ARGV[2])
redis.call('INCR', KEYS[4])
return 1`;

const NONE: readonly (string | number)[] = [];
const sha1 = (s: string): string => createHash('sha1').update(s).digest('hex');
/** The scripts' SHA-1s, computed once (not on every call). */
const SHAS = new Map<string, string>([RESERVE, RESERVE_OLD, MOVE].map((body) => [body, sha1(body)]));
const shaOf = (body: string): string => SHAS.get(body) ?? sha1(body);

/** How long a cached key's lookup due beside its request waits for the request's reservation to check it (ADR 0193). */
export const BESIDE_WAIT_MS = 200;

/** Parsed key records kept (by their stored JSON), emptied when full. */
const PARSED_MAX = 4096;

export class RedisKeyStore implements KeyStore {
  readonly kind = 'redis';
  private readonly client: RespClient;
  private readonly prefix: string;
  private readonly parsed = new Map<string, KeyRecord>();
  /** Records found lately, confirmed by each reservation's script (keys-version-cache.ts). */
  private readonly cache: KeysVersionCache;
  /** The keys version's Redis key. */
  private readonly versionKey: string;
  /** Reservations waiting for the end of this event-loop turn, to be sent together. */
  private readonly waiting: Waiting[] = [];
  /** Reservation scripts sent and not answered yet. */
  private inFlight = 0;
  /** Settlements not sent yet, summed by counter: they ride on the next reservation's script. */
  private readonly pending: SettlementQueue<RedisCounter>;
  /**
   * Lifetime settlements (`lazy`: no budget reads them), summed by counter for LAZY_MS (ADR 0072, 0091): with many keys
   * in use they were two of the dozen counters each request's script wrote.
   */
  private readonly lazy = new LazySums<QueuedLazyState<RedisCounter>>(() => void this.flush().catch(() => undefined), queuedLazyState);
  /** A lifetime sum come due joins the queue on its counter's state, kept on its entry while the queue's `trims` holds. */
  private readonly lazyDue = (q: QueuedLazyState<RedisCounter>, amount: number, expiresAt: number): void => joinQueue(this.pending, q, amount, expiresAt);

  /** Budget leases (ADR 0108): a lease's room goes back to the store as a settlement of its counter. */
  private readonly leases: LeaseBook<RedisCounter>;
  /** A settlement of a leased counter goes to its room (ADR 0108), any other to the queue. */
  private readonly settleOne = (c: RedisCounter, amount: number, expiresAt: number): void => {
    if (!this.leases.settle(c, amount)) this.pending.addTo(c, amount, expiresAt);
  };

  /** Builds each reservation script's keys and arguments (redis-reserve.ts). */
  private readonly calls: ReserveCalls;
  /** The reservation script this server runs (SET ... PXAT needs Redis 6.2). */
  private reserveBody = RESERVE;

  /**
   * `recheckMs`: how often a cached key's digest is checked at least (KEY_RECHECK_MS; shorter in tests); `leases`:
   * lease bounds (ADR 0108; tests), or false for none.
   */
  static async open(url: string, prefix: string, recheckMs = KEY_RECHECK_MS, leases: LeaseOptions | false = {}, deadlineMs = OPEN_DEADLINE_MS): Promise<RedisKeyStore> {
    const store = new RedisKeyStore(new RespClient(url), prefix, recheckMs, leases);
    let timer: NodeJS.Timeout | undefined;
    // A server that takes the connection and never answers would hold the config load, and every reload after it.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        store.client.close();
        reject(new RedisError(`no answer from the Redis server at ${new URL(url).host} within ${deadlineMs / 1000} s`));
      }, deadlineMs);
    });
    // Valkey and KeyDB report the Redis version they are compatible with here too; a server that refuses INFO (an ACL)
    // is taken to be a current one.
    const asked = store.client.command('INFO', 'server').catch((err: unknown) => (err instanceof RedisError ? store.client.command('PING') : Promise.reject(err)));
    let info: RespValue;
    try {
      info = await Promise.race([asked, deadline]);
    } finally {
      clearTimeout(timer);
    }
    const v = /redis_version:(\d+)\.(\d+)/.exec(String(info));
    if (v && (Number(v[1]) < 6 || (Number(v[1]) === 6 && Number(v[2]) < 2))) store.reserveBody = RESERVE_OLD;
    return store;
  }

  private constructor(client: RespClient, prefix: string, recheckMs: number, leases: LeaseOptions | false) {
    this.client = client;
    this.prefix = prefix;
    this.cache = new KeysVersionCache(recheckMs);
    this.versionKey = `${prefix}keys:version`;
    this.pending = new SettlementQueue(
      () => void this.flush(false).catch(() => undefined),
      (counter) => new RedisCounter(counter, prefix),
    );
    this.leases = new LeaseBook((c, amount) => this.pending.addTo(c, amount, c.leaseExpiresAt), leases === false ? { requests: 0 } : leases);
    this.calls = new ReserveCalls(this.pending, this.leases, this.cache, prefix, this.versionKey);
  }

  /** EVALSHA, falling back to EVAL the first time a server sees the script. */
  private async script(body: string, keys: readonly string[], args: readonly (string | number)[], more: readonly (string | number)[] = NONE): Promise<RespValue> {
    try {
      return await this.client.command('EVALSHA', shaOf(body), keys.length, ...keys, ...args, ...more);
    } catch (err) {
      if (err instanceof RedisError && err.message.startsWith('NOSCRIPT')) return this.client.command('EVAL', body, keys.length, ...keys, ...args, ...more);
      throw err;
    }
  }

  private digestKey(digest: string): string {
    return digestKey(this.prefix, digest);
  }

  private idKey(id: string): string {
    return `${this.prefix}id:${id}`;
  }

  find(digest: string, memo?: CounterMemo): KeyRecord | undefined | Promise<KeyRecord | undefined> {
    return this.cache.get(digest, Date.now(), this.checkBeside, memo) ?? this.fetch(digest);
  }

  /**
   * A cached key's digest checked beside the request using it (ADR 0106): a key gone is dropped from the cache. Not at
   * once (ADR 0193): a request that reserves carries the same digest in its reservation's script (its check is due
   * there too, `needsCheck`), so the lookup waits BESIDE_WAIT_MS and is sent only for a key whose digest no
   * reservation sent since checked (a request that made none, or an answer slower than that). With 1,000 keys in turn
   * each key's lookup every 30 s (an MGET, its reply and a record's JSON looked up) was about one request in a hundred.
   */
  private readonly checkBeside = (digest: string): void => {
    if (this.besides.push(digest) === 1) {
      this.besideAt = Date.now();
      this.besideTimer = setTimeout(this.checkBesides, BESIDE_WAIT_MS);
      this.besideTimer.unref();
    }
  };

  /** Digests due a lookup beside their requests (since `besideAt`), waiting to see whether a reservation checks them. */
  private readonly besides: string[] = [];
  private besideAt = 0;
  private besideTimer: NodeJS.Timeout | undefined;
  private readonly checkBesides = (): void => {
    this.besideTimer = undefined;
    const at = this.besideAt;
    const digests = this.besides.splice(0);
    for (const digest of digests) if (!this.cache.checkedSince(digest, at)) void this.fetch(digest).catch(() => undefined);
  };

  /** The record and the keys version in one command: the version then vouches for the record (ADR 0106). */
  private async fetch(digest: string): Promise<KeyRecord | undefined> {
    const sent = Date.now();
    const [json, version] = (await this.client.queue('MGET', this.digestKey(digest), this.versionKey)) as (string | null)[];
    if (typeof json !== 'string') {
      this.cache.saw(Number(version ?? 0), sent);
      this.cache.drop(digest);
      return undefined;
    }
    // An unchanged key is not parsed again (and keeps its identity, so the policy's per-record views are reused).
    let record = this.parsed.get(json);
    if (!record) {
      if (this.parsed.size >= PARSED_MAX) this.parsed.clear();
      record = JSON.parse(json) as KeyRecord;
      this.parsed.set(json, record);
    }
    this.cache.set(digest, record, Number(version ?? 0), sent);
    return record;
  }

  /**
   * One script with the queued settlements: one round trip (ADR 0061). Sent at once when no reservation is in flight;
   * otherwise at the end of this event-loop turn (`setImmediate`), with every other reservation made in the turn.
   */
  reserve(lines: readonly CounterLine[], digest?: string, keyMemo?: CounterMemo): Promise<number> {
    if (lines.length === 0 && digest === undefined) return Promise.resolve(-1);
    // Its key's row in the cache, held by the reservation itself (ADR 0187): no object per request for the key.
    const row = digest === undefined ? -1 : this.cache.rowOf(digest, keyMemo);
    const drops = this.cache.drops;
    return new Promise<number>((resolve, reject) => {
      const first = this.waiting.push({ lines, digest, row, drops, check: false, leased: undefined, resolve, reject }) === 1;
      if (this.inFlight === 0) this.sendBatch();
      else if (first) setImmediate(this.sendBatch);
    });
  }

  /** Send the waiting reservations (at most BATCH_MAX; the rest go in the next turn) with the queued settlements. */
  private readonly sendBatch = (): void => {
    if (this.waiting.length === 0) return;
    const batch = this.waiting.splice(0, BATCH_MAX);
    if (this.waiting.length > 0) setImmediate(this.sendBatch);
    this.inFlight++;
    this.lazy.dueEach(Date.now(), LAZY_PER_RESERVATION * batch.length, this.lazyDue);
    const { keys, args, reservations } = this.calls.build(batch);
    const sent = Date.now();
    this.script(this.reserveBody, keys, args, reservations).then(
      (answers) => {
        this.inFlight--;
        const out = answers as RespValue[];
        const version = Number(out[batch.length]);
        this.cache.saw(version, sent);
        let again: Waiting[] | undefined;
        const now = Date.now();
        batch.forEach((w, i) => {
          let refused = Number(out[i]);
          if (w.leased !== undefined) refused = this.leaseAnswer(w, refused, now);
          if (refused === UNCHECKED || refused === LEASE_REFUSED) {
            // A key changed somewhere since this one was vouched for (checked by its digest in the next script), or a
            // lease line was refused (sent again without the lease).
            if (refused === UNCHECKED) w.check = true;
            (again ??= []).push(w);
            return;
          }
          if (refused === KEY_GONE) this.cache.drop(w.digest);
          else if (w.digest !== undefined) this.cache.confirm(w, sent, version, w.check);
          w.resolve(refused);
        });
        if (again !== undefined) {
          this.waiting.unshift(...again);
          this.sendBatch();
        }
      },
      (err: unknown) => {
        this.inFlight--;
        for (const w of batch) {
          if (w.leased !== undefined) this.leaseAnswer(w, NOTHING_TAKEN, Date.now());
          w.reject(err);
        }
      },
    );
  };

  /**
   * What a script's answer does to a reservation's leased lines (ADR 0108: LeaseBook.answer), and the answer to give
   * for it: the refusing line's index in the reservation, or LEASE_REFUSED (sent again, that line without a lease).
   */
  private leaseAnswer(w: Waiting, refused: number, now: number): number {
    const leased = w.leased!;
    w.leased = undefined;
    return this.leases.answer(leased, w.lines, refused, now);
  }

  /**
   * Queued, summed by counter, and sent with the next reservation's script (ADR 0048): a charge within SETTLE_DELAY_MS,
   * a refund with the next script that writes its counter anyway or within REFUND_HOLD_MS (ADR 0097). One round trip
   * per request instead of two on a busy gateway, and with many keys no SET of its own for most refunds.
   */
  settle(deltas: readonly CounterDelta[]): void {
    settleGrouped(this.pending, this.lazy, deltas, this.settleOne);
  }

  /**
   * Send due settlements now; with `lazy` (reads, close, an idle store) the lifetime sums, held refunds and leases'
   * room too.
   */
  async flush(lazy = true): Promise<void> {
    if (lazy) {
      this.leases.closeAll();
      dueEverything(this.pending, this.lazy);
    }
    if (this.pending.size === 0) return;
    const { keys, args, reservations } = this.calls.build([]);
    await this.script(this.reserveBody, keys, args, reservations);
  }

  async values(counters: readonly string[]): Promise<number[]> {
    await this.flush();
    if (counters.length === 0) return [];
    const got = (await this.client.command('MGET', ...counters.map((c) => counterKeyOf(this.prefix, c)))) as (string | null)[];
    return got.map((v) => (v === null ? 0 : Number(v)));
  }

  async create(record: KeyRecord, digest: string): Promise<void> {
    if (Number(await this.script(MOVE, [this.digestKey(''), this.digestKey(digest), this.idKey(record.id), this.versionKey], [JSON.stringify(record), digest, ''])) !== 1) {
      throw new Error(`key id ${record.id} exists`);
    }
    await this.client.command('SADD', `${this.prefix}ids`, record.id);
  }

  /** The current digest of a key id and its record. */
  private async current(id: string): Promise<{ digest: string; record: KeyRecord } | undefined> {
    const digest = await this.client.command('GET', this.idKey(id));
    if (typeof digest !== 'string') return undefined;
    const json = await this.client.command('GET', this.digestKey(digest));
    return typeof json === 'string' ? { digest, record: JSON.parse(json) as KeyRecord } : undefined;
  }

  async get(id: string): Promise<KeyRecord | undefined> {
    return (await this.current(id))?.record;
  }

  async list(): Promise<KeyRecord[]> {
    const ids = ((await this.client.command('SMEMBERS', `${this.prefix}ids`)) as string[]).sort();
    const records = await Promise.all(ids.map((id) => this.get(id)));
    return records.filter((r): r is KeyRecord => r !== undefined);
  }

  async rotate(id: string, digest: string, prefix: string, at: string): Promise<boolean> {
    const cur = await this.current(id);
    if (!cur || cur.record.revokedAt !== undefined) return false;
    const moved = await this.script(MOVE, [this.digestKey(cur.digest), this.digestKey(digest), this.idKey(id), this.versionKey], [JSON.stringify({ ...cur.record, prefix, rotatedAt: at }), digest, cur.digest]);
    this.cache.drop(cur.digest);
    return Number(moved) === 1;
  }

  async revoke(id: string, at: string): Promise<boolean> {
    const cur = await this.current(id);
    if (!cur || cur.record.revokedAt !== undefined) return false;
    // Kept under a digest no secret has, so the revoked secret cannot even be looked up.
    const moved = await this.script(MOVE, [this.digestKey(cur.digest), this.digestKey(`revoked:${id}`), this.idKey(id), this.versionKey], [JSON.stringify({ ...cur.record, revokedAt: at }), `revoked:${id}`, cur.digest]);
    this.cache.drop(cur.digest);
    return Number(moved) === 1;
  }

  async close(): Promise<void> {
    clearTimeout(this.besideTimer);
    this.besides.length = 0;
    try {
      await this.flush();
    } catch {
      // Closing anyway: those corrections are lost, their requests stay charged their estimate.
    } finally {
      this.client.close();
    }
  }
}
