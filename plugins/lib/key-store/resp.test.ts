// The Redis client reads what its address sends with a bound: a peer that sends a reply without end, or bytes that
// are not RESP, fails the waiting commands and loses its connection (docs/security.md "Bounded reads of what a peer
// sends"). Real TCP peers on 127.0.0.1 that are not Redis.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { once } from 'node:events';
import { test } from 'node:test';
import { RespClient } from './resp.ts';

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
