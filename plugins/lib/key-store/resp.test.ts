// The Redis client reads what its address sends with a bound: a peer that sends a reply without end, or bytes that
// are not RESP, fails the waiting commands and loses its connection (docs/security.md "Bounded reads of what a peer
// sends"). Real TCP peers on 127.0.0.1 that are not Redis.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { Socket } from 'node:net';
import type { Server } from 'node:net';
import { once } from 'node:events';
import { test } from 'node:test';
import { CONNECT_TIMEOUT_MS, RespClient } from './resp.ts';
import { unansweredAddress } from '../../../test/helpers/unanswered-address.ts';

/** A TCP server answering every connection with `answer`; resolves with its port, the sockets it saw and a closer. */
async function fakePeer(answer: (socket: Socket) => void): Promise<{ port: number; closed: () => boolean; close: () => Promise<void> }> {
  const sockets: Socket[] = [];
  let sawClose = false;
  const server: Server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => (sawClose = true));
    socket.once('data', () => answer(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as { port: number }).port,
    closed: () => sawClose,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no outcome in ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

test('a reply that never ends: past 64 MiB buffered the command fails and the connection is closed', async () => {
  // 80 of the 100 1 MiB strings of an array, then silence: without the cap the client waits (and buffers) forever.
  const peer = await fakePeer((socket) => {
    socket.write('*100\r\n');
    const item = Buffer.concat([Buffer.from('$1048576\r\n'), Buffer.alloc(1024 * 1024, 'x'), Buffer.from('\r\n')]);
    let left = 80;
    const pump = (): void => {
      while (left > 0 && !socket.destroyed) {
        left--;
        if (!socket.write(item)) return;
      }
    };
    socket.on('drain', pump);
    pump();
  });
  const client = new RespClient(`redis://127.0.0.1:${peer.port}`);
  try {
    await assert.rejects(within(client.command('SMEMBERS', 'ids'), 20_000, 'the SMEMBERS'), /sent a reply larger than 64 MiB; connection closed/);
    for (let i = 0; i < 100 && !peer.closed(); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(peer.closed(), 'the client closed the connection');
  } finally {
    client.close();
    await peer.close();
  }
});

test('a bulk string declared larger than 64 MiB fails at once', async () => {
  const peer = await fakePeer((socket) => socket.write('$100000000\r\nxxxx'));
  const client = new RespClient(`redis://127.0.0.1:${peer.port}`);
  try {
    await assert.rejects(within(client.command('GET', 'k'), 5000, 'the GET'), /a bulk reply of 100000000 bytes is larger than 64 MiB/);
  } finally {
    client.close();
    await peer.close();
  }
});

test('bytes that are not RESP: the command fails (no exception escapes a socket listener), the next one reconnects', async () => {
  let connections = 0;
  const peer = await fakePeer((socket) => {
    connections++;
    socket.write(connections === 1 ? 'HTTP/1.1 400 Bad Request\r\n\r\n' : '+PONG\r\n');
  });
  const client = new RespClient(`redis://127.0.0.1:${peer.port}`);
  try {
    await assert.rejects(within(client.command('PING'), 5000, 'the first PING'), /not a RESP reply; connection closed/);
    assert.equal(await within(client.command('PING'), 5000, 'the second PING'), 'PONG');
    assert.equal(connections, 2);
  } finally {
    client.close();
    await peer.close();
  }
});

test('replies split anywhere across chunks, and several in one chunk, parse as they did', async () => {
  const wire = '*3\r\n$3\r\nfoo\r\n$-1\r\n:42\r\n' + '$5\r\nhello\r\n' + '+OK\r\n';
  const peer = await fakePeer((socket) => {
    // The first reply one byte per write (separate TCP segments: a pause between), the other two in one write.
    const first = wire.length - '$5\r\nhello\r\n+OK\r\n'.length;
    let i = 0;
    const next = (): void => {
      if (socket.destroyed) return;
      if (i < first) {
        socket.write(wire[i++]!);
        setTimeout(next, 2);
      } else socket.write(wire.slice(first));
    };
    next();
  });
  const client = new RespClient(`redis://127.0.0.1:${peer.port}`);
  try {
    const replies = await within(Promise.all([client.command('A'), client.command('B'), client.command('C')]), 10_000, 'the replies');
    assert.deepEqual(replies, [['foo', null, 42], 'hello', 'OK']);
  } finally {
    client.close();
    await peer.close();
  }
});

/** A peer that answers with `wire` in writes of `size` bytes, one per turn of the event loop (so many separate reads). */
function drip(wire: Buffer, size: number): (socket: Socket) => void {
  return (socket) => {
    socket.setNoDelay(true);
    let i = 0;
    const next = (): void => {
      if (socket.destroyed || i >= wire.length) return;
      socket.write(wire.subarray(i, (i += size)));
      setImmediate(next);
    };
    next();
  };
}

test('a large array reply in many small chunks: the same value, its framing walked once (linear time)', async () => {
  // The id set of 100,000 keys (about 5 MiB), with a nested array, a null and an integer, in 4 KiB writes. Before, every
  // chunk re-walked the framing of all the items received so far: measured seconds of CPU, now well under one.
  const ids = Array.from({ length: 100_000 }, (_, i) => `key-${String(i).padStart(8, '0')}-0123456789abcdef0123456`);
  const expected = [...ids, ['a', 7, null], null, 42];
  let wire = `*${expected.length}\r\n`;
  for (const id of ids) wire += `$${id.length}\r\n${id}\r\n`;
  wire += '*3\r\n$1\r\na\r\n:7\r\n$-1\r\n' + '$-1\r\n' + ':42\r\n' + '+PONG\r\n';
  const peer = await fakePeer(drip(Buffer.from(wire), 4096));
  const client = new RespClient(`redis://127.0.0.1:${peer.port}`);
  try {
    const before = process.cpuUsage();
    const [reply, pong] = await within(Promise.all([client.command('SMEMBERS', 'ids'), client.command('PING')]), 60_000, 'the replies');
    const used = process.cpuUsage(before);
    const ms = (used.user + used.system) / 1000;
    assert.deepEqual(reply, expected);
    assert.equal(pong, 'PONG', 'the reply after it is read in step');
    assert.ok(ms < 2000, `the reply took ${ms.toFixed(0)} ms of CPU (its framing walked once per chunk: seconds)`);
  } finally {
    client.close();
    await peer.close();
  }
});

test('a long status line in many small chunks: its end looked for once (linear time)', async () => {
  // 32 MiB of a `+` line in 4 KiB writes: before, every chunk searched the whole line again for its end (16 MiB
  // measured 3.5 s of CPU here, 32 MiB four times that; now about 0.3 s for 16 MiB).
  const line = 'x'.repeat(32 * 1024 * 1024);
  const peer = await fakePeer(drip(Buffer.from(`+${line}\r\n+PONG\r\n`), 4096));
  const client = new RespClient(`redis://127.0.0.1:${peer.port}`);
  try {
    const before = process.cpuUsage();
    const [reply, pong] = await within(Promise.all([client.command('GET', 'k'), client.command('PING')]), 60_000, 'the replies');
    const used = process.cpuUsage(before);
    const ms = (used.user + used.system) / 1000;
    assert.equal(reply, line);
    assert.equal(pong, 'PONG');
    assert.ok(ms < 3000, `the reply took ${ms.toFixed(0)} ms of CPU`);
  } finally {
    client.close();
    await peer.close();
  }
});

test('commands queued while others await replies go in one write (with the next command, or at the end of the turn); replies keep their order (ADR 0101)', async () => {
  // A peer answering each command with its number (the commands here have no '*' in their arguments).
  let seq = 0;
  const server = createServer((socket) => socket.on('data', (d: Buffer) => {
    let out = '';
    for (const ch of d.toString('latin1')) if (ch === '*') out += `:${seq++}\r\n`;
    socket.write(out);
  }));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = new RespClient(`redis://127.0.0.1:${(server.address() as { port: number }).port}`);
  const writes: string[] = [];
  const write = Socket.prototype.write;
  try {
    assert.equal(await client.command('PING'), 0);
    Socket.prototype.write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
      if (typeof chunk === 'string' && chunk.startsWith('*')) writes.push(chunk.replace(/\*\d+\r\n|\$\d+\r\n|\r\n/g, (m) => (m.startsWith('*') ? '|' : m === '\r\n' ? ' ' : '')).trim());
      return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof write;
    const replies = [client.queue('GET', 'a'), client.queue('GET', 'b'), client.queue('GET', 'c'), client.command('SET', 'd', '1'), client.queue('GET', 'e'), client.queue('GET', 'f')];
    assert.deepEqual(await within(Promise.all(replies), 5000, 'the replies'), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(writes, ['|GET a', '|GET b |GET c |SET d 1', '|GET e |GET f'], 'nothing awaited: at once; then held for the SET, then for the end of the turn');
  } finally {
    Socket.prototype.write = write;
    client.close();
    server.close();
  }
});

test('a Redis that stops answering: waiting commands fail after the reply deadline, the next connects again', async () => {
  // Answers the first command, then holds every later one unanswered (a hung server, a stalled proxy).
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.on('error', () => undefined);
    let answered = connections > 1;
    socket.on('data', () => {
      if (answered) {
        socket.write('+PONG\r\n');
        return;
      }
      answered = true;
      socket.write('+PONG\r\n');
      socket.removeAllListeners('data');
      socket.on('data', () => undefined);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = new RespClient(`redis://127.0.0.1:${(server.address() as { port: number }).port}`, { replyTimeoutMs: 300 });
  try {
    assert.equal(await client.command('PING'), 'PONG');
    const started = Date.now();
    await assert.rejects(within(client.command('PING'), 5000, 'the held command'), /no reply from redis .* within 300 ms/);
    assert.ok(Date.now() - started < 2500, 'failed near the deadline');
    // A new connection serves the next command.
    assert.equal(await within(client.command('PING'), 5000, 'the command after'), 'PONG');
    assert.equal(connections, 2);
  } finally {
    await client.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('an address that never completes the handshake: the command fails at the connect deadline, not after the kernel gives up (about 2 min)', async () => {
  const hole = await unansweredAddress();
  const client = new RespClient(`redis://127.0.0.1:${hole.port}`, { connectTimeoutMs: 300 });
  try {
    const started = Date.now();
    await assert.rejects(within(client.command('PING'), 5000, 'the command'), new RegExp(`could not connect to redis 127\\.0\\.0\\.1:${hole.port} within 300 ms`));
    assert.ok(Date.now() - started < 2500, `failed after ${Date.now() - started} ms`);
    // Commands waiting on the same attempt fail with it; the next one tries again (and fails the same way).
    const both = await Promise.allSettled([client.command('GET', 'a'), client.command('GET', 'b')]);
    assert.deepEqual(both.map((r) => r.status), ['rejected', 'rejected']);
  } finally {
    client.close();
    hole.close();
  }
  assert.equal(CONNECT_TIMEOUT_MS, 5000);
});
