// The PostgreSQL shared store (ADR 0035): keys and budget counters in two tables; a reservation is one call to a
// PL/pgSQL function that locks the counters it touches (in name order, so two reservations cannot deadlock),
// checks them all and adds to each, inside the statement's own transaction.
import pg from 'pg';
import type { CounterDelta, CounterLine, KeyRecord, KeyStore } from './types.ts';

/** Sweep counters whose window has ended every this many reservations. */
const SWEEP_EVERY = 4096;

function setupSql(p: string): string {
  return `
CREATE TABLE IF NOT EXISTS ${p}keys (id TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, record JSONB NOT NULL);
CREATE TABLE IF NOT EXISTS ${p}counters (name TEXT PRIMARY KEY, value DOUBLE PRECISION NOT NULL, expires BIGINT NOT NULL);
CREATE OR REPLACE FUNCTION ${p}reserve(names TEXT[], limits DOUBLE PRECISION[], amounts DOUBLE PRECISION[], exps BIGINT[])
RETURNS INTEGER LANGUAGE plpgsql AS $fn$
DECLARE
  used DOUBLE PRECISION;
BEGIN
  INSERT INTO ${p}counters (name, value, expires) SELECT n, 0, e FROM unnest(names, exps) AS t(n, e) ON CONFLICT (name) DO NOTHING;
  PERFORM 1 FROM ${p}counters WHERE name = ANY(names) ORDER BY name FOR UPDATE;
  FOR i IN 1 .. cardinality(names) LOOP
    SELECT value INTO used FROM ${p}counters WHERE name = names[i];
    IF used >= limits[i] THEN RETURN i - 1; END IF;
  END LOOP;
  UPDATE ${p}counters c SET value = c.value + t.a, expires = t.e FROM unnest(names, amounts, exps) AS t(n, a, e) WHERE c.name = t.n;
  RETURN -1;
END
$fn$;`;
}

export class PgKeyStore implements KeyStore {
  readonly kind = 'postgres';
  private readonly pool: pg.Pool;
  private readonly p: string;
  private reservations = 0;

  static async open(url: string, tablePrefix: string): Promise<PgKeyStore> {
    const store = new PgKeyStore(new pg.Pool({ connectionString: url, max: 10 }), tablePrefix);
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
    // An idle connection dropped by the server is replaced on next use; the error must not crash the process.
    pool.on('error', () => undefined);
  }

  async find(digest: string): Promise<KeyRecord | undefined> {
    const r = await this.pool.query<{ record: KeyRecord }>(`SELECT record FROM ${this.p}keys WHERE digest = $1`, [digest]);
    return r.rows[0]?.record;
  }

  async reserve(lines: readonly CounterLine[]): Promise<number> {
    const r = await this.pool.query<{ i: number }>(`SELECT ${this.p}reserve($1, $2, $3, $4) AS i`, [
      lines.map((l) => l.counter),
      lines.map((l) => l.limit),
      lines.map((l) => l.amount),
      lines.map((l) => l.expiresAt),
    ]);
    if (++this.reservations % SWEEP_EVERY === 0) void this.pool.query(`DELETE FROM ${this.p}counters WHERE expires > 0 AND expires < $1`, [Date.now()]).catch(() => undefined);
    return r.rows[0]!.i;
  }

  async settle(deltas: readonly CounterDelta[]): Promise<void> {
    if (deltas.length === 0) return;
    await this.pool.query(
      `INSERT INTO ${this.p}counters (name, value, expires) SELECT * FROM unnest($1::text[], $2::float8[], $3::bigint[])
       ON CONFLICT (name) DO UPDATE SET value = ${this.p}counters.value + excluded.value, expires = excluded.expires`,
      [deltas.map((d) => d.counter), deltas.map((d) => d.amount), deltas.map((d) => d.expiresAt)],
    );
  }

  async values(counters: readonly string[]): Promise<number[]> {
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
    return r.rowCount === 1;
  }

  rotate(id: string, digest: string, prefix: string, at: string): Promise<boolean> {
    return this.change(id, digest, { prefix, rotatedAt: at });
  }

  revoke(id: string, at: string): Promise<boolean> {
    // The digest is replaced by one no secret has, so the revoked secret cannot even be looked up.
    return this.change(id, `revoked:${id}`, { revokedAt: at });
  }

  close(): void {
    void this.pool.end().catch(() => undefined);
  }
}
