// A route's `exact` or `pathPrefix` that no normalised request path can equal (ADR 0013: `..`, `//`, escapes and
// characters a path carries escaped are normalised before routing) never matched, without a word: now a load
// warning naming the condition and the path to write instead (docs/features.md).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

function configWith(matches: string, extra = ''): string {
  const file = join(testTempDir('switchyard-match-path-'), 'gw.yaml');
  writeFileSync(file, `${extra}binds:\n- port: 18080\n  listeners:\n  - routes:\n    - matches: ${matches}\n      policies: { directResponse: { body: x, status: 200 } }\n`);
  return file;
}

describe('path conditions no request can match', () => {
  it('warn at load with the normal form to write', async () => {
    const file = configWith('[{ path: { pathPrefix: "/caf\\u00e9" } }, { path: { exact: /a/../b } }, { path: { pathPrefix: /x//y/ } }, { path: { exact: "/a%2Fb" } }, { path: { exact: api } }]');
    const run = await runCli(['-f', file, '--validate-only']);
    assert.equal(run.code, 0, run.stderr);
    const at = (i: number, key: string): string => `at=binds[0].listeners[0].routes[0].matches[${i}].path.${key}`;
    assert.match(run.stderr, new RegExp(`did you mean \`/caf%C3%A9\`\\? ${at(0, 'pathPrefix').replace(/[[\].]/g, '\\$&')}`));
    assert.match(run.stderr, new RegExp(`did you mean \`/b\`\\? ${at(1, 'exact').replace(/[[\].]/g, '\\$&')}`));
    assert.match(run.stderr, /did you mean `\/x\/y`\?/);
    assert.match(run.stderr, /refused before routing \(the path contains an encoded slash/);
    assert.match(run.stderr, /starts with `\/`/);
  });

  it('say nothing of paths requests can have, a prefix written with its trailing slash included', async () => {
    const file = configWith('[{ path: { pathPrefix: /api/ } }, { path: { exact: "/caf%C3%A9" } }, { path: { pathPrefix: / } }, { path: { exact: "/a;v=1/b" } }]');
    const run = await runCli(['-f', file, '--validate-only']);
    assert.equal(run.code, 0, run.stderr);
    assert.doesNotMatch(run.stderr, /never matches|WARN/);
  });

  it('follow the config: with `mergeSlashes: false`, `//` is a path requests have', async () => {
    const file = configWith('[{ path: { exact: /x//y } }]', 'config:\n  mergeSlashes: false\n');
    const run = await runCli(['-f', file, '--validate-only']);
    assert.equal(run.code, 0, run.stderr);
    assert.doesNotMatch(run.stderr, /never matches/);
  });
});
