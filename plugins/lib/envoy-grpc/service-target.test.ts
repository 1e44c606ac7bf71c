import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PeerCertificate } from 'node:tls';
import { certHasAltName } from 'switchyard/sdk';
import { callMetadata, channelCredentials } from './envoy-grpc.ts';
import { metadataProblem } from './service-target.ts';
import type { ServiceTarget } from './service-target.ts';

describe('connection policies', () => {
  const target = (extra: Partial<ServiceTarget>): ServiceTarget => ({ target: 'h:1', secure: false, tls: undefined, headers: undefined, backend: undefined, ...extra });

  it('header names and values must be valid text gRPC metadata', () => {
    assert.equal(metadataProblem('authorization', 'Bearer x'), undefined);
    assert.match(metadataProblem('grpc-timeout', '1S')!, /reserved/);
    assert.match(metadataProblem('content-type', 'x')!, /reserved/);
    assert.match(metadataProblem('x-a-bin', 'x')!, /binary/);
    assert.match(metadataProblem('x~y', 'x')!, /cannot be sent as gRPC metadata/);
    assert.match(metadataProblem('x-a', 'caf\xe9')!, /printable ASCII/);
  });

  it('metadata: `add` appends, then `set` replaces', () => {
    const md = callMetadata(target({ headers: { add: [['x-a', '1'], ['x-a', '2'], ['x-b', '1']], set: [['x-b', '2']], remove: ['x-c'] } }));
    assert.deepEqual(md.get('x-a'), ['1', '2']);
    assert.deepEqual(md.get('x-b'), ['2']);
    assert.equal(callMetadata(target({})).getMap()['x-a'], undefined);
  });

  it('credentials: plaintext unless secure; `hostname` becomes the TLS target name override', () => {
    assert.equal(channelCredentials(target({})).credentials._isSecure(), false);
    const secure = channelCredentials(target({ secure: true, tls: { servername: 'rls.test' } }));
    assert.equal(secure.credentials._isSecure(), true);
    assert.equal(secure.options['grpc.ssl_target_name_override'], 'rls.test');
    assert.equal(channelCredentials(target({ secure: true })).options['grpc.ssl_target_name_override'], undefined);
  });

  it('subjectAltNames match DNS (with one-label wildcards), IP and URI names', () => {
    const cert = { subjectaltname: 'DNS:*.svc.test, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, URI:spiffe://t/rls' } as PeerCertificate;
    assert.equal(certHasAltName(cert, ['DNS:rls.svc.test']), true);
    assert.equal(certHasAltName(cert, ['DNS:a.rls.svc.test']), false);
    assert.equal(certHasAltName(cert, ['IP:127.0.0.1']), true);
    assert.equal(certHasAltName(cert, ['IP:::1']), true);
    assert.equal(certHasAltName(cert, ['URI:spiffe://t/rls']), true);
    assert.equal(certHasAltName(cert, ['DNS:other.test', 'URI:spiffe://t/other']), false);
  });
});
