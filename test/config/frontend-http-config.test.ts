// `frontendPolicies.http`: the reference's HTTP/2 settings of the client side (ADR 0158), their ranges, and the
// reference's other `frontendPolicies` keys, which Switchyard does not take.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fullPreset } from '../../plugins/presets/full.ts';
import { compileError, compileValue, headlines, yaml } from './helpers.ts';

const opts = { preset: fullPreset };
const config = (...http: string[]): string =>
  yaml('frontendPolicies:', '  http:', ...http.map((l) => `    ${l}`), 'binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - backends: [{ host: 127.0.0.1:9 }]');

describe('`frontendPolicies.http` config', () => {
  it('takes the reference HTTP/2 settings', async () => {
    const value = await compileValue(
      config('http2WindowSize: 1048576', 'http2ConnectionWindowSize: 4194304', 'http2FrameSize: 32768', 'http2MaxHeaderSize: 65536', 'http2KeepaliveInterval: 30s', 'http2KeepaliveTimeout: 5s'),
      opts,
    );
    assert.deepEqual((value.frontendPolicies as { http: unknown }).http, {
      http2WindowSize: 1048576,
      http2ConnectionWindowSize: 4194304,
      http2FrameSize: 32768,
      http2MaxHeaderSize: 65536,
      http2KeepaliveInterval: '30s',
      http2KeepaliveTimeout: '5s',
    });
  });

  it('refuses values HTTP/2 does not allow (RFC 9113 6.5.2, 6.9)', async () => {
    for (const [line, expected] of [
      ['http2FrameSize: 1000', /must be at least 16384, got number 1000 \(at frontendPolicies\.http\.http2FrameSize\)/],
      ['http2FrameSize: 16777216', /must be at most 16777215/],
      ['http2WindowSize: 0', /must be at least 1/],
      ['http2WindowSize: 2147483648', /must be at most 2147483647/],
      ['http2ConnectionWindowSize: 1000', /must be at least 65535/],
      ['http2MaxHeaderSize: 0', /must be at least 1/],
      ['http2MaxHeaderSize: 2000000', /must be at most 1048576/],
      ['http2WindowSize: 1.5', /integer/],
      ['http2KeepaliveInterval: 10', /must be a string, got number 10/],
      ['http2KeepaliveTimeout: "10"', /duration such as/],
    ] as const) {
      const err = await compileError(config(line), opts);
      assert.match(headlines(err)[0]!, expected, line);
    }
  });

  it("the reference's other keys are not taken: an unknown key naming the accepted ones", async () => {
    const err = await compileError(config('http1IdleTimeout: 10m'), opts);
    assert.match(headlines(err)[0]!, /unknown key `http1IdleTimeout`; expected one of: `http2WindowSize`/);
    const tls = await compileError(yaml('frontendPolicies:', '  tls: { handshakeTimeout: 15s }', 'binds: []'), opts);
    assert.match(headlines(tls)[0]!, /unknown key `tls`; expected one of: `http`/);
  });
});
