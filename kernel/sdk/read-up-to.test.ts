import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { it } from 'node:test';
import { readUpTo } from './streams.ts';

const chunks = (n: number, size: number): Buffer[] => Array.from({ length: n }, (_, i) => Buffer.alloc(size, 97 + (i % 26)));

async function drain(stream: Readable): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const chunk of stream) out.push(chunk as Buffer);
  return Buffer.concat(out);
}

it('gives a body that ends within the limit whole', async () => {
  const parts = chunks(3, 10);
  const got = await readUpTo(Readable.from(parts), 30);
  assert.ok(Buffer.isBuffer(got));
  assert.deepEqual(got, Buffer.concat(parts));
});

it('gives a longer body back as a stream of every byte, what was read first included', async () => {
  const parts = chunks(50, 1000);
  const got = await readUpTo(Readable.from(parts), 4096);
  assert.ok(got instanceof Readable);
  assert.deepEqual(await drain(got), Buffer.concat(parts));
});

it('rejects when the body fails or closes before its end; a stream past the limit that fails fails too', async () => {
  const failing = new Readable({ read() {} });
  const pending = readUpTo(failing, 100);
  failing.push(Buffer.from('abc'));
  failing.destroy(new Error('reset'));
  await assert.rejects(pending, /reset/);

  const cut = new Readable({ read() {} });
  const cutPending = readUpTo(cut, 100);
  cut.push(Buffer.from('abc'));
  cut.destroy();
  await assert.rejects(cutPending);

  const late = new Readable({ read() {} });
  const latePending = readUpTo(late, 4);
  late.push(Buffer.from('abcdefgh'));
  const rest = await latePending;
  assert.ok(rest instanceof Readable);
  const drained = drain(rest);
  late.destroy(new Error('later reset'));
  await assert.rejects(drained, /later reset/);
});

it('a reader that leaves the long body releases the source', async () => {
  const source = new Readable({ read() {} });
  const pending = readUpTo(source, 4);
  source.push(Buffer.from('abcdefgh'));
  const rest = (await pending) as Readable;
  rest.destroy();
  await new Promise((r) => setImmediate(r));
  assert.ok(source.destroyed);
});
