// gRPC through the gateway (ADR 0141): a grpc-js client speaking h2 to an HTTPS listener, the gateway speaking h2
// (`backendTLS.alpn: [h2]`) to a grpc-js server over TLS. Unary and server-streaming calls, and an upstream error
// status arriving as the status the server sent: gRPC's status travels in response trailers.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { RunningGateway } from '../helpers/gateway.ts';
import { httpsBind } from '../helpers/gateway.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { assertStreamsAndStatuses, echoClient, startEchoServer, unary } from '../helpers/grpc-echo.ts';
import type { EchoClient } from '../helpers/grpc-echo.ts';
import { startGatewayOnFreePorts, within } from './proxy-support.ts';

/** What the grpc-js server saw of each call's metadata. */
const seenMetadata: Record<string, unknown>[] = [];

describe('gRPC through an HTTPS listener (h2 both sides)', () => {
  let pki: TestPki;
  let upstream: { server: grpc.Server; port: number };
  let gw: RunningGateway;
  let port: number;
  let client: EchoClient;
  /** The same service through a route with a per-attempt deadline: answers through a Reply (`forward`). */
  let viaReply: EchoClient;

  before(async () => {
    pki = makeTestPki({ serverName: 'localhost', serverAltNames: ['DNS:localhost', 'IP:127.0.0.1'], label: 'listener-h2-grpc' });
    const credentials = grpc.ServerCredentials.createSsl(null, [{ private_key: readFileSync(pki.serverKey), cert_chain: readFileSync(pki.serverCert) }], false);
    upstream = await startEchoServer(credentials, seenMetadata);
    const bind = (p: number, policies: Record<string, unknown>) =>
      httpsBind(p, { cert: pki.serverCert, key: pki.serverKey }, [
        {
          name: 'grpc',
          matches: [{ path: { pathPrefix: '/test.Echo/' } }],
          policies,
          backends: [{ host: `127.0.0.1:${upstream.port}`, policies: { backendTLS: { root: pki.ca, alpn: ['h2'] } } }],
        },
      ]);
    let replyPort: number;
    ({ gw, ports: [port, replyPort] } = await startGatewayOnFreePorts(2, ([p, q]) => ({
      binds: [bind(p!, {}), bind(q!, { timeout: { backendRequestTimeout: '10s' } })],
    })));
    client = echoClient(`localhost:${port}`, grpc.credentials.createSsl(readFileSync(pki.ca)));
    viaReply = echoClient(`localhost:${replyPort!}`, grpc.credentials.createSsl(readFileSync(pki.ca)));
  });
  after(async () => {
    client?.close();
    viaReply?.close();
    await gw?.stop();
    upstream?.server.forceShutdown();
    pki?.remove();
  });

  it('a unary call: the answer, the metadata sent, the trailers received', async () => {
    const md = new grpc.Metadata();
    md.set('x-md', 'client-value');
    const answer = await within(unary(client, 'Echo', { hello: 'world' }, md), 10_000, 'the unary call');
    assert.equal(answer.error, undefined, answer.error?.message);
    assert.deepEqual(answer.value, { echo: { hello: 'world' } });
    assert.deepEqual(answer.trailers?.get('x-trailer'), ['from-upstream']);
    const seen = seenMetadata.at(-1)!;
    assert.equal(seen['x-md'], 'client-value');
  });

  it("server streaming delivers every message; an upstream's error status reaches the client as sent", async () => {
    await assertStreamsAndStatuses([client, viaReply], within);
  });

  it('through a Reply (a per-attempt deadline on the route): the answer and its trailers', async () => {
    const answer = await within(unary(viaReply, 'Echo', { via: 'reply' }), 10_000, 'the unary call');
    assert.equal(answer.error, undefined, answer.error?.message);
    assert.deepEqual(answer.value, { echo: { via: 'reply' } });
    assert.deepEqual(answer.trailers?.get('x-trailer'), ['from-upstream']);
  });
});
