// The embedded store (ADR 0035): one SQLite file through Node's built-in `node:sqlite`, in WAL mode so several
// worker processes or threads on one machine share it; every reservation is one write transaction. This file fills
// each reservation's statement (leased lines, riding settlements) and acts on its outcome; the group commit per
// event-loop turn is in sqlite-group-commit.ts, the statements' text and their prepared forms in sqlite-statements.ts,
// the file's set-up in sqlite-schema.ts.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { Checkpointer } from './checkpointer.ts';
import { loadSqlite, setUpDatabase } from './sqlite-schema.ts';
import { Gone, MAX_ROWS, pad, Refusal, SqliteStatements, statementRows } from './sqlite-statements.ts';
import { VersionedKeyCache } from './key-cache.ts';
import { GroupCommit } from './sqlite-group-commit.ts';
import type { GroupWriter } from './sqlite-group-commit.ts';
import { lineStates, settleGrouped } from './counter-groups.ts';
import { DRAWN, LEASE_REFUSED, LeaseBook, LeasedCounter, NOTHING_TAKEN } from './counter-leases.ts';
import type { LeaseOptions } from './counter-leases.ts';
import { dueEverything, joinQueue, LazySums, queuedLazyState } from './lazy-sums.ts';
import type { QueuedLazyState } from './lazy-sums.ts';
import { SettlementQueue } from './settlement-queue.ts';
import type { CheckpointOptions, CheckpointResult } from './checkpointer.ts';
import { KEY_GONE } from './types.ts';
import type { CounterDelta, CounterLine, CounterMemo, KeyRecord, KeyStore } from './types.ts';

/** Expired counters are swept every this many reservations (a window's counter is dead once it ended). */
const SWEEP_EVERY = 4096;
/** Lazy (lifetime) settlements added to one reservation at most: a burst of them is spread over the next requests. */
const LAZY_PER_RESERVATION = 8;
/** Parsed key records kept (a cache of the hot keys, emptied when full). */
const PARSED_MAX = 4096;

/** Options of the store (beside its checkpoints). */
export interface SqliteStoreOptions {
  /**
   * Group commit (ADR 0090): the first reservation of an event-loop turn is written at once, as before; the others
   * of the same turn wait for the turn's end (`setImmediate`) and share one write transaction, each its own statement
   * and its own check. The gateway's store (openStore) groups; without it every reservation answers at once.
   */
  readonly group?: boolean;
  /**
   * Budget leases (ADR 0108), as the Redis store takes them: several processes on one file then write a team's
   * counter about once per LEASE_REQUESTS of its reservations. The gateway's store leases (openStore); without it,
   * none.
   */
  readonly leases?: LeaseOptions;
}

/**
 * A counter's settlement state (the queue's) with its place in the reservation statement being built (ADR 0103): a
 * due settlement whose counter is one of the reservation's lines is merged into that line's row, found on the state.
 */
class SqliteCounter extends LeasedCounter {
  /** The reservation (`built` count) that has this counter as its row `line`. */
  built = 0;
  line = 0;
}

export class SqliteKeyStore implements KeyStore {
  readonly kind = 'sqlite';
  private readonly db: DatabaseSync;
  /** The connection's prepared statements (sqlite-statements.ts). */
  private readonly sql: SqliteStatements;
  /** Reservation parameters by their count (reserveNow). */
  private readonly argsByLength: (string | number | null)[][] = [];
  /** Reservation statements built (each line's state is stamped with the count: SqliteCounter). */
  private built = 0;
  /** Marks a line's state as the line `i` of the reservation being built (reserveNow; made once). */
  private readonly markLine = (c: SqliteCounter, i: number): void => {
    const l = this.buildLines[i]!;
    this.lineState[i] = c;
    // A lease's room serves the line without a row; a row sent may lease room beyond its amount (ADR 0108).
    if (this.leases.draw(c, l, this.buildAt)) {
      this.lineLease[i] = DRAWN;
      return;
    }
    this.pending.claimState(c, this.buildAt);
    const size = this.leases.sizeFor(c, l, this.buildAt);
    if (size > 0) c.leasing = true;
    this.lineLease[i] = size;
    c.built = this.built;
    c.line = this.buildRows++;
  };
  private buildAt = 0;
  /**
   * The reservation being built: its lines, and per line its state and its lease size (DRAWN: drawn from a lease, no
   * row; else the room its row leases, 0: none), as LeaseBook.answerLines reads them.
   */
  private buildLines: readonly CounterLine[] = [];
  private buildRows = 0;
  private readonly lineState: SqliteCounter[] = [];
  private readonly lineLease: number[] = [];
  /** Budget leases (ADR 0108): a lease's room goes back to the file as a settlement of its counter. */
  private readonly leases: LeaseBook<SqliteCounter>;
  /** A settlement of a leased counter goes to its room, any other to the queue. */
  private readonly settleOne = (c: SqliteCounter, amount: number, expiresAt: number): void => {
    if (!this.leases.settle(c, amount)) this.pending.addTo(c, amount, expiresAt);
  };
  /** Records found (ADR 0068), kept while the keys version is unchanged (ADR 0072); each reservation confirms its key's digest. */
  private readonly cache = new VersionedKeyCache();
  private readonly checkpointer: Checkpointer | undefined;
  /** Settlements not written yet, summed by counter: they ride on the next reservation's transaction (ADR 0048). */
  private readonly pending = new SettlementQueue<SqliteCounter>(() => this.tryFlush(), (counter) => new SqliteCounter(counter));
  /** Lifetime counters' settlements, summed: they join `pending` once LAZY_MS old, a few per reservation (ADR 0072, 0111). */
  private readonly lazy = new LazySums<QueuedLazyState<SqliteCounter>>(() => this.tryFlush(true), queuedLazyState);
  /** A lifetime sum come due joins the queue on its counter's state, kept on its entry (no lookup by name per sum). */
  private readonly lazyDue = (q: QueuedLazyState<SqliteCounter>, amount: number, expiresAt: number): void => joinQueue(this.pending, q, amount, expiresAt);
  /** Parsed key records by their stored JSON: an unchanged key is not parsed again (and keeps its identity). */
  private readonly parsed = new Map<string, KeyRecord>();
  private reservations = 0;
  /** Group commit per event-loop turn (ADR 0090; sqlite-group-commit.ts), when the store groups. */
  private readonly groups: GroupCommit | undefined;

  static async open(path: string, checkpoints?: CheckpointOptions, options?: SqliteStoreOptions): Promise<SqliteKeyStore> {
    const { DatabaseSync } = await loadSqlite();
    if (path === ':memory:') {
      const memory = new DatabaseSync(path);
      await setUpDatabase(memory);
      return new SqliteKeyStore(memory, undefined, options);
    }
    mkdirSync(dirname(path), { recursive: true });
    const db = new DatabaseSync(path);
    try {
      await setUpDatabase(db);
    } catch (err) {
      db.close();
      throw err;
    }
    return new SqliteKeyStore(db, () => new Checkpointer(path, checkpoints), options);
  }

  private constructor(db: DatabaseSync, checkpointer: (() => Checkpointer) | undefined, options: SqliteStoreOptions | undefined) {
    this.db = db;
    this.groups = options?.group === true ? new GroupCommit(this.groupWriter()) : undefined;
    this.leases = new LeaseBook<SqliteCounter>((c, amount) => this.pending.addTo(c, amount, c.leaseExpiresAt), options?.leases ?? { requests: 0 });
    // Checkpoints run on a worker thread's connection, never inside a commit on this thread (checkpointer.ts).
    if (checkpointer) {
      db.exec('PRAGMA wal_autocheckpoint = 0');
      this.checkpointer = checkpointer();
    }
    this.sql = new SqliteStatements(db);
  }

  find(digest: string, memo?: CounterMemo): KeyRecord | undefined {
    const now = Date.now();
    return this.cache.get(digest, now, memo) ?? this.read(digest, now);
  }

  /** Read a key (and the keys version) from the file, and keep it. */
  private read(digest: string, now: number): KeyRecord | undefined {
    const row = this.sql.byDigest.get(digest) as { record: string; version: number | null } | undefined;
    if (!row) return undefined;
    let record = this.parsed.get(row.record);
    if (!record) {
      if (this.parsed.size >= PARSED_MAX) this.parsed.clear();
      record = JSON.parse(row.record) as KeyRecord;
      this.parsed.set(row.record, record);
    }
    // No version row (removed by hand; every open puts it back): nothing is cached, as nothing would tell a change.
    if (typeof row.version === 'number') this.cache.set(digest, record, row.version, now);
    return record;
  }

  reserve(lines: readonly CounterLine[], digest?: string, keyMemo?: CounterMemo): number | Promise<number> {
    if (lines.length === 0) {
      if (digest === undefined || this.read(digest, Date.now())) return -1;
      this.cache.drop(digest);
      return KEY_GONE;
    }
    return this.groups?.join(lines, digest, keyMemo) ?? this.reserveNow(lines, digest, keyMemo);
  }

  /** How the group commit writes a group: this connection's transaction and reservation statements. */
  private groupWriter(): GroupWriter {
    return {
      reserveNow: (lines, digest, keyMemo) => this.reserveNow(lines, digest, keyMemo),
      begin: () => this.sql.begin.run(),
      commit: () => this.sql.commit.run(),
      rollback: () => {
        if (this.db.isTransaction) this.sql.rollback.run();
      },
    };
  }

  private reserveNow(lines: readonly CounterLine[], digest: string | undefined, keyMemo: CounterMemo | undefined): number {
    const now = Date.now();
    this.lazy.dueEach(now, LAZY_PER_RESERVATION, this.lazyDue);
    // Refunds held for these counters ride too, and ripe ones (ADR 0097). Each line's state is found through the
    // first line's (the key's last reservation's group, ADR 0103) and stamped with its place in this statement.
    this.pending.trim();
    this.built++;
    this.buildAt = now;
    this.buildLines = lines;
    this.buildRows = 0;
    lineStates(this.pending, lines, this.markLine);
    const sent = this.buildRows;
    this.pending.ripen(now);
    // Settlements ride on this statement: merged into a line's row when they are for its counter, else rows of their own
    // (read from the queue in place: no copy of it per request).
    const pending = this.pending;
    if (pending.size > 0 && pending.size + lines.length > MAX_ROWS) this.flush(false);
    const queued = pending.size > 0;
    // Rows: the lines, then the queued settlements for other counters. The parameters go into an array of the final
    // size (pushes grew it four or five times per request: most of the store's allocation on the serving path).
    // A due settlement whose state is stamped with this statement merges into its line's row (no lookup by name).
    const built = this.built;
    let rows = sent;
    for (let i = 0; i < pending.size; i++) if (pending.at(i).built !== built) rows++;
    if (rows === 0) return this.checkKeyOnly(lines, digest, keyMemo);
    const size = statementRows(rows);
    // One parameter array per length, reused (run() is synchronous and every slot is written below): made per
    // reservation it was the store's largest allocation, and V8 at times allocated it in the old generation.
    const length = size * 5 + (digest === undefined ? 1 : 3);
    const args = (this.argsByLength[length] ??= new Array<string | number | null>(length));
    let at = 0;
    for (let i = 0; i < lines.length; i++) {
      const lease = this.lineLease[i]!;
      if (lease === DRAWN) continue;
      const l = lines[i]!;
      args[at++] = l.counter;
      args[at++] = 0;
      args[at++] = l.amount + lease;
      args[at++] = l.limit - lease;
      args[at++] = l.expiresAt;
    }
    for (let i = 0; i < pending.size; i++) {
      const d = pending.at(i);
      if (d.built === built) {
        // The line's settle column (a counter is at most once in the due list).
        args[d.line * 5 + 1] = d.amount;
        continue;
      }
      args[at++] = d.counter;
      args[at++] = d.amount;
      args[at++] = 0;
      args[at++] = null;
      args[at++] = d.expiresAt;
    }
    at = pad(args, at, size);
    // Parameters in the text's order: the rows, the time (the SELECT's expiry check), the keys version the digest was
    // read at (NULL when not cached: the digest is searched) and the digest (WHERE).
    args[at++] = now;
    if (digest !== undefined) {
      args[at++] = this.cache.versionOf(digest, keyMemo) ?? null;
      args[at] = digest;
    }
    try {
      (digest === undefined ? this.sql.reserveStatement(size) : this.sql.checkedStatement(size)).run(...args);
    } catch (err) {
      if (err instanceof Gone) {
        this.leases.answerLines(this.lineState, this.lineLease, lines, KEY_GONE, now);
        this.cache.drop(digest);
        if (queued) this.tryFlush();
        return KEY_GONE;
      }
      if (!(err instanceof Refusal)) {
        this.leases.answerLines(this.lineState, this.lineLease, lines, NOTHING_TAKEN, now);
        throw err;
      }
      const i = lines.findIndex((l) => l.counter === err.counter);
      if (this.leases.answerLines(this.lineState, this.lineLease, lines, i === -1 ? NOTHING_TAKEN : i, now) === LEASE_REFUSED) {
        // A lease line refused near its limit: the same reservation again without that lease (its settlements with it).
        return this.reserveNow(lines, digest, keyMemo);
      }
      // Nothing was written; the queued settlements still count, alone.
      if (queued) this.tryFlush();
      return i === -1 ? 0 : i;
    }
    this.leases.answerLines(this.lineState, this.lineLease, lines, -1, now);
    if (queued) this.pending.clear();
    if (++this.reservations % SWEEP_EVERY === 0) this.sql.sweep.run(now);
    return -1;
  }

  /** Every line came from a lease and nothing else is due: only the key is checked (the statement's own check, alone). */
  private checkKeyOnly(lines: readonly CounterLine[], digest: string | undefined, keyMemo: CounterMemo | undefined): number {
    if (digest === undefined) return -1;
    const row = this.sql.keyCheck.get(this.cache.versionOf(digest, keyMemo) ?? null, digest) as { live: number };
    if (row.live) return -1;
    this.leases.answerLines(this.lineState, this.lineLease, lines, KEY_GONE, this.buildAt);
    this.cache.drop(digest);
    return KEY_GONE;
  }

  /**
   * Queued, summed by counter, and written with the next reservation (the next request's transaction) or within
   * SETTLE_DELAY_MS: one write transaction per request instead of two. The reservation already holds the estimate, so
   * a settlement seen a few ms late by another process only delays a correction (ADR 0048).
   */
  settle(deltas: readonly CounterDelta[]): void {
    settleGrouped(this.pending, this.lazy, deltas, this.settleOne);
  }

  /**
   * Write due settlements now: one statement, or one transaction when they need several. With `lazy` (reads,
   * close, an idle store) the lazy sums and held refunds (ADR 0097) too; the serving path leaves them to ride on
   * reservations a few at a time (with many keys they are a second's worth of rows: thousands).
   */
  flush(lazy = true): void {
    if (lazy) {
      this.leases.closeAll();
      dueEverything(this.pending, this.lazy);
    }
    if (this.pending.size === 0 || !this.db.isOpen) return;
    this.sql.writeSettlements(this.pending.rows());
    this.pending.clear();
  }

  /** `flush`, keeping the queue (and its timer) when it fails: e.g. another process held the lock past busy_timeout. */
  private tryFlush(lazy = false): void {
    try {
      this.flush(lazy);
    } catch {
      this.pending.arm();
    }
  }

  async values(counters: readonly string[]): Promise<number[]> {
    this.flush();
    const now = Date.now();
    if (counters.length === 0) return [];
    const rows = this.sql.readStatement(counters.length).all(...counters) as { name: string; value: number; expires: number }[];
    return counters.map((c) => {
      const row = rows.find((r) => r.name === c);
      return row && (row.expires === 0 || row.expires > now) ? row.value : 0;
    });
  }

  async create(record: KeyRecord, digest: string): Promise<void> {
    this.sql.insert.run(record.id, digest, JSON.stringify(record));
  }

  async get(id: string): Promise<KeyRecord | undefined> {
    const row = this.sql.byId.get(id) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as KeyRecord) : undefined;
  }

  async list(): Promise<KeyRecord[]> {
    return (this.sql.all.all() as { record: string }[]).map((r) => JSON.parse(r.record) as KeyRecord);
  }

  /** Read and rewrite a live key in one write transaction, so a rotation racing a revocation (another process) loses cleanly. */
  private change(id: string, digest: string, fields: Partial<KeyRecord>): boolean {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const row = this.sql.byId.get(id) as { record: string } | undefined;
      const current = row ? (JSON.parse(row.record) as KeyRecord) : undefined;
      if (!current || current.revokedAt !== undefined) {
        this.db.exec('ROLLBACK');
        return false;
      }
      this.sql.update.run(digest, JSON.stringify({ ...current, ...fields }), id);
      this.db.exec('COMMIT');
      this.cache.drop();
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
      this.groups?.run();
      this.flush();
    } finally {
      if (this.db.isOpen) this.db.close();
    }
    await this.checkpointer?.close();
  }
}
