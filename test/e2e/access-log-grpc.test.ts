// A proxied gRPC call's status in the access log without tracing (ADR 0171): `grpc.status` from the upstream's
// trailers or trailers-only answer, and CEL's `response.grpcStatus` in `config.logging` (BEHAVIOUR.md §10), so an
// operator can log only failed calls although gRPC answers HTTP 200 for them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startRoutesGateway, logRecords } from '../helpers/gateway.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { echoClient, startEchoServer, unary } from '../helpers/grpc-echo.ts';
import type { EchoClient } from '../helpers/grpc-echo.ts';
import { waitFor } from './proxy-support.ts';

describe('gRPC status in the access log', () => {
  let echo: { server: grpc.Server; port: number };
  let gw: RoutesGateway;
  let client: EchoClient;

  before(async () => {
    echo = await startEchoServer(grpc.ServerCredentials.createInsecure());
    const routes = [
      { name: 'grpc', matches: [{ path: { pathPrefix: '/test.Echo/' } }], backends: [{ host: `127.0.0.1:${echo.port}`, policies: { http: { version: 'HTTP/2.0' } } }] },
      { name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], policies: { directResponse: { status: 200, body: 'ok' } } },
    ];
    // Only calls that carried a gRPC status other than OK, with it as a field of its own.
    const logging = { format: 'json', filter: 'has(response.grpcStatus) && response.grpcStatus != 0', fields: { add: { grpc_failed: 'response.grpcStatus' } } };
    gw = await startRoutesGateway(routes, { config: { logging } });
    client = echoClient(`127.0.0.1:${gw.port}`, grpc.credentials.createInsecure());
  });
  after(async () => {
    client?.close();
    await gw?.stop();
    echo?.server.forceShutdown();
  });

  it('a failed call is logged with its status; an OK call and a plain request are filtered out', async () => {
    assert.equal((await unary(client, 'Echo', { hello: 1 })).error, undefined);
    assert.equal((await unary(client, 'Fail', {})).error?.code, grpc.status.NOT_FOUND);
    assert.equal((await fetch(`${gw.base}/plain`)).status, 200);
    await waitFor(() => logRecords(gw).some((l) => l.msg === 'request'), 5000, 'the failed call logged');
    // The last request (plain) is written after the call's line: give it the time to show if it were kept.
    await new Promise((r) => setTimeout(r, 200));
    const lines = logRecords(gw).filter((l) => l.msg === 'request');
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0]!['http.path'], '/test.Echo/Fail');
    assert.equal(lines[0]!['http.status'], 200);
    assert.equal(lines[0]!['grpc.status'], grpc.status.NOT_FOUND);
    assert.equal(lines[0]!.grpc_failed, grpc.status.NOT_FOUND);
  });
});
