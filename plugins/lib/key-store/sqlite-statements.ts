// The SQLite store's statements (ADR 0054, 0068, 0072, 0103): the reservation statement's text for any number of rows
// (reserveSql), the row counts it is prepared for (statementRows, pad), its prepared forms by size, and the key and
// counter statements, prepared once per connection with the functions the reservation calls to abort (vk_refuse,
// vk_gone). Apart from sqlite-store.ts, which fills their parameters per reservation and runs them: what the store
// asks of the file is here, how it groups, leases and settles is there.
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { CounterDelta } from './types.ts';

/**
 * Rows per reservation statement (lines plus queued settlements; 5 parameters each): more settlements go first, alone.
 * Under load with many keys a burst of answers queues dozens of keys' settlements before the next reservation; the
 * statement is linear in its rows (ADR 0072), so they ride on it rather than cost a transaction of their own.
 */
export const MAX_ROWS = 256;

/** Thrown by `vk_refuse()` inside the reservation statement: aborts it (nothing written) and names the counter. */
export class Refusal {
  readonly counter: string;
  constructor(counter: string) {
    this.counter = counter;
  }
}

/** Thrown by `vk_gone()` inside the reservation statement: the digest no longer names a key (rotated or revoked). */
export class Gone {}

/**
 * A reservation in one statement (ADR 0054): per row (counter, settle, amount, limit, expires) it applies the queued
 * settlement, checks the limit (none for a settlement-only row: NULL) and adds the amount. A counter at its limit calls
 * `vk_refuse`, which throws, and SQLite rolls the whole statement back: nothing taken, no settlement written. In
 * autocommit, the statement takes the write lock before it reads, like BEGIN IMMEDIATE did. The arithmetic keeps the
 * order of the former settle-then-add statements ((value + settle) + amount); a counter whose window has expired
 * counts as 0 in the check, as before.
 *
 * Each row's counter is read once, by its primary key, in the SELECT (a LEFT JOIN), which computes the new value;
 * the upsert only stores it (`excluded.value`). A correlated lookup of the row in `v` from the DO UPDATE (as before
 * ADR 0072) scanned `v` for every row: quadratic in the rows, which many keys' queued settlements make many.
 */
export function reserveSql(rows: number, checked: boolean): string {
  // With a digest (ADR 0068): the key found through the cache must still be there, in the same write transaction.
  // The keys version first (ADR 0103): unchanged since the digest was read, no key was changed or removed since, so
  // the digest still names its key; only otherwise the digest's index is searched (with 1,000 keys, cache misses).
  const where = checked
    ? `CASE WHEN (SELECT value FROM vk_meta WHERE name = 'keys') = ? OR EXISTS (SELECT 1 FROM vk_keys WHERE digest = ?) THEN true ELSE vk_gone() END`
    : 'true';
  return `WITH v(name, settle, amount, lim, exp) AS (VALUES (?, ?, ?, ?, ?)${', (?, ?, ?, ?, ?)'.repeat(rows - 1)})
INSERT INTO vk_counters (name, value, expires)
SELECT v.name, CASE WHEN (CASE WHEN c.expires > 0 AND c.expires <= ? THEN 0 ELSE coalesce(c.value, 0) END) + v.settle >= v.lim
    THEN vk_refuse(v.name) ELSE coalesce(c.value, 0) + v.settle + v.amount END, v.exp
FROM v LEFT JOIN vk_counters AS c ON c.name = v.name WHERE v.name IS NOT NULL AND ${where}
ON CONFLICT(name) DO UPDATE SET value = excluded.value, expires = excluded.expires`;
}

/**
 * The statement size used for `rows` rows: exact up to 16, then the next multiple of 8 up to 64, of 32 up to MAX_ROWS;
 * the rest are padding rows (a NULL counter, which the statement skips). With many keys the rows of a reservation
 * vary with the settlements queued (dozens, up to MAX_ROWS): a statement per exact count was up to 2 × 256 prepared
 * statements, about 27 MiB and 0.5 s of event-loop time to prepare (1 ms each for the largest); now at most 2 × 28.
 * A padding row costs about 0.7 µs.
 */
export function statementRows(rows: number): number {
  if (rows <= 16) return rows;
  if (rows <= 64) return (rows + 7) & ~7;
  return Math.min(MAX_ROWS, (rows + 31) & ~31);
}

/** Fill `args` from index `at` with skipped rows (5 parameters each) up to `size` rows; returns the index after them. */
export function pad(args: (string | number | null)[], at: number, size: number): number {
  while (at < size * 5) {
    args[at++] = null;
    args[at++] = 0;
    args[at++] = 0;
    args[at++] = null;
    args[at++] = 0;
  }
  return at;
}

/** A connection's prepared statements: the fixed ones, and the reservation and read statements by size (on first use). */
export class SqliteStatements {
  /** A key's record and the keys version (raised by the triggers on every change) in one read: the cache's check. */
  readonly byDigest: StatementSync;
  readonly byId: StatementSync;
  readonly all: StatementSync;
  readonly insert: StatementSync;
  readonly update: StatementSync;
  readonly sweep: StatementSync;
  readonly begin: StatementSync;
  readonly commit: StatementSync;
  readonly rollback: StatementSync;
  /** The keys version check alone, for a reservation whose lines all came from leases and nothing else is due. */
  readonly keyCheck: StatementSync;
  private readonly db: DatabaseSync;
  /** By count: read n counters in one query; reserve/settle n rows in one statement (prepared on first use). */
  private readonly readMany: StatementSync[] = [];
  private readonly reserveMany: StatementSync[] = [];
  private readonly reserveChecked: StatementSync[] = [];

  constructor(db: DatabaseSync) {
    this.db = db;
    this.byDigest = db.prepare(`SELECT record, (SELECT value FROM vk_meta WHERE name = 'keys') AS version FROM vk_keys WHERE digest = ?`);
    this.byId = db.prepare('SELECT record FROM vk_keys WHERE id = ?');
    this.all = db.prepare('SELECT record FROM vk_keys ORDER BY id');
    this.insert = db.prepare('INSERT INTO vk_keys (id, digest, record) VALUES (?, ?, ?)');
    this.update = db.prepare('UPDATE vk_keys SET digest = ?, record = ? WHERE id = ?');
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.sweep = db.prepare('DELETE FROM vk_counters WHERE expires > 0 AND expires < ?');
    this.keyCheck = db.prepare(`SELECT (SELECT value FROM vk_meta WHERE name = 'keys') = ? OR EXISTS (SELECT 1 FROM vk_keys WHERE digest = ?) AS live`);
    db.function('vk_refuse', { directOnly: true, deterministic: false }, (counter) => {
      throw new Refusal(String(counter));
    });
    db.function('vk_gone', { directOnly: true, deterministic: false }, () => {
      throw new Gone();
    });
  }

  /**
   * Settlements alone (the store's flush): MAX_ROWS rows a statement, in one transaction when they need several. Inside
   * a group's transaction (ADR 0090) the group's commit writes them; a failure is the group's to roll back.
   */
  writeSettlements(rows: readonly CounterDelta[]): void {
    const several = rows.length > MAX_ROWS && !this.db.isTransaction;
    if (several) this.begin.run();
    try {
      for (let at = 0; at < rows.length; at += MAX_ROWS) {
        const chunk = rows.slice(at, at + MAX_ROWS);
        const args: (string | number | null)[] = [];
        for (const d of chunk) args.push(d.counter, d.amount, 0, null, d.expiresAt);
        const size = statementRows(chunk.length);
        pad(args, args.length, size);
        args.push(Date.now());
        this.reserveStatement(size).run(...args);
      }
      if (several) this.commit.run();
    } catch (err) {
      if (several && this.db.isTransaction) this.rollback.run();
      throw err;
    }
  }

  readStatement(n: number): StatementSync {
    return (this.readMany[n] ??= this.db.prepare(`SELECT name, value, expires FROM vk_counters WHERE name IN (?${',?'.repeat(n - 1)})`));
  }

  /** The reservation statement of `rows` rows (a size from statementRows), without a key check. */
  reserveStatement(rows: number): StatementSync {
    return (this.reserveMany[rows] ??= this.db.prepare(reserveSql(rows, false)));
  }

  /** The same, checking the reservation's key (its digest, or the keys version it was read at). */
  checkedStatement(rows: number): StatementSync {
    return (this.reserveChecked[rows] ??= this.db.prepare(reserveSql(rows, true)));
  }
}
