// The embedded store (ADR 0035): one SQLite file through Node's built-in `node:sqlite`, in WAL mode so several
// worker processes or threads on one machine share it; every reservation is one write transaction.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { Checkpointer } from './checkpointer.ts';
import { SettlementQueue } from './settlement-queue.ts';
import type { CheckpointOptions, CheckpointResult } from './checkpointer.ts';
import type { CounterDelta, CounterLine, KeyRecord, KeyStore } from './types.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS vk_keys (id TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vk_counters (name TEXT PRIMARY KEY, value REAL NOT NULL, expires INTEGER NOT NULL);
`;

/** Expired counters are swept every this many reservations (a window's counter is dead once it ended). */
const SWEEP_EVERY = 4096;
/** Rows per multi-row upsert (3 parameters each). */
const ADD_BATCH = 32;
/** Parsed key records kept (a cache of the hot keys, emptied when full). */
const PARSED_MAX = 4096;

/** `node:sqlite` without flags needs Node 22.13+ (22.12 has it behind `--experimental-sqlite`). */
async function loadSqlite(): Promise<typeof import('node:sqlite')> {
  try {
    return await import('node:sqlite');
  } catch (err) {
    throw new Error(
      `the embedded key store needs Node's built-in \`node:sqlite\`, which this Node (${process.version}) does not offer without a flag: run on Node 22.13 or later, or start Node with --experimental-sqlite (${(err as Error).message})`,
    );
  }
}

export class SqliteKeyStore implements KeyStore {
  readonly kind = 'sqlite';
  private readonly db: DatabaseSync;
  private readonly byDigest: StatementSync;
  private readonly byId: StatementSync;
  private readonly all: StatementSync;
  private readonly insert: StatementSync;
  private readonly update: StatementSync;
  private readonly sweep: StatementSync;
  private readonly begin: StatementSync;
  private readonly commit: StatementSync;
  private readonly rollback: StatementSync;
  /** By line count: read n counters in one query, add n amounts in one upsert (prepared on first use). */
  private readonly readMany: StatementSync[] = [];
  private readonly addMany: StatementSync[] = [];
  private readonly checkpointer: Checkpointer | undefined;
  /** Settlements not written yet, summed by counter: they ride on the next reservation's transaction (ADR 0048). */
  private readonly pending = new SettlementQueue(() => {
    try {
      this.flush();
    } catch {
      // Still queued (e.g. another process held the lock past busy_timeout): the next reservation or timer writes it.
      this.pending.arm();
    }
  });
  /** Parsed key records by their stored JSON: an unchanged key is not parsed again (and keeps its identity). */
  private readonly parsed = new Map<string, KeyRecord>();
  private reservations = 0;

  static async open(path: string, checkpoints?: CheckpointOptions): Promise<SqliteKeyStore> {
    const { DatabaseSync } = await loadSqlite();
    if (path === ':memory:') return new SqliteKeyStore(new DatabaseSync(path), undefined);
    mkdirSync(dirname(path), { recursive: true });
    const db = new DatabaseSync(path);
    return new SqliteKeyStore(db, () => new Checkpointer(path, checkpoints));
  }

  private constructor(db: DatabaseSync, checkpointer: (() => Checkpointer) | undefined) {
    this.db = db;
    // WAL: readers never wait for the writer; busy_timeout: a writer waits for another process's transaction.
    db.exec('PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
    db.exec(SCHEMA);
    // Checkpoints run on a worker thread's connection, never inside a commit on this thread (checkpointer.ts).
    if (checkpointer) {
      db.exec('PRAGMA wal_autocheckpoint = 0');
      this.checkpointer = checkpointer();
    }
    this.byDigest = db.prepare('SELECT record FROM vk_keys WHERE digest = ?');
    this.byId = db.prepare('SELECT record FROM vk_keys WHERE id = ?');
    this.all = db.prepare('SELECT record FROM vk_keys ORDER BY id');
    this.insert = db.prepare('INSERT INTO vk_keys (id, digest, record) VALUES (?, ?, ?)');
    this.update = db.prepare('UPDATE vk_keys SET digest = ?, record = ? WHERE id = ?');
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.sweep = db.prepare('DELETE FROM vk_counters WHERE expires > 0 AND expires < ?');
  }

  find(digest: string): KeyRecord | undefined {
    const row = this.byDigest.get(digest) as { record: string } | undefined;
    if (!row) return undefined;
    let record = this.parsed.get(row.record);
    if (!record) {
      if (this.parsed.size >= PARSED_MAX) this.parsed.clear();
      record = JSON.parse(row.record) as KeyRecord;
      this.parsed.set(row.record, record);
    }
    return record;
  }

  private readStatement(n: number): StatementSync {
    return (this.readMany[n] ??= this.db.prepare(`SELECT name, value, expires FROM vk_counters WHERE name IN (?${',?'.repeat(n - 1)})`));
  }

  private addStatement(n: number): StatementSync {
    return (this.addMany[n] ??= this.db.prepare(
      `INSERT INTO vk_counters (name, value, expires) VALUES (?, ?, ?)${', (?, ?, ?)'.repeat(n - 1)} ON CONFLICT(name) DO UPDATE SET value = value + excluded.value, expires = excluded.expires`,
    ));
  }

  /** Add amounts to counters (inside a transaction), at most ADD_BATCH rows per statement. */
  private addAll(rows: readonly { readonly counter: string; readonly amount: number; readonly expiresAt: number }[]): void {
    for (let at = 0; at < rows.length; at += ADD_BATCH) {
      const n = Math.min(ADD_BATCH, rows.length - at);
      const args: (string | number)[] = new Array(n * 3);
      for (let i = 0; i < n; i++) {
        const r = rows[at + i]!;
        args[i * 3] = r.counter;
        args[i * 3 + 1] = r.amount;
        args[i * 3 + 2] = r.expiresAt;
      }
      this.addStatement(n).run(...args);
    }
  }

  /** Write the queued settlements (inside a transaction); the queue is emptied by the caller once committed. */
  private writePending(): void {
    this.addAll(this.pending.rows());
  }

  reserve(lines: readonly CounterLine[]): number {
    if (lines.length === 0) return -1;
    const now = Date.now();
    const names = lines.map((l) => l.counter);
    // IMMEDIATE takes the write lock first, so no other process reads the counters between our check and our add.
    this.begin.run();
    try {
      const flushed = this.pending.size > 0;
      if (flushed) this.writePending();
      // One query for every counter, one upsert for every amount: a reservation is 4 statements (with BEGIN/COMMIT).
      const rows = this.readStatement(names.length).all(...names) as { name: string; value: number; expires: number }[];
      for (let i = 0; i < lines.length; i++) {
        const row = rows.find((r) => r.name === names[i]);
        const value = row && (row.expires === 0 || row.expires > now) ? row.value : 0;
        if (value >= lines[i]!.limit) {
          // Nothing taken; queued settlements written above still count.
          if (flushed) this.commit.run();
          else this.rollback.run();
          if (flushed) this.pending.clear();
          return i;
        }
      }
      this.addAll(lines);
      if (++this.reservations % SWEEP_EVERY === 0) this.sweep.run(now);
      this.commit.run();
      if (flushed) this.pending.clear();
      return -1;
    } catch (err) {
      if (this.db.isTransaction) this.rollback.run();
      throw err;
    }
  }

  /**
   * Queued, summed by counter, and written with the next reservation (the next request's transaction) or within
   * SETTLE_DELAY_MS: one write transaction per request instead of two. The reservation already holds the estimate, so
   * a settlement seen a few ms late by another process only delays a correction (ADR 0048).
   */
  settle(deltas: readonly CounterDelta[]): void {
    this.pending.add(deltas);
  }

  /** Write queued settlements now. */
  flush(): void {
    if (this.pending.size === 0 || !this.db.isOpen) return;
    this.begin.run();
    try {
      this.writePending();
      this.commit.run();
      this.pending.clear();
    } catch (err) {
      if (this.db.isTransaction) this.rollback.run();
      throw err;
    }
  }

  async values(counters: readonly string[]): Promise<number[]> {
    this.flush();
    const now = Date.now();
    if (counters.length === 0) return [];
    const rows = this.readStatement(counters.length).all(...counters) as { name: string; value: number; expires: number }[];
    return counters.map((c) => {
      const row = rows.find((r) => r.name === c);
      return row && (row.expires === 0 || row.expires > now) ? row.value : 0;
    });
  }

  async create(record: KeyRecord, digest: string): Promise<void> {
    this.insert.run(record.id, digest, JSON.stringify(record));
  }

  async get(id: string): Promise<KeyRecord | undefined> {
    const row = this.byId.get(id) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as KeyRecord) : undefined;
  }

  async list(): Promise<KeyRecord[]> {
    return (this.all.all() as { record: string }[]).map((r) => JSON.parse(r.record) as KeyRecord);
  }

  /** Read and rewrite a live key in one write transaction, so a rotation racing a revocation (another process) loses cleanly. */
  private change(id: string, digest: string, fields: Partial<KeyRecord>): boolean {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const row = this.byId.get(id) as { record: string } | undefined;
      const current = row ? (JSON.parse(row.record) as KeyRecord) : undefined;
      if (!current || current.revokedAt !== undefined) {
        this.db.exec('ROLLBACK');
        return false;
      }
      this.update.run(digest, JSON.stringify({ ...current, ...fields }), id);
      this.db.exec('COMMIT');
      return true;
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
  }

  async rotate(id: string, digest: string, prefix: string, at: string): Promise<boolean> {
    return this.change(id, digest, { prefix, rotatedAt: at });
  }

  async revoke(id: string, at: string): Promise<boolean> {
    // The digest is replaced by one no secret has, so the revoked secret cannot even be looked up.
    return this.change(id, `revoked:${id}`, { revokedAt: at });
  }

  /** Run a checkpoint on the background connection now (tests; nothing on the serving path calls it). */
  checkpoint(): Promise<CheckpointResult | undefined> {
    return this.checkpointer ? this.checkpointer.now() : Promise.resolve(undefined);
  }

  async close(): Promise<void> {
    try {
      this.flush();
    } finally {
      if (this.db.isOpen) this.db.close();
    }
    await this.checkpointer?.close();
  }
}
