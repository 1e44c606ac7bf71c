// Response trailers reach HTTP/2 clients when the answer was read whole (ADR 0158): a backend forwarding with
// `readWhole` (as the `ai` backend does), and a policy that reads a streamed answer whole and sets the bytes as the
// body. Before, only an answer streamed to the client kept them (ADR 0141). Clients speak h2c to a cleartext
// listener; upstreams are an h2c server (`http: { version: HTTP/2.0 }`) and a chunked HTTP/1.1 one, both sending
// trailers.
import assert from 'node:assert/strict';
import { connect as h2connect, createServer as createH2Server } from 'node:http2';
import type { ClientHttp2Session, Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { defineBackend, definePolicy, parseUpstreamAddress, readCapped } from 'switchyard/sdk';
import type { RunningGateway } from '../helpers/gateway.ts';
import { oneListenerConfig } from '../helpers/gateway.ts';
import { h2Exchange } from '../helpers/h2-client.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGatewayOnFreePorts } from './proxy-support.ts';

/** `testWholeHost`: the `host` backend, its answers read whole (`ForwardOptions.readWhole`). */
const wholeHost = defineBackend<string>({
  key: 'testWholeHost',
  description: 'Test: forwards to a host, the answer read whole.',
  schema: { type: 'string', description: 'host:port' },
  compile(value, ctx) {
    const target = parseUpstreamAddress(value, { tls: false });
    if ('message' in target) return ctx.fail(target.message);
    const upstream = ctx.http.target({ origin: target.origin, http2: ctx.policies.facets.http2 });
    return { protocol: 'http', handle: (ex) => upstream.forward(ex, undefined, { readWhole: 1 << 20 }) };
  },
});

/** `testReadWhole`: reads the answer's body whole and sends those bytes, upper-cased. */
const readWholePolicy = definePolicy<Record<string, never>>({
  key: 'testReadWhole',
  description: 'Test: reads the answer whole.',
  schema: { type: 'object', description: 'Nothing.', additionalProperties: false },
  attach: ['routePolicies'],
  phase: 'mutate',
  compile: () => ({
    async onResponse(_ex, reply) {
      const body = reply.body;
      if (body === null || body === undefined || typeof body === 'string' || body instanceof Uint8Array) return;
      const bytes = await readCapped(body, 1 << 20);
      reply.body = Buffer.from(bytes.toString().toUpperCase());
      delete reply.headers['content-length'];
    },
  }),
});

describe('trailers of answers read whole, to HTTP/2 clients', () => {
  let h2up: Http2Server;
  let h1up: TestUpstream;
  let gw: RunningGateway;
  let port: number;
  let session: ClientHttp2Session;

  before(async () => {
    h2up = createH2Server();
    h2up.on('stream', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'text/plain' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-sum': 'h2' }));
      stream.end('from h2');
    });
    await new Promise<void>((resolve) => h2up.listen(0, '127.0.0.1', resolve));
    const h2host = `127.0.0.1:${(h2up.address() as AddressInfo).port}`;
    h1up = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', trailer: 'x-sum' });
      res.write('from h1');
      res.addTrailers({ 'x-sum': 'h1' });
      res.end();
    });
    const h2 = { http: { version: 'HTTP/2.0' } };
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(
      1,
      ([p]) =>
        oneListenerConfig(p!, [
          { name: 'whole-h2', matches: [{ path: { pathPrefix: '/whole-h2' } }], backends: [{ testWholeHost: h2host, policies: h2 }] },
          { name: 'whole-h1', matches: [{ path: { pathPrefix: '/whole-h1' } }], backends: [{ testWholeHost: `127.0.0.1:${h1up.port}` }] },
          { name: 'read-h2', matches: [{ path: { pathPrefix: '/read-h2' } }], policies: { testReadWhole: {} }, backends: [{ host: h2host, policies: h2 }] },
          { name: 'read-h1', matches: [{ path: { pathPrefix: '/read-h1' } }], policies: { testReadWhole: {} }, backends: [{ host: `127.0.0.1:${h1up.port}` }] },
          { name: 'streamed', matches: [{ path: { pathPrefix: '/streamed' } }], backends: [{ host: h2host, policies: h2 }] },
        ]),
      { preset: fullPresetWith(wholeHost, readWholePolicy) },
    ));
    session = h2connect(`http://127.0.0.1:${port}`);
    session.on('error', () => undefined);
  });
  after(async () => {
    session?.destroy();
    await gw?.stop();
    await h1up?.close();
    h2up?.close();
  });

  /** A GET of `path` asking for trailers, as gRPC clients do. */
  const get = (path: string) => h2Exchange(session, { ':path': path, te: 'trailers' });

  it('an answer streamed to the client keeps its trailers (as before)', async () => {
    const res = await get('/streamed');
    assert.equal(res.text, 'from h2');
    assert.equal(res.trailers?.['grpc-status'], '0');
  });

  it("a backend's answer read whole (`readWhole`) keeps the upstream's trailers: h2 and chunked HTTP/1.1", async () => {
    const h2 = await get('/whole-h2');
    assert.equal(h2.headers[':status'], 200);
    assert.deepEqual([h2.text, h2.trailers?.['grpc-status'], h2.trailers?.['x-sum']], ['from h2', '0', 'h2']);
    const h1 = await get('/whole-h1');
    assert.deepEqual([h1.text, h1.trailers?.['x-sum']], ['from h1', 'h1']);
  });

  it('a policy that reads the answer whole and sets its bytes keeps the trailers', async () => {
    const h2 = await get('/read-h2');
    assert.deepEqual([h2.text, h2.trailers?.['grpc-status'], h2.trailers?.['x-sum']], ['FROM H2', '0', 'h2']);
    const h1 = await get('/read-h1');
    assert.deepEqual([h1.text, h1.trailers?.['x-sum']], ['FROM H1', 'h1']);
  });
});
