// The embedded store's file set up on open: Node's SQLite loaded, WAL mode and the schema (ADR 0035, 0072, 0103).
import { setTimeout as sleepFor } from 'node:timers/promises';

// The keys version starts at the time in µs (ADR 0103): a version row removed by hand and made again by the next open
// starts above every value the old one reached (one change per µs would be needed to catch up), so a record cached
// at an old version never matches it.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS vk_keys (id TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vk_counters (name TEXT PRIMARY KEY, value REAL NOT NULL, expires INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS vk_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO vk_meta (name, value) VALUES ('keys', CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER));
CREATE TRIGGER IF NOT EXISTS vk_keys_updated AFTER UPDATE ON vk_keys BEGIN UPDATE vk_meta SET value = value + 1 WHERE name = 'keys'; END;
CREATE TRIGGER IF NOT EXISTS vk_keys_deleted AFTER DELETE ON vk_keys BEGIN UPDATE vk_meta SET value = value + 1 WHERE name = 'keys'; END;
`;

/** SQLite's SQLITE_BUSY ("database is locked"), as node:sqlite reports it (`errcode`). */
const SQLITE_BUSY = 5;
/** The first wait after a busy answer; doubled each time, about 5 s in all. */
const FIRST_WAIT_MS = 10;
const WAITS = 9;

/**
 * WAL (readers never wait for the writer), busy_timeout (a writer waits for another connection's transaction), then
 * the schema. `journal_mode = WAL` answers SQLITE_BUSY at once, without busy_timeout's wait, while another connection
 * is switching the same new file to WAL: the workers of `config.workers` (or several gateways) opening one store
 * together. That answer is retried with a growing wait (about 5 s in all) instead of failing the config load.
 */
export async function setUpDatabase(db: { exec(sql: string): void }, sleep: (ms: number) => Promise<unknown> = sleepFor): Promise<void> {
  db.exec('PRAGMA busy_timeout = 5000');
  for (let attempt = 0; ; attempt++) {
    try {
      db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
      db.exec(SCHEMA);
      return;
    } catch (err) {
      if ((err as { errcode?: number }).errcode !== SQLITE_BUSY || attempt >= WAITS) throw err;
      await sleep(FIRST_WAIT_MS * 2 ** attempt);
    }
  }
}

/** `node:sqlite` without flags needs Node 22.13+ (22.12 has it behind `--experimental-sqlite`). */
export async function loadSqlite(): Promise<typeof import('node:sqlite')> {
  try {
    return await import('node:sqlite');
  } catch (err) {
    throw new Error(
      `the embedded key store needs Node's built-in \`node:sqlite\`, which this Node (${process.version}) does not offer without a flag: run on Node 22.13 or later, or start Node with --experimental-sqlite (${(err as Error).message})`,
    );
  }
}
