// The embedded store (ADR 0035): one SQLite file through Node's built-in `node:sqlite`, in WAL mode so several
// worker processes or threads on one machine share it; every reservation is one write transaction.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { Checkpointer } from './checkpointer.ts';
import type { CheckpointOptions, CheckpointResult } from './checkpointer.ts';
import type { CounterDelta, CounterLine, KeyRecord, KeyStore } from './types.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS vk_keys (id TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vk_counters (name TEXT PRIMARY KEY, value REAL NOT NULL, expires INTEGER NOT NULL);
`;

/** Expired counters are swept every this many reservations (a window's counter is dead once it ended). */
const SWEEP_EVERY = 4096;

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
  private readonly read: StatementSync;
  private readonly add: StatementSync;
  private readonly sweep: StatementSync;
  private readonly checkpointer: Checkpointer | undefined;
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
    this.read = db.prepare('SELECT value, expires FROM vk_counters WHERE name = ?');
    this.add = db.prepare(
      'INSERT INTO vk_counters (name, value, expires) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value, expires = excluded.expires',
    );
    this.sweep = db.prepare('DELETE FROM vk_counters WHERE expires > 0 AND expires < ?');
  }

  find(digest: string): KeyRecord | undefined {
    const row = this.byDigest.get(digest) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as KeyRecord) : undefined;
  }

  private value(name: string, now: number): number {
    const row = this.read.get(name) as { value: number; expires: number } | undefined;
    return row && (row.expires === 0 || row.expires > now) ? row.value : 0;
  }

  reserve(lines: readonly CounterLine[]): number {
    const now = Date.now();
    // IMMEDIATE takes the write lock first, so no other process reads the counters between our check and our add.
    this.db.exec('BEGIN IMMEDIATE');
    try {
      for (let i = 0; i < lines.length; i++) {
        if (this.value(lines[i]!.counter, now) >= lines[i]!.limit) {
          this.db.exec('ROLLBACK');
          return i;
        }
      }
      for (const line of lines) this.add.run(line.counter, line.amount, line.expiresAt);
      if (++this.reservations % SWEEP_EVERY === 0) this.sweep.run(now);
      this.db.exec('COMMIT');
      return -1;
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
  }

  settle(deltas: readonly CounterDelta[]): void {
    if (deltas.length === 0) return;
    this.db.exec('BEGIN IMMEDIATE');
    try {
      for (const d of deltas) this.add.run(d.counter, d.amount, d.expiresAt);
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
  }

  async values(counters: readonly string[]): Promise<number[]> {
    const now = Date.now();
    return counters.map((c) => this.value(c, now));
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
    if (this.db.isOpen) this.db.close();
    await this.checkpointer?.close();
  }
}
