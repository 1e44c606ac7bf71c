// WAL checkpoints of the embedded store, off the event loop (ADR 0048). `node:sqlite` is synchronous: SQLite's
// automatic checkpoint (copy the WAL into the database file, then fsync) would run inside whichever commit crosses
// 1,000 pages and stall every request in flight for tens of ms. The serving connection turns it off
// (`wal_autocheckpoint = 0`) and this worker thread, on its own connection, checkpoints instead:
//  - PASSIVE at most every `everyMs` (100 ms) while writes are heavy, else every `quietMs` (500 ms): never waits for
//    and never blocks a writer. When it has copied everything, the serving
//    connection's next write starts the WAL over from its beginning (SQLite does that itself), so the file stays small.
//  - RESTART once the WAL holds `restartFrames` frames (writes never paused long enough for that to happen): takes
//    the write lock for as long as it takes to copy what was written during the PASSIVE pass just before and to
//    restart the WAL: one short wait for the serving thread, rarely, instead of the whole checkpoint.
import { Worker } from 'node:worker_threads';

export interface CheckpointOptions {
  /** How often the checkpointer looks (and checkpoints while writes are heavy: see `busyFrames`). Default 100 ms. */
  readonly everyMs?: number;
  /**
   * Longest between two checkpoints while the WAL stays small. Default 500 ms: a PASSIVE checkpoint's CPU is its
   * fsyncs (about 2 ms on ext4 whether it copies 130 commits or 1,300; 40 µs without them), so one every 100 ms was
   * 20-25 ms of CPU a second whatever the load (docs/perf.md "Virtual keys, session 9").
   */
  readonly quietMs?: number;
  /**
   * Frames the last checkpoint found in the WAL from which the next one runs at the next look (`everyMs`), as before
   * session 9: under heavy writes (many keys, high rates) the WAL stays as small as it was. Default 1,000 (SQLite's
   * own automatic threshold).
   */
  readonly busyFrames?: number;
  /** WAL size in frames (pages) past which the checkpoint restarts the WAL even under constant writes. Default 8,192 (32 MB). */
  readonly restartFrames?: number;
}

/** The worker's source: plain CommonJS (it runs with `eval`, so it works from the sources and from a bundle alike). */
const SOURCE = `
const { DatabaseSync } = require('node:sqlite');
const { parentPort, workerData } = require('node:worker_threads');
const db = new DatabaseSync(workerData.path);
// busy_timeout only matters to RESTART (PASSIVE never waits): how long it may wait for a writer or a reader.
db.exec('PRAGMA busy_timeout = 1000; PRAGMA wal_autocheckpoint = 0');
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)');
let last = 0;
let lastLog = 0;
const tick = () => {
  last = Date.now();
  try {
    const r = passive.get();
    lastLog = r.log;
    if (r.log >= workerData.restartFrames) return restart.get();
    return r;
  } catch (err) {
    return { error: String(err && err.message || err) };
  }
};
// A quiet WAL waits quietMs; one the last checkpoint found busy is checkpointed at every look.
const timer = setInterval(() => {
  if (lastLog >= workerData.busyFrames || Date.now() - last >= workerData.quietMs) tick();
}, workerData.everyMs);
parentPort.on('message', (m) => {
  if (m === 'now') parentPort.postMessage(tick());
  else if (m === 'close') {
    clearInterval(timer);
    // The last connection to close folds the WAL into the file and removes it: here, not on the serving thread.
    try { db.close(); } catch {}
    parentPort.close();
  }
});
`;

/** What one checkpoint did: frames in the WAL and frames copied into the database (`busy` 1: it could not finish). */
export interface CheckpointResult {
  readonly busy?: number;
  readonly log?: number;
  readonly checkpointed?: number;
  readonly error?: string;
}

/** The background checkpointer of one database file. */
export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;

  constructor(path: string, options: CheckpointOptions = {}) {
    this.worker = new Worker(SOURCE, {
      eval: true,
      workerData: { path, everyMs: options.everyMs ?? 100, quietMs: options.quietMs ?? 500, busyFrames: options.busyFrames ?? 1000, restartFrames: options.restartFrames ?? 8192 },
      // A small thread: no inspector, no env copy needed beyond the default.
      resourceLimits: { maxOldGenerationSizeMb: 16 },
    });
    // Never keeps the process alive; a failure to open only means checkpoints fall back to the next start.
    this.worker.unref();
    this.worker.on('error', () => undefined);
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
  }

  /** Checkpoint now (tests, and a caller that wants the WAL folded in before it reads the file). */
  now(): Promise<CheckpointResult> {
    return new Promise((resolve) => {
      this.worker.once('message', (r: CheckpointResult) => resolve(r));
      this.worker.ref();
      this.worker.postMessage('now');
    }).finally(() => this.worker.unref()) as Promise<CheckpointResult>;
  }

  /** Stop: the worker closes its connection (after the serving one, so it folds the WAL in) and exits. */
  close(): Promise<void> {
    this.worker.ref();
    this.worker.postMessage('close');
    return this.exited;
  }
}
