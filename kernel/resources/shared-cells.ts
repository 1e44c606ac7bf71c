import { SHARED_CELL_VALUES } from '../sdk/shared.ts';
import type { SharedCell } from '../sdk/shared.ts';
// Not `import ... from 'node:crypto'`: an ES import builds crypto's namespace, which reads its lazy `webcrypto` getter and
// so loads Node's WebCrypto for every gateway (docs/perf.md "Memory, session 10b").
const { createHash } = process.getBuiltinModule('node:crypto');

/**
 * One slot: lock (int32), state (int32), key hash (2 × uint32), then the values (float64). The lock holds 0 or its
 * holder's owner id; the state is EMPTY, READY or the owner id of the thread writing the key. An owner id is the
 * thread's id plus one (the main thread's id is 0), so the supervisor can free what a dead worker held.
 */
const SLOT_BYTES = 16 + 8 * SHARED_CELL_VALUES;
/** Slots in the arena (4096 × 64 bytes = 256 KiB): each distinct bucket of the config takes one. */
export const SHARED_CELL_SLOTS = 4096;
const EMPTY = 0;
const READY = -1;
/**
 * A lock held by one holder this long was left held by a live thread (a plugin's section that threw): sections last
 * microseconds. The waiter takes it over rather than spin for good; a dead holder's is freed sooner (releaseOwner).
 */
const STEAL_MS = 1_000;

/** A fresh arena for the cells of one gateway (a supervisor makes one and hands it to every worker). */
export function newSharedArena(): SharedArrayBuffer {
  return new SharedArrayBuffer(SLOT_BYTES * SHARED_CELL_SLOTS);
}

/**
 * A worker thread (id `threadId`) has exited: free the locks it held and the slots it was writing. Its section was
 * cut off (terminated, or it threw) and never will end: without this every other worker spins on that cell for good
 * (and the liveness watch kills them one after the other). Its half-written numbers stay: a few counts of one bucket
 * or backend, which the next update corrects. Called by the supervisor on the thread's `exit`, when it runs no more.
 */
export function releaseOwner(arena: SharedArrayBuffer, threadId: number): void {
  const i32 = new Int32Array(arena);
  const owner = threadId + 1;
  for (let base = 0; base < i32.length; base += SLOT_BYTES / 4) {
    Atomics.compareExchange(i32, base, owner, 0);
    Atomics.compareExchange(i32, base + 1, owner, EMPTY);
  }
}

/** A cell nobody else sees: the fallback when the arena is full, and state that needs no sharing. */
export function localCell(initial: readonly number[]): SharedCell {
  const values = new Float64Array(SHARED_CELL_VALUES);
  values.set(initial);
  return { values, lock() {}, unlock() {} };
}

/**
 * Cells of numbers in one SharedArrayBuffer, found by key: an open-addressing table whose slots are claimed with
 * Atomics, so every worker (thread) holding the same buffer finds the same cell for a key without asking anyone.
 * Cells are never freed: a key is a bucket's definition, so reloads reuse them. Past SHARED_CELL_SLOTS distinct
 * keys (a config with that many buckets and health states, or reloads churning through them) the rest get local
 * (per-worker) cells: never another key's cell (a key is found by its 64-bit hash), never a crash. With workers
 * that is logged (the first time, then every 1,000th) since those limits and health states then count per worker
 * (docs/deploy.md "Workers"); a gateway without workers loses nothing by it and logs nothing.
 */
export class SharedCells {
  private readonly i32: Int32Array;
  private readonly buffer: SharedArrayBuffer;
  private readonly warn: ((message: string) => void) | undefined;
  /** This thread's owner id (see SLOT_BYTES). */
  private readonly owner: number;
  /** Keys that got a local cell because the arena is full. */
  overflowed = 0;

  /**
   * `warn`: given by a worker, whose arena is shared with the other workers; a lone gateway passes none.
   * `threadId`: the thread this view is used on (a worker's `threadId`; the main thread's is 0).
   */
  constructor(buffer: SharedArrayBuffer = newSharedArena(), warn?: (message: string) => void, threadId = 0) {
    this.buffer = buffer;
    this.i32 = new Int32Array(buffer);
    this.warn = warn;
    this.owner = threadId + 1;
  }

  cell(key: string, initial: readonly number[]): SharedCell {
    if (initial.length > SHARED_CELL_VALUES) throw new RangeError(`a shared cell holds at most ${SHARED_CELL_VALUES} numbers`);
    const digest = createHash('sha256').update(key).digest();
    const h0 = digest.readInt32LE(0) | 0;
    const h1 = digest.readInt32LE(4) | 0;
    const slots = SHARED_CELL_SLOTS;
    for (let probe = 0; probe < slots; probe++) {
      const slot = ((digest.readUInt32LE(8) % slots) + probe) % slots;
      const base = (slot * SLOT_BYTES) / 4;
      let state = Atomics.load(this.i32, base + 1);
      if (state === EMPTY && Atomics.compareExchange(this.i32, base + 1, EMPTY, this.owner) === EMPTY) {
        Atomics.store(this.i32, base + 2, h0);
        Atomics.store(this.i32, base + 3, h1);
        new Float64Array(this.buffer, slot * SLOT_BYTES + 16, SHARED_CELL_VALUES).set(initial);
        Atomics.store(this.i32, base + 1, READY);
        return this.view(slot);
      }
      // Another worker is writing this slot's key: wait for it (a few stores). Back to EMPTY: it died meanwhile
      // (releaseOwner), so this slot is free again and must be tried again, or one key could end up in two slots.
      while ((state = Atomics.load(this.i32, base + 1)) > 0);
      if (state === EMPTY) {
        probe--;
        continue;
      }
      if (Atomics.load(this.i32, base + 2) === h0 && Atomics.load(this.i32, base + 3) === h1) return this.view(slot);
    }
    if (this.overflowed++ % 1000 === 0) {
      this.warn?.(
        `shared state is full (${slots} cells): ${this.overflowed === 1 ? 'this' : `${this.overflowed} so far, this`} and further rate-limit buckets and backend health states count per worker (limits × workers, ejections and health checks per worker) until a restart: \`${key.slice(0, 80)}\``,
      );
    }
    return localCell(initial);
  }

  private view(slot: number): SharedCell {
    const i32 = this.i32;
    const lockIndex = (slot * SLOT_BYTES) / 4;
    const owner = this.owner;
    return {
      values: new Float64Array(this.buffer, slot * SLOT_BYTES + 16, SHARED_CELL_VALUES),
      lock(): void {
        // Held for a few arithmetic operations by whoever has it: spinning is cheaper than sleeping. Held by this
        // thread: a section of its own threw before unlock() (sections never await), so it is this thread's already.
        let spins = 0;
        let holder = 0;
        let since = 0;
        for (;;) {
          const held = Atomics.compareExchange(i32, lockIndex, 0, owner);
          if (held === 0 || held === owner) return;
          if ((++spins & 0xfff) !== 0) continue;
          const now = performance.now();
          if (held !== holder) {
            holder = held;
            since = now;
          } else if (now - since > STEAL_MS && Atomics.compareExchange(i32, lockIndex, held, owner) === held) {
            return;
          }
        }
      },
      unlock(): void {
        // Only its own hold: one taken over meanwhile (STEAL_MS) is the new holder's to release.
        Atomics.compareExchange(i32, lockIndex, owner, 0);
      },
    };
  }
}
