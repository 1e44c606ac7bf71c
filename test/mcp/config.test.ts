// Config of the `mcp` backend and its transports: errors point at the user's file, and the static session key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileError, compileValue, compileWarnings } from '../config/helpers.ts';
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

  it('warns (the reference and MCP accept them) about target names whose prefixed tool names LLM APIs refuse, with a name they take (ADR 0143)', async () => {
    const long = `a${'-b'.repeat(35)}`; // 71 characters: every `<target>_<tool>` is over 64
    const targets = (...names: string[]): string => `          targets:\n${names.map((n) => `          - name: ${n}\n            stdio: { cmd: node }\n`).join('')}`;
    const warned = await compileWarnings(route(targets('svc.ns', long, 'plain-name', `c${'d'.repeat(61)}`)), opts);
    assert.equal(warned.length, 2, warned.join('\n'));
    assert.match(warned[0]!, /target name `svc\.ns` has characters LLM APIs refuse in tool names .*listed as `svc\.ns_<name>`.*did you mean `svc-ns`\?/);
    assert.match(warned[0]!, /at=binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.mcp\.targets\[0\]\.name/);
    assert.match(warned[1]!, new RegExp(`target name \`${long}\` is 71 characters long, so every tool name is over the 64 characters LLM APIs take.*did you mean \`a-b-b-b-b-b-b-b-b-b-b-b\`\\?`));
    assert.match(warned[1]!, /targets\[1\]\.name/);
    // One target and names unprefixed: its tools keep their own names, nothing to warn about.
    assert.deepEqual(await compileWarnings(route(targets('svc.ns')), opts), []);
    // `prefixMode: always` prefixes a single target's names too.
    const always = await compileWarnings(route(`          prefixMode: always\n${targets('svc.ns')}`), opts);
    assert.equal(always.length, 1, always.join('\n'));
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
