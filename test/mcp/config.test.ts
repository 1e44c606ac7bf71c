// Config of the `mcp` backend and its transports: errors point at the user's file, and the static session key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileError, compileValue } from '../config/helpers.ts';
import { mcpPreset } from './harness.ts';

const opts = { preset: mcpPreset };
const route = (mcp: string): string => `binds:\n- port: 3000\n  listeners:\n  - routes:\n    - backends:\n      - mcp:\n${mcp}`;

describe('mcp backend config', () => {
  it('accepts every transport form and the backend modes', async () => {
    await compileValue(
      route(`          statefulMode: stateless
          prefixMode: always
          failureMode: failOpen
          sessionIdleTimeout: 5m
          targets:
          - name: local
            stdio: { cmd: node, args: [server.js], env: { A: b } }
          - name: remote.example
            mcp: { host: "http://127.0.0.1:3001/mcp" }
          - name: legacy-1
            sse: { host: 127.0.0.1, port: 3002, path: /sse }
`),
      opts,
    );
  });

  it('refuses target names with `_` or `+` (the name separators)', async () => {
    const err = await compileError(route(`          targets:\n          - name: my_server\n            stdio: { cmd: node }\n`), opts);
    assert.match(err.message, /test\.yaml:8:19: .*lowercase letters, digits, `-` and `\.`/);
    assert.match(err.message, /targets\[0\]\.name/);
  });

  it('refuses duplicate target names, naming the first use', async () => {
    const err = await compileError(route(`          targets:\n          - name: a\n            stdio: { cmd: node }\n          - name: a\n            stdio: { cmd: node }\n`), opts);
    assert.match(err.message, /target name `a` is already used by targets\[0\]; names must be unique/);
    assert.match(err.message, /test\.yaml:10:/);
  });

  it('requires exactly one transport per target', async () => {
    const none = await compileError(route(`          targets:\n          - name: a\n`), opts);
    assert.match(none.message, /exactly one of .*`stdio`.*is required|stdio/);
    const two = await compileError(route(`          targets:\n          - name: a\n            stdio: { cmd: node }\n            sse: { host: x }\n`), opts);
    assert.match(two.message, /only one of/);
  });

  it('checks the HTTP connection form', async () => {
    const mixed = await compileError(route(`          targets:\n          - name: a\n            mcp: { host: "http://x/mcp", port: 80 }\n`), opts);
    assert.match(mixed.message, /when `host` is a URL, give the port inside it/);
    const scheme = await compileError(route(`          targets:\n          - name: a\n            sse: { host: "ftp://x/sse" }\n`), opts);
    assert.match(scheme.message, /unsupported scheme `ftp`/);
  });

  it('validates config.session.key and SESSION_KEY', async () => {
    const short = await compileError(`config:\n  session:\n    key: abc\n` + route(`          targets:\n          - name: a\n            stdio: { cmd: node }\n`), opts);
    assert.match(short.message, /64 hexadecimal characters/);
    const env = await compileError(route(`          targets:\n          - name: a\n            stdio: { cmd: node }\n`), { ...opts, env: { SESSION_KEY: 'nothex' } });
    assert.match(env.message, /SESSION_KEY.*64 hexadecimal characters/);
    await compileValue(`config:\n  session:\n    key: ${'ab'.repeat(32)}\n` + route(`          targets:\n          - name: a\n            stdio: { cmd: node }\n`), opts);
  });
});
