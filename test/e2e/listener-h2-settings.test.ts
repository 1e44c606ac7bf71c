// `frontendPolicies.http`'s HTTP/2 settings applied to client connections (ADR 0158): the SETTINGS frame a client
// reads (stream window, frame size, header list), the connection window, a larger header list served rather than
// 431, and keep-alive PINGs while a stream is open, a client that answers none losing its connection. Clients speak
// h2c to a cleartext listener (the HTTPS listeners' session code is the same).
import assert from 'node:assert/strict';
import { connect as h2connect } from 'node:http2';
import type { Settings } from 'node:http2';
import { readFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import type { RunningGateway } from '../helpers/gateway.ts';
import { oneListenerConfig } from '../helpers/gateway.ts';
import { h2Exchange } from '../helpers/h2-client.ts';
import { h2Frame } from '../helpers/h2-frames.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/** HPACK: a literal field without indexing whose name is static-table entry `index` (RFC 7541 6.2.2). */
const literal = (index: number, value: string): Buffer => Buffer.concat([Buffer.from([index, value.length]), Buffer.from(value)]);

describe('frontendPolicies.http: HTTP/2 settings of client connections', () => {
  let up: TestUpstream;
  /** Requests to `/hold` the upstream saw end (the gateway released them). */
  let held = 0;
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    up = await startUpstream(
      (req, res) => {
        if (req.url === '/hold') return void res.on('close', () => held++);
        res.end(`ok ${Object.keys(req.headers).filter((h) => h.startsWith('x-n')).length}`);
      },
      { bufferBody: false },
    );
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([p]) =>
      oneListenerConfig(p!, [{ backends: [{ host: `127.0.0.1:${up.port}` }] }], {
        frontendPolicies: {
          http: {
            http2WindowSize: 1_048_576,
            http2ConnectionWindowSize: 4_194_304,
            http2FrameSize: 32_768,
            http2MaxHeaderSize: 65_536,
            http2KeepaliveInterval: '200ms',
            http2KeepaliveTimeout: '300ms',
          },
        },
      }),
    ));
  });
  after(async () => {
    await gw?.stop();
    await up?.close();
  });

  it('the SETTINGS a client reads, and the connection window', async () => {
    const session = h2connect(`http://127.0.0.1:${port}`);
    try {
      const settings = await within(new Promise<Settings>((resolve) => session.once('remoteSettings', resolve)), 5_000, 'the SETTINGS');
      assert.equal(settings.initialWindowSize, 1_048_576);
      assert.equal(settings.maxFrameSize, 32_768);
      assert.equal(settings.maxHeaderListSize, 65_536);
      await waitFor(() => session.state.remoteWindowSize === 4_194_304, 5_000, `the connection window (${session.state.remoteWindowSize})`);
    } finally {
      session.destroy();
    }
  });

  it('a header list over the default 16 KiB and under the setting is served', async () => {
    const session = h2connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    try {
      // 600 fields: about 23 KiB as HTTP/2 counts a list (32 bytes a field), 7 KiB as the HTTP/1.1 upstream reads it.
      const many: Record<string, string> = {};
      for (let i = 0; i < 600; i++) many[`x-n${i}`] = 'v';
      const res = await h2Exchange(session, { ':path': '/big', ...many });
      assert.equal(res.headers[':status'], 200);
      assert.equal(res.text, 'ok 600');
    } finally {
      session.destroy();
    }
  });

  it('PINGs while a stream is open; a client that answers none loses its connection, its upstream request released', async () => {
    // node:http2's client answers PINGs: its stream stays open across several intervals.
    const session = h2connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
    let pings = 0;
    session.on('ping', () => pings++);
    const stream = session.request({ ':path': '/hold' });
    stream.on('error', () => undefined);
    await waitFor(() => pings >= 3, 5_000, 'three PINGs');
    assert.equal(session.closed || session.destroyed, false);
    session.destroy();
    // Idle (no stream): no PINGs, the idle close applies instead.
    const idle = h2connect(`http://127.0.0.1:${port}`);
    let idlePings = 0;
    idle.on('ping', () => idlePings++);
    await new Promise((resolve) => setTimeout(resolve, 700));
    assert.equal(idlePings, 0);
    idle.destroy();
    // A client that sends a request and never acknowledges a PING: closed after interval + timeout.
    const before = held;
    const closedAfter = await within(
      new Promise<number>((resolve) => {
        const started = performance.now();
        const socket = netConnect(port, '127.0.0.1', () => {
          const headers = Buffer.concat([Buffer.from([0x82, 0x86]), literal(0x04, '/hold'), literal(0x01, 'gw.test')]);
          socket.write(Buffer.concat([PREFACE, h2Frame(0x4, 0, 0), h2Frame(0x1, 0x5, 1, headers)]));
        });
        socket.on('data', () => undefined);
        socket.on('error', () => undefined);
        socket.on('close', () => resolve(performance.now() - started));
      }),
      5_000,
      'the connection closing',
    );
    assert.ok(closedAfter >= 400, `closed after ${closedAfter} ms`);
    await waitFor(() => held > before, 5_000, 'the upstream request released');
  });

  it('a reload applies to connections opened after it: without the key, the defaults', async () => {
    const doc = parse(readFileSync(gw.file, 'utf8')) as Record<string, unknown>;
    delete doc.frontendPolicies;
    assert.equal(await gw.gateway.reload(stringify(doc)), true);
    const session = h2connect(`http://127.0.0.1:${port}`);
    try {
      const settings = await within(new Promise<Settings>((resolve) => session.once('remoteSettings', resolve)), 5_000, 'the SETTINGS');
      assert.deepEqual([settings.initialWindowSize, settings.maxFrameSize, settings.maxHeaderListSize], [65_535, 16_384, 16_384]);
    } finally {
      session.destroy();
    }
  });
});
