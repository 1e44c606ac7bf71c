// The shared cells' arena past its capacity (issue 11): two workers' views of one arena find the same cell per key,
// keys past SHARED_CELL_SLOTS get local cells in every worker (never another key's cell, never a throw), the
// overflow is logged once (then every 1,000th) by a worker, and a gateway without workers logs nothing. A lock whose
// holder died is freed by its owner id (the e2e case: test/e2e/workers-liveness.test.ts).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { SHARED_CELL_SLOTS, SharedCells, newSharedArena, releaseOwner } from './shared-cells.ts';

it('keeps every key in its own cell up to the capacity, then gives local cells to the rest, with one warning', () => {
  const arena = newSharedArena();
  const warnings: string[][] = [[], []];
  const workers = [new SharedCells(arena, (m) => warnings[0]!.push(m)), new SharedCells(arena, (m) => warnings[1]!.push(m))];
  for (let i = 0; i < SHARED_CELL_SLOTS; i++) workers[i % 2]!.cell(`bucket:${i}`, [i, -i]);
  assert.deepEqual(warnings, [[], []], 'no warning while there is room');
  // Every key is found by both workers, holding its own initial values: shared, and no two keys on one cell.
  for (let i = 0; i < SHARED_CELL_SLOTS; i++) {
    const a = workers[0]!.cell(`bucket:${i}`, [0]);
    const b = workers[1]!.cell(`bucket:${i}`, [0]);
    assert.equal(a.values[0], i);
    assert.equal(b.values[1], -i);
    a.lock();
    a.values[2] = i + 0.5;
    a.unlock();
    assert.equal(b.values[2], i + 0.5, 'a write by one worker is seen by the other');
  }

  // Full: a new key gets a local cell in each worker, starting from its initial values; nothing else changes.
  const a = workers[0]!.cell('bucket:extra', [7]);
  const b = workers[1]!.cell('bucket:extra', [7]);
  assert.equal(a.values[0], 7);
  a.values[0] = 1;
  assert.equal(b.values[0], 7, 'past the capacity each worker counts on its own');
  assert.equal(workers[0]!.cell('bucket:0', [99]).values[0], 0, 'earlier keys keep their shared cells');
  assert.equal(warnings[0]!.length, 1);
  assert.match(warnings[0]![0]!, /^shared state is full \(4096 cells\): this and further rate-limit buckets and backend health states count per worker .*`bucket:extra`$/);
  for (let i = 0; i < 999; i++) workers[0]!.cell(`more:${i}`, [0]);
  assert.equal(warnings[0]!.length, 1, 'not once per key');
  workers[0]!.cell('more:last', [0]);
  assert.equal(warnings[0]!.length, 2);
  assert.match(warnings[0]![1]!, /1001 so far/);
  assert.equal(workers[0]!.overflowed, 1000 + 1);
});

it('a gateway without workers falls back silently: nothing is shared with anyone anyway', () => {
  const cells = new SharedCells();
  for (let i = 0; i <= SHARED_CELL_SLOTS; i++) cells.cell(`k:${i}`, [i]);
  assert.equal(cells.overflowed, 1);
  assert.equal(cells.cell(`k:${SHARED_CELL_SLOTS}`, [5]).values[0], 5);
});

it("frees a dead thread's locks by its id, and lets a thread take a lock its own section left held", () => {
  const arena = newSharedArena();
  const dead = new SharedCells(arena, undefined, 4).cell('bucket', [0]);
  const other = new SharedCells(arena, undefined, 4).cell('other', [0]);
  dead.lock();
  other.lock();
  const live = new SharedCells(arena, undefined, 7);
  releaseOwner(arena, 9);
  const i32 = new Int32Array(arena);
  assert.equal(i32.filter((v, i) => i % 16 === 0 && v === 5).length, 2, 'another thread id frees nothing');
  releaseOwner(arena, 4);
  const cell = live.cell('bucket', [0]);
  cell.lock();
  cell.values[0] = 1;
  // A section that threw before unlock(): the same thread takes the lock again instead of spinning for ever.
  cell.lock();
  cell.unlock();
  assert.equal(dead.values[0], 1);
});

it('takes over a lock a live thread left held past a second (a section that threw), and only its holder releases it', () => {
  const arena = newSharedArena();
  const leaked = new SharedCells(arena, undefined, 4).cell('bucket', [0]);
  const waiter = new SharedCells(arena, undefined, 7).cell('bucket', [0]);
  leaked.lock();
  const started = performance.now();
  waiter.lock();
  const waited = performance.now() - started;
  assert.ok(waited >= 1_000 && waited < 5_000, `waited ${waited} ms`);
  // The thread that leaked it releases nothing now: the lock is the waiter's until it unlocks.
  leaked.unlock();
  const i32 = new Int32Array(arena);
  assert.equal(i32.filter((v, i) => i % 16 === 0 && v === 8).length, 1);
  waiter.unlock();
  assert.equal(i32.filter((v, i) => i % 16 === 0 && v !== 0).length, 0);
});
