// Config errors of the `http` policy (ADR 0151): a version spelt otherwise, a misspelt field, and HTTP/2 asked of
// backend kinds that choose their own protocol (MCP, `ai`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fullPreset } from '../../plugins/presets/full.ts';
import { compileError, compileValue, headlines, routeWithPolicies, yaml } from './helpers.ts';

const route = routeWithPolicies;
const MCP_BACKEND = ['- mcp: { targets: [{ name: t, mcp: { host: 127.0.0.1, port: 9, path: /mcp } }] }'];
const opts = { preset: fullPreset };

describe('`http` policy config', () => {
  it('accepts both versions on a route, a backend reference and a named backend', async () => {
    await compileValue(route(['http: { version: HTTP/2.0 }']), opts);
    await compileValue(route(['http: { version: HTTP/1.1 }'], ['- host: 127.0.0.1:9', '  policies: { http: { version: HTTP/2.0 } }']), opts);
    await compileValue(
      yaml(
        'backends:',
        '  - name: grpc',
        '    host: 127.0.0.1:9',
        '    policies: { http: { version: HTTP/2.0 } }',
        'binds:',
        '  - port: 8080',
        '    listeners:',
        '      - routes:',
        '          - backends: [{ backend: grpc }]',
      ),
      opts,
    );
  });

  it('a version spelt as HTTP/2 or h2c: the two accepted values, and the one meant', async () => {
    const err = await compileError(route(['http: { version: HTTP/2 }']), opts);
    assert.deepEqual(headlines(err), [
      'test.yaml:6:32: must be one of `HTTP/1.1`, `HTTP/2.0`, got the string "HTTP/2"; did you mean `HTTP/2.0`? ' +
        '(at binds[0].listeners[0].routes[0].policies.http.version) [SWY_ERR_CONFIG_SCHEMA]',
    ]);
    const h2c = await compileError(route(['http: { version: h2c }']), opts);
    assert.match(headlines(h2c)[0]!, /must be one of `HTTP\/1\.1`, `HTTP\/2\.0`, got the string "h2c"/);
  });

  it('a misspelt field or policy gets a did-you-mean', async () => {
    const field = await compileError(route(['http: { verison: HTTP/2.0 }']), opts);
    assert.match(headlines(field)[0]!, /unknown key `verison`; did you mean `version`\?/);
    const policy = await compileError(route(['htp: { version: HTTP/2.0 }']), opts);
    assert.match(headlines(policy)[0]!, /unknown policy `htp`; did you mean `http`\?/);
  });

  it('refuses HTTP/2.0 in front of an MCP backend, at the version', async () => {
    const err = await compileError(route(['http: { version: HTTP/2.0 }'], MCP_BACKEND), opts);
    assert.deepEqual(headlines(err), [
      'test.yaml:6:32: `http.version: HTTP/2.0` applies to `host`, `service` and named backends only; MCP and `ai` backends choose their own protocol ' +
        '(at binds[0].listeners[0].routes[0].policies.http.version) [SWY_ERR_CONFIG_INVALID]',
    ]);
    // HTTP/1.1 is what those backends speak anyway: accepted.
    await compileValue(route(['http: { version: HTTP/1.1 }'], MCP_BACKEND), opts);
  });

  it('is not a policy of an MCP target (the MCP client picks its own HTTP)', async () => {
    const target = await compileError(
      route(['cors: { allowOrigins: ["*"] }'], ['- mcp: { targets: [{ name: t, mcp: { host: 127.0.0.1, port: 9, path: /mcp }, policies: { http: { version: HTTP/2.0 } } }] }']),
      opts,
    );
    assert.match(headlines(target)[0]!, /unknown MCP target policy `http`; expected one of: /);
  });

  it("the reference's `requestTimeout` is not taken here (the `timeout` policy is); a connection a policy makes refuses `http`", async () => {
    const timeout = await compileError(route(['http: { version: HTTP/2.0, requestTimeout: 10s }']), opts);
    assert.match(headlines(timeout)[0]!, /unknown key `requestTimeout`; expected one of: `version`/);
    const connection = await compileError(
      route(['extAuthz: { host: "127.0.0.1:9", protocol: { http: {} }, policies: { http: { version: HTTP/2.0 } } }']),
      opts,
    );
    assert.match(headlines(connection)[0]!, /`http` is not supported on the connection to the authorization service; only `backendTLS` and `requestHeaderModifier` apply here/);
  });
});
