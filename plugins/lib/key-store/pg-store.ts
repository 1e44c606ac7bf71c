// The PostgreSQL shared store (ADR 0035): keys and budget counters in two tables. A reservation is one call (one round
// trip) to a PL/pgSQL function that also applies the settlements queued since the previous one (ADR 0054): it
// locks every counter it touches in name order (so two calls cannot deadlock), checks the reserved ones and adds
// to each, inside the statement's own transaction. The request's key comes from a short-lived cache that the same
// call confirms (ADR 0061): one round trip per request.
import pg from 'pg';
import { KeyCache } from './key-cache.ts';
import { dueEverything, LazySums, queueSettlement } from './lazy-sums.ts';
import { SettlementQueue } from './settlement-queue.ts';
import { KEY_GONE, OPEN_DEADLINE_MS } from './types.ts';
import type { CounterDelta, CounterLine, KeyRecord, KeyStore } from './types.ts';

/** Sweep counters whose window has ended every this many reservations. */
const SWEEP_EVERY = 4096;

/**
 * `reserve_settle`: one row per counter, in name order (the caller sorts): the queued settlement (0 if none), the
 * amount to reserve (0 for a settlement-only row), the limit (NULL: not checked) and the line's index (NULL for a
 * settlement-only row). Returns the index of the first line whose counter, settlement included, has reached its
 * limit (then only the settlements are applied), or -1 once every amount is added. The arithmetic keeps the order of
 * a settlement followed by a reservation: (value + settle) + amount. With `key_digest` (not NULL), -2 when no key has
 * that digest any more (rotated or revoked): only the settlements are applied.
 */
function setupSql(p: string): string {
  return `
CREATE TABLE IF NOT EXISTS ${p}keys (id TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, record JSONB NOT NULL);
CREATE TABLE IF NOT EXISTS ${p}counters (name TEXT PRIMARY KEY, value DOUBLE PRECISION NOT NULL, expires BIGINT NOT NULL);
CREATE OR REPLACE FUNCTION ${p}reserve_settle(names TEXT[], settles DOUBLE PRECISION[], amounts DOUBLE PRECISION[], limits DOUBLE PRECISION[], exps BIGINT[], idx INTEGER[], key_digest TEXT)
RETURNS INTEGER LANGUAGE plpgsql AS $fn$
DECLARE
  refused INTEGER;
  gone BOOLEAN := key_digest IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${p}keys WHERE digest = key_digest);
BEGIN
  INSERT INTO ${p}counters (name, value, expires) SELECT n, 0, e FROM unnest(names, exps) AS t(n, e) ON CONFLICT (name) DO NOTHING;
  SELECT min(t.i) INTO refused
    FROM (SELECT name, value FROM ${p}counters WHERE name = ANY(names) ORDER BY name FOR UPDATE) c
    JOIN unnest(names, settles, limits, idx) AS t(n, s, l, i) ON c.name = t.n
    WHERE c.value + t.s >= t.l;
  IF gone THEN refused := -2; END IF;
  UPDATE ${p}counters c SET value = c.value + t.s + CASE WHEN refused IS NULL THEN t.a ELSE 0 END, expires = t.e
    FROM unnest(names, settles, amounts, exps) AS t(n, s, a, e)
    WHERE c.name = t.n AND (refused IS NULL OR t.s <> 0);
  RETURN coalesce(refused, -1);
END
$fn$;`;
}

/** Lazy (lifetime) settlements one reservation carries at most: a burst is spread over the next ones. */
const LAZY_PER_RESERVATION = 8;

export class PgKeyStore implements KeyStore {
  readonly kind = 'postgres';
  private readonly pool: pg.Pool;
  private readonly p: string;
  private reservations = 0;
  /** Records found lately, confirmed by each reservation's call (key-cache.ts). */
  private readonly cache = new KeyCache();
  /** Settlements not sent yet, summed by counter: they ride on the next reservation's call (ADR 0054). */
  private readonly pending = new SettlementQueue(() => void this.flush(false).catch(() => undefined));
  /** Lifetime settlements (`lazy`), summed by counter for LAZY_MS (ADR 0072, 0091), as the other stores do. */
  private readonly lazy = new LazySums(() => void this.flush().catch(() => undefined));
  /** Named (prepared once per connection) statements, so the server parses and plans them once. */
  private readonly sql: { find: string; reserve: string; settle: string; findName: string; reserveName: string; settleName: string };

  static async open(url: string, tablePrefix: string, connectMs = OPEN_DEADLINE_MS): Promise<PgKeyStore> {
    // A connect deadline: a server that takes the connection and never answers would otherwise hold the config load
    // (and every reload after it), and later each request waiting for a connection, for ever.
    const store = new PgKeyStore(new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: connectMs }), tablePrefix);
    const client = await store.pool.connect();
    try {
      // Replicas starting together would race on CREATE OR REPLACE FUNCTION: one at a time.
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${tablePrefix}setup`]);
      await client.query(setupSql(tablePrefix));
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      await store.pool.end();
      throw err;
    } finally {
      client.release();
    }
    return store;
  }

  private constructor(pool: pg.Pool, prefix: string) {
    this.pool = pool;
    this.p = prefix;
    this.sql = {
      find: `SELECT record FROM ${prefix}keys WHERE digest = $1`,
      reserve: `SELECT ${prefix}reserve_settle($1, $2, $3, $4, $5, $6, $7::text) AS i`,
      settle: `INSERT INTO ${prefix}counters (name, value, expires) SELECT * FROM unnest($1::text[], $2::float8[], $3::bigint[]) ORDER BY 1
       ON CONFLICT (name) DO UPDATE SET value = ${prefix}counters.value + excluded.value, expires = excluded.expires`,
      findName: `${prefix}find`,
      reserveName: `${prefix}reserve_key`,
      settleName: `${prefix}settle`,
    };
    // An idle connection dropped by the server is replaced on next use; the error must not crash the process.
    pool.on('error', () => undefined);
  }

  find(digest: string): KeyRecord | undefined | Promise<KeyRecord | undefined> {
    return this.cache.get(digest, Date.now()) ?? this.fetch(digest);
  }

  private async fetch(digest: string): Promise<KeyRecord | undefined> {
    const r = await this.pool.query<{ record: KeyRecord }>({ name: this.sql.findName, text: this.sql.find, values: [digest] });
    const record = r.rows[0]?.record;
    if (record) this.cache.set(digest, record, Date.now());
    return record;
  }

  /** Take the queued settlements, sorted by counter (rows locked in one order); put back if the server refused the call. */
  private takePending(): CounterDelta[] | undefined {
    this.pending.ripen(Date.now());
    if (this.pending.size === 0) return undefined;
    const rows = this.pending.rows().sort((a, b) => (a.counter < b.counter ? -1 : a.counter > b.counter ? 1 : 0));
    this.pending.clear();
    return rows;
  }

  /** A call the server rolled back (an error it answered) applied nothing: its settlements are queued again. */
  private requeue(rows: readonly CounterDelta[] | undefined, err: unknown): void {
    if (rows && err instanceof pg.DatabaseError) this.pending.add(rows);
  }

  /** One call, one round trip: queued settlements, the key's check (with `digest`), the reservation. */
  async reserve(lines: readonly CounterLine[], digest?: string): Promise<number> {
    if (lines.length === 0 && digest === undefined) return -1;
    const due = this.lazy.due(Date.now(), LAZY_PER_RESERVATION);
    if (due) this.pending.add(due);
    // Refunds held for these counters ride too: the call writes them anyway (ADR 0097).
    this.pending.claimFor(lines, Date.now());
    const queued = this.takePending();
    const rows = new Map<string, { settle: number; amount: number; limit: number | null; expires: number; index: number | null }>();
    lines.forEach((l, i) => rows.set(l.counter, { settle: 0, amount: l.amount, limit: l.limit, expires: l.expiresAt, index: i }));
    for (const d of queued ?? []) {
      const row = rows.get(d.counter);
      if (row) row.settle = d.amount;
      else rows.set(d.counter, { settle: d.amount, amount: 0, limit: null, expires: d.expiresAt, index: null });
    }
    const names = [...rows.keys()].sort();
    const columns = { settles: [] as number[], amounts: [] as number[], limits: [] as (number | null)[], exps: [] as number[], idx: [] as (number | null)[] };
    for (const n of names) {
      const row = rows.get(n)!;
      columns.settles.push(row.settle);
      columns.amounts.push(row.amount);
      columns.limits.push(row.limit);
      columns.exps.push(row.expires);
      columns.idx.push(row.index);
    }
    let r: pg.QueryResult<{ i: number }>;
    const sent = Date.now();
    try {
      r = await this.pool.query<{ i: number }>({
        name: this.sql.reserveName,
        text: this.sql.reserve,
        values: [names, columns.settles, columns.amounts, columns.limits, columns.exps, columns.idx, digest ?? null],
      });
    } catch (err) {
      this.requeue(queued, err);
      throw err;
    }
    if (++this.reservations % SWEEP_EVERY === 0) void this.pool.query(`DELETE FROM ${this.p}counters WHERE expires > 0 AND expires < $1`, [Date.now()]).catch(() => undefined);
    const refused = r.rows[0]!.i;
    if (refused === KEY_GONE) this.cache.drop(digest);
    else if (digest !== undefined) this.cache.confirm(digest, sent);
    return refused;
  }

  /**
   * Queued, summed by counter, and sent with the next reservation's call (ADR 0048, 0054): a charge within
   * SETTLE_DELAY_MS, a refund with the next call that names its counter or within REFUND_HOLD_MS (ADR 0097). One round
   * trip per request instead of two on a busy gateway.
   */
  settle(deltas: readonly CounterDelta[]): void {
    queueSettlement(deltas, this.pending, this.lazy);
  }

  /** Send due settlements now; with `lazy` (reads, close, an idle store) the lifetime sums and held refunds too. */
  async flush(lazy = true): Promise<void> {
    if (lazy) dueEverything(this.pending, this.lazy);
    const rows = this.takePending();
    if (!rows) return;
    try {
      await this.pool.query({ name: this.sql.settleName, text: this.sql.settle, values: [rows.map((d) => d.counter), rows.map((d) => d.amount), rows.map((d) => d.expiresAt)] });
    } catch (err) {
      this.requeue(rows, err);
      throw err;
    }
  }

  async values(counters: readonly string[]): Promise<number[]> {
    await this.flush();
    const r = await this.pool.query<{ name: string; value: number; expires: string }>(`SELECT name, value, expires FROM ${this.p}counters WHERE name = ANY($1)`, [counters]);
    const now = Date.now();
    const by = new Map(r.rows.map((row) => [row.name, Number(row.expires) === 0 || Number(row.expires) > now ? row.value : 0]));
    return counters.map((c) => by.get(c) ?? 0);
  }

  async create(record: KeyRecord, digest: string): Promise<void> {
    await this.pool.query(`INSERT INTO ${this.p}keys (id, digest, record) VALUES ($1, $2, $3)`, [record.id, digest, JSON.stringify(record)]);
  }

  async get(id: string): Promise<KeyRecord | undefined> {
    const r = await this.pool.query<{ record: KeyRecord }>(`SELECT record FROM ${this.p}keys WHERE id = $1`, [id]);
    return r.rows[0]?.record;
  }

  async list(): Promise<KeyRecord[]> {
    return (await this.pool.query<{ record: KeyRecord }>(`SELECT record FROM ${this.p}keys ORDER BY id`)).rows.map((r) => r.record);
  }

  /** One statement: only a live key changes, whoever else rotates or revokes it at the same time. */
  private async change(id: string, digest: string, fields: Record<string, string>): Promise<boolean> {
    const r = await this.pool.query(`UPDATE ${this.p}keys SET digest = $2, record = record || $3::jsonb WHERE id = $1 AND NOT (record ? 'revokedAt')`, [id, digest, JSON.stringify(fields)]);
    // The old digest is not known here: forget every cached record (rotations and revocations are rare).
    this.cache.drop();
    return r.rowCount === 1;
  }

  rotate(id: string, digest: string, prefix: string, at: string): Promise<boolean> {
    return this.change(id, digest, { prefix, rotatedAt: at });
  }

  revoke(id: string, at: string): Promise<boolean> {
    // The digest is replaced by one no secret has, so the revoked secret cannot even be looked up.
    return this.change(id, `revoked:${id}`, { revokedAt: at });
  }

  async close(): Promise<void> {
    try {
      await this.flush();
    } catch {
      // Closing anyway: those corrections are lost, their requests stay charged their estimate.
    } finally {
      await this.pool.end().catch(() => undefined);
    }
  }
}
