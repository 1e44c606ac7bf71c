import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fullPreset } from '../../plugins/presets/full.ts';
import { minimalPreset } from '../../plugins/presets/minimal.ts';
import requestHeaderModifier from '../../plugins/policies/request-header-modifier/plugin.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { compileError, compileValue, headlines, summarize, yaml } from './helpers.ts';

/** What a "not installed" message says after its headline: where a left-out first-party key comes from. */
const NOT_INSTALLED_HINT = " it comes with the full distribution (the `switchyard` package), or add its plugin to a trimmed build's preset (`npm run build:dist -- --preset NAME`)";

// Every config error names the file, line and column, the config path, and says what is wrong in words that
// point at the fix (ARCHITECTURE.md §1.5, issue 2 "Config").

/** A route whose only content is `body`, indented under `binds[0].listeners[0].routes[0]` (line 5 onwards). */
const route = (...body: string[]): string =>
  yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', ...body.map((l, i) => (i === 0 ? `          - ${l}` : `            ${l}`)));

describe('config errors: schema violations', () => {
  it('unknown key: did you mean, at the key, and no "missing required" noise for the misspelled key', async () => {
    const err = await compileError(yaml('binds:', '  - port: 8080', '    listners:', '      - routes: []'));
    assert.deepEqual(headlines(err), [
      'test.yaml:3:5: unknown key `listners`; did you mean `listeners`? (at binds[0].listners) [SWY_ERR_CONFIG_UNKNOWN_KEY]',
    ]);
  });

  it('unknown top-level key lists nothing misleading and points at the key', async () => {
    const err = await compileError(yaml('bindz:', '  - port: 8080'));
    assert.deepEqual(summarize(err.issues), [
      { at: 'test.yaml:1:1', path: 'bindz', code: 'SWY_ERR_CONFIG_UNKNOWN_KEY', message: 'unknown key `bindz`; did you mean `binds`?' },
    ]);
  });

  it('wrong type: "must be an integer" at the value, not the key', async () => {
    const err = await compileError(yaml('binds:', '  - port: "abc"', '    listeners: []'));
    assert.deepEqual(headlines(err), ['test.yaml:2:11: must be an integer, got the string "abc" (at binds[0].port) [SWY_ERR_CONFIG_SCHEMA]']);
  });

  it('wrong type: an object where a list is expected', async () => {
    const err = await compileError(yaml('binds:', '  - port: 8080', '    listeners:', '      routes: []'));
    assert.deepEqual(summarize(err.issues), [
      { at: 'test.yaml:4:7', path: 'binds[0].listeners', code: 'SWY_ERR_CONFIG_SCHEMA', message: 'must be an array, got an object' },
    ]);
  });

  it('wrong type in a JSON config is positioned too', async () => {
    const text = '{\n  "binds": [\n    { "port": 8080.5, "listeners": [] }\n  ]\n}\n';
    const err = await compileError(text, { name: 'test.json' });
    assert.deepEqual(headlines(err), ['test.json:3:15: must be an integer, got number 8080.5 (at binds[0].port) [SWY_ERR_CONFIG_SCHEMA]']);
  });

  // YAML's `.inf` (and JSON's 1e309) read as Infinity, which the schema's `number` refuses: "must be a number, got
  // number Infinity" contradicted itself.
  it('an infinite number is said to be one', async () => {
    const err = await compileError(yaml('binds:', '  - port: .inf', '    listeners: []'));
    assert.deepEqual(headlines(err), ['test.yaml:2:11: must be a finite integer, got Infinity (at binds[0].port) [SWY_ERR_CONFIG_SCHEMA]']);
  });

  it('missing required key: named, at the object that lacks it', async () => {
    const err = await compileError(yaml('binds:', '  - listeners: []'));
    assert.deepEqual(headlines(err), ['test.yaml:2:5: missing required key `port` (at binds[0]) [SWY_ERR_CONFIG_SCHEMA]']);
  });

  it('exactlyOneOf: a path with both `exact` and `pathPrefix`, at the second key', async () => {
    const err = await compileError(route('matches:', '  - path:', '      exact: /a', '      pathPrefix: /b'));
    assert.deepEqual(headlines(err), [
      'test.yaml:8:19: only one of `exact`, `pathPrefix`, `regex` may be set, found `exact` and `pathPrefix` ' +
        '(at binds[0].listeners[0].routes[0].matches[0].path.pathPrefix) [SWY_ERR_CONFIG_SCHEMA]',
    ]);
  });

  it('exactlyOneOf: the later key in the file is the one pointed at, whatever the schema order', async () => {
    const err = await compileError(route('matches:', '  - path:', '      regex: /a.*', '      exact: /a'));
    assert.deepEqual(summarize(err.issues), [
      {
        at: 'test.yaml:8:19',
        path: 'binds[0].listeners[0].routes[0].matches[0].path.exact',
        code: 'SWY_ERR_CONFIG_SCHEMA',
        message: 'only one of `exact`, `pathPrefix`, `regex` may be set, found `regex` and `exact`',
      },
    ]);
  });

  it('exactlyOneOf: a path with none of its keys', async () => {
    const err = await compileError(route('matches:', '  - path: {}'));
    assert.deepEqual(summarize(err.issues), [
      {
        at: 'test.yaml:6:23',
        path: 'binds[0].listeners[0].routes[0].matches[0].path',
        code: 'SWY_ERR_CONFIG_SCHEMA',
        message: 'exactly one of `exact`, `pathPrefix`, `regex` is required',
      },
    ]);
  });

  it('exactlyOneOf: a backend entry with two kinds', async () => {
    const err = await compileError(route('backends:', '  - host: 127.0.0.1:9', '    backend: other'));
    assert.deepEqual(headlines(err), [
      'test.yaml:7:17: only one of `host`, `backend` may be set, found `host` and `backend` ' +
        '(at binds[0].listeners[0].routes[0].backends[0].backend) [SWY_ERR_CONFIG_SCHEMA]',
    ]);
  });

  it('exactlyOneOf: a backend entry with no kind', async () => {
    const err = await compileError(route('backends:', '  - weight: 2'));
    assert.deepEqual(summarize(err.issues), [
      {
        at: 'test.yaml:6:17',
        path: 'binds[0].listeners[0].routes[0].backends[0]',
        code: 'SWY_ERR_CONFIG_SCHEMA',
        message: 'exactly one of `host`, `backend` is required',
      },
    ]);
  });

  it('a misspelled backend kind gets a did-you-mean instead of "exactly one of"', async () => {
    const err = await compileError(route('backends:', '  - hots: 127.0.0.1:9'));
    assert.deepEqual(headlines(err), [
      'test.yaml:6:17: unknown backend kind `hots`; did you mean `host`? (at binds[0].listeners[0].routes[0].backends[0].hots) [SWY_ERR_CONFIG_UNKNOWN_KEY]',
    ]);
  });

  it('an invalid regular expression in a path match', async () => {
    const err = await compileError(route('matches:', '  - path:', '      regex: "/a(["'));
    assert.deepEqual(headlines(err), [
      'test.yaml:7:26: is not a valid regular expression: `/a([`: Unterminated character class (at binds[0].listeners[0].routes[0].matches[0].path.regex) [SWY_ERR_CONFIG_SCHEMA]',
    ]);
  });

  it('an invalid regular expression in a header match', async () => {
    const err = await compileError(route('matches:', '  - headers:', '      - name: x-a', '        value: { regex: "a{2,1}" }'));
    assert.deepEqual(summarize(err.issues), [
      {
        at: 'test.yaml:8:37',
        path: 'binds[0].listeners[0].routes[0].matches[0].headers[0].value.regex',
        code: 'SWY_ERR_CONFIG_SCHEMA',
        message: 'is not a valid regular expression: `a{2,1}`: numbers out of order in {} quantifier',
      },
    ]);
  });

  it('a bad enum value with did-you-mean', async () => {
    const err = await compileError(yaml('binds:', '  - port: 8080', '    listeners:', '      - protocol: HTTPX', '        routes: []'));
    assert.deepEqual(headlines(err), [
      'test.yaml:4:19: must be one of `HTTP`, `HTTPS`, got the string "HTTPX"; did you mean `HTTP`? (at binds[0].listeners[0].protocol) [SWY_ERR_CONFIG_SCHEMA]',
    ]);
  });

  it('a pattern violation speaks in words (x-hint), not in regex', async () => {
    const err = await compileError(yaml('config:', '  adminAddr: nowhere', 'binds: []'));
    assert.deepEqual(headlines(err), [
      'test.yaml:2:14: must be `host:port` (a host name, an IPv4 address or `[IPv6]`, and a port 0-65535) or `off`, got the string "nowhere" (at config.adminAddr) [SWY_ERR_CONFIG_SCHEMA]',
    ]);
  });

  it('several problems are all reported, in file order', async () => {
    const err = await compileError(yaml('binds:', '  - port: -1', '    listeners:', '      - protocol: HTTPX', '        routes: []'));
    assert.deepEqual(
      summarize(err.issues).map((i) => `${i.at} ${i.path}`),
      ['test.yaml:2:11 binds[0].port', 'test.yaml:4:19 binds[0].listeners[0].protocol'],
    );
  });
});

describe('config errors: policies and plugins', () => {
  it('a misspelled policy: "unknown policy ... did you mean"', async () => {
    const err = await compileError(route('policies:', '  requestHeaderModifer:', '    set: { x-a: b }'));
    assert.deepEqual(headlines(err), [
      'test.yaml:6:15: unknown policy `requestHeaderModifer`; did you mean `requestHeaderModifier`? ' +
        '(at binds[0].listeners[0].routes[0].policies.requestHeaderModifer) [SWY_ERR_CONFIG_UNKNOWN_KEY]',
    ]);
  });

  it('a policy nobody knows lists the installed ones', async () => {
    const err = await compileError(route('policies:', '  frobnicate: {}'));
    assert.equal(
      err.issues[0]!.message,
      'unknown policy `frobnicate`; expected one of: `requestHeaderModifier`, `responseHeaderModifier`, `directResponse`',
    );
  });

  it('with the full preset, a misspelled policy is still caught', async () => {
    const err = await compileError(route('policies:', '  directRespone: { status: 200 }'), { preset: fullPreset });
    assert.equal(err.issues[0]!.message, 'unknown policy `directRespone`; did you mean `directResponse`?');
  });

  it('an installed policy put outside `policies` is unknown there, not "not installed"', async () => {
    const err = await compileError(route('directResponse: { status: 200 }'), { preset: fullPreset });
    assert.equal(err.issues[0]!.code, 'SWY_ERR_CONFIG_UNKNOWN_KEY');
    assert.match(err.issues[0]!.message, /^unknown key `directResponse`; expected one of: `name`, /);
    assert.equal(`${err.issues[0]!.line}:${err.issues[0]!.col}`, '5:13');
  });

  it('a first-party key missing from a trimmed distribution says it is not installed', async () => {
    const err = await compileError(route('policies:', '  directResponse: { status: 200 }'), { preset: minimalPreset, knownKeys: FIRST_PARTY_KEYS });
    assert.deepEqual(headlines(err), [
      'test.yaml:6:15: `directResponse` is not installed in this distribution;' +
        NOT_INSTALLED_HINT +
        ' (at binds[0].listeners[0].routes[0].policies.directResponse) [SWY_ERR_CONFIG_NOT_INSTALLED]',
    ]);
  });

  it('a typo of a key the distribution left out is guessed among those too, saying it is not installed', async () => {
    const err = await compileError(route('policies:', '  jwtAuht: {}'), { preset: [...minimalPreset, requestHeaderModifier], knownKeys: FIRST_PARTY_KEYS });
    assert.equal(err.issues[0]!.code, 'SWY_ERR_CONFIG_UNKNOWN_KEY');
    assert.equal(err.issues[0]!.message, `unknown policy \`jwtAuht\`; did you mean \`jwtAuth\`? It is not installed in this distribution;${NOT_INSTALLED_HINT}`);
  });

  it('"not installed" wins over a did-you-mean to a similar installed key', async () => {
    // responseHeaderModifier is close enough to requestHeaderModifier to be taken for a typo of it.
    const err = await compileError(route('policies:', '  responseHeaderModifier: { set: { x-a: b } }'), {
      preset: [...minimalPreset, requestHeaderModifier],
      knownKeys: FIRST_PARTY_KEYS,
    });
    assert.equal(err.issues[0]!.message, `\`responseHeaderModifier\` is not installed in this distribution;${NOT_INSTALLED_HINT}`);
    assert.equal(err.issues[0]!.code, 'SWY_ERR_CONFIG_NOT_INSTALLED');
  });

  it('without the catalog of known keys, a trimmed distribution reports a plain unknown policy', async () => {
    const err = await compileError(route('policies:', '  directResponse: { status: 200 }'), { preset: minimalPreset, knownKeys: [] });
    assert.equal(err.issues[0]!.message, 'unknown policy `directResponse`');
  });

  it('an error inside a policy value is positioned inside it', async () => {
    const err = await compileError(route('policies:', '  directResponse:', '    status: 99'));
    assert.deepEqual(summarize(err.issues), [
      {
        at: 'test.yaml:7:25',
        path: 'binds[0].listeners[0].routes[0].policies.directResponse.status',
        code: 'SWY_ERR_CONFIG_SCHEMA',
        message: 'must be at least 200, got number 99',
      },
    ]);
  });
});

describe('config errors: found by the compiler', () => {
  it('an unknown named backend, at its value', async () => {
    const err = await compileError(route('backends:', '  - backend: nope'));
    assert.deepEqual(headlines(err), [
      'test.yaml:6:26: unknown backend `nope` (the top-level `backends` list is empty) ' +
        '(at binds[0].listeners[0].routes[0].backends[0].backend) [SWY_ERR_CONFIG_INVALID]',
    ]);
  });

  it('an unknown named backend with a did-you-mean among the named ones', async () => {
    const text = yaml(
      'backends:',
      '  - name: payments',
      '    host: 127.0.0.1:9',
      'binds:',
      '  - port: 8080',
      '    listeners:',
      '      - routes:',
      '          - backends:',
      '              - backend: paymnets',
    );
    const err = await compileError(text);
    assert.deepEqual(summarize(err.issues), [
      {
        at: 'test.yaml:9:26',
        path: 'binds[0].listeners[0].routes[0].backends[0].backend',
        code: 'SWY_ERR_CONFIG_INVALID',
        message: 'unknown backend `paymnets`; did you mean `payments`?',
      },
    ]);
  });

  it('duplicate bind ports, at the second port', async () => {
    const err = await compileError(yaml('binds:', '  - port: 8080', '    listeners: []', '  - port: 8080', '    listeners: []'));
    assert.deepEqual(headlines(err), ['test.yaml:4:11: port 8080 is bound twice (at binds[1].port) [SWY_ERR_CONFIG_INVALID]']);
  });

  it('a `trustedProxies` entry that is not an address or CIDR range, at the entry', async () => {
    const err = await compileError(yaml('config:', '  trustedProxies: [10.0.0.0/8, 10.0.0.0/33, proxy.internal]', 'binds: []'));
    assert.deepEqual(headlines(err), [
      'test.yaml:2:32: `10.0.0.0/33`: the prefix length must be 0-32 (at config.trustedProxies[1]) [SWY_ERR_CONFIG_INVALID]',
      'test.yaml:2:45: `proxy.internal` is not an IP address or CIDR range (at config.trustedProxies[2]) [SWY_ERR_CONFIG_INVALID]',
    ]);
  });

  it('a bad `escapedSlashes` value gets a did-you-mean', async () => {
    const err = await compileError(yaml('config:', '  escapedSlashes: rejekt', 'binds: []'));
    assert.match(headlines(err)[0]!, /^test\.yaml:2:19: .*`reject`.*\(at config\.escapedSlashes\)/);
  });

  it('a duplicate named backend, at the second name', async () => {
    const err = await compileError(yaml('backends:', '  - name: a', '    host: x:1', '  - name: a', '    host: y:1', 'binds: []'));
    assert.deepEqual(headlines(err), ['test.yaml:4:11: backend name `a` is used twice (at backends[1].name) [SWY_ERR_CONFIG_INVALID]']);
  });
});

// `config.defaultTimeouts.llmBackendRequestTimeout` is contributed by the `ai` backend (a config section with a
// `parent`), not known to the kernel: the same YAML is accepted, and its errors read as the kernel's own do.
describe('config errors: settings a plugin adds to `config:`', () => {
  const timeouts = (line: string): string => yaml('config:', '  defaultTimeouts:', `    ${line}`, 'binds: []');

  it('the `ai` backend’s `llmBackendRequestTimeout` is accepted where it always was', async () => {
    await compileValue(timeouts('llmBackendRequestTimeout: 90s'), { preset: fullPreset });
  });

  it('a bad duration, at the value', async () => {
    const err = await compileError(timeouts('llmBackendRequestTimeout: 10 minutes'), { preset: fullPreset });
    assert.deepEqual(headlines(err), [
      'test.yaml:3:31: must be a duration such as `500ms`, `60s` or `1m30s`, got the string "10 minutes" (at config.defaultTimeouts.llmBackendRequestTimeout) [SWY_ERR_CONFIG_SCHEMA]',
    ]);
  });

  it('a misspelling gets a did-you-mean to the plugin’s key', async () => {
    const err = await compileError(timeouts('llmBackendRequestTimout: 10m'), { preset: fullPreset });
    assert.deepEqual(headlines(err), [
      'test.yaml:3:5: unknown key `llmBackendRequestTimout`; did you mean `llmBackendRequestTimeout`? (at config.defaultTimeouts.llmBackendRequestTimout) [SWY_ERR_CONFIG_UNKNOWN_KEY]',
    ]);
  });

  it('a distribution without the `ai` backend says it is not installed (no guess at `backendRequestTimeout`)', async () => {
    const err = await compileError(timeouts('llmBackendRequestTimeout: 10m'), { preset: minimalPreset, knownKeys: FIRST_PARTY_KEYS });
    assert.deepEqual(headlines(err), [
      `test.yaml:3:5: \`llmBackendRequestTimeout\` is not installed in this distribution;${NOT_INSTALLED_HINT} (at config.defaultTimeouts.llmBackendRequestTimeout) [SWY_ERR_CONFIG_NOT_INSTALLED]`,
    ]);
  });

  it('so does `config.session` without the `mcp` backend', async () => {
    const err = await compileError(yaml('config:', '  session:', `    key: ${'ab'.repeat(32)}`, 'binds: []'), { preset: minimalPreset, knownKeys: FIRST_PARTY_KEYS });
    assert.deepEqual(headlines(err), [`test.yaml:2:3: \`session\` is not installed in this distribution;${NOT_INSTALLED_HINT} (at config.session) [SWY_ERR_CONFIG_NOT_INSTALLED]`]);
  });

  it('the kernel’s own `defaultTimeouts` keys are no plugin’s', async () => {
    await compileValue(timeouts('backendRequestTimeout: 5s'), { preset: minimalPreset, knownKeys: FIRST_PARTY_KEYS });
  });
});

describe('config errors: YAML syntax', () => {
  it('a bad indentation is reported where the parser stopped', async () => {
    const err = await compileError(yaml('binds:', '  - port: 8080', '   listeners: []'));
    assert.deepEqual(headlines(err), ['test.yaml:3:1: YAML syntax error: Sequence item without - indicator [SWY_ERR_CONFIG_SYNTAX]']);
  });

  it('an unclosed flow sequence', async () => {
    const err = await compileError(yaml('binds:', '  - port: 8080', '    listeners: [', '      - routes'));
    assert.equal(headlines(err)[0], 'test.yaml:4:7: YAML syntax error: Block collections are not allowed within flow collections [SWY_ERR_CONFIG_SYNTAX]');
    assert.ok(err.issues.every((i) => i.code === 'SWY_ERR_CONFIG_SYNTAX'));
  });

  it('a duplicate key in one mapping', async () => {
    const err = await compileError(yaml('binds:', '  - port: 8080', '    port: 8081', '    listeners: []'));
    assert.deepEqual(headlines(err), ['test.yaml:3:5: YAML syntax error: Map keys must be unique [SWY_ERR_CONFIG_SYNTAX]']);
  });

  it('a document that is not a mapping', async () => {
    const err = await compileError(yaml('- just', '- a list'));
    assert.deepEqual(headlines(err), ['test.yaml:1:1: the config must be a mapping with `binds` and `backends` [SWY_ERR_CONFIG_SCHEMA]']);
  });
});

describe('config errors: rendering', () => {
  it('the message carries a code frame with a caret under the column', async () => {
    const err = await compileError(yaml('binds:', '  - port: 8080', '    listeners:', '      - protocol: HTTPX', '        routes: []'));
    assert.equal(
      err.message,
      [
        'test.yaml:4:19: must be one of `HTTP`, `HTTPS`, got the string "HTTPX"; did you mean `HTTP`? (at binds[0].listeners[0].protocol) [SWY_ERR_CONFIG_SCHEMA]',
        '  2 |   - port: 8080',
        '  3 |     listeners:',
        '> 4 |       - protocol: HTTPX',
        '    |                   ^',
        '  5 |         routes: []',
        '  6 | ',
      ].join('\n'),
    );
    assert.equal(err.issues[0]!.frame, err.message.split('\n').slice(1).join('\n'));
  });

  it('each issue exposes file, line, col, path and message', async () => {
    const err = await compileError(yaml('binds:', '  - port: "abc"', '    listeners: []'), { name: '/etc/switchyard/gw.yaml' });
    const [issue] = err.issues;
    assert.equal(err.name, 'ConfigLoadError');
    assert.equal(issue!.file, '/etc/switchyard/gw.yaml');
    assert.equal(issue!.line, 2);
    assert.equal(issue!.col, 11);
    assert.equal(issue!.path, 'binds[0].port');
    assert.equal(issue!.message, 'must be an integer, got the string "abc"');
  });
});

describe('valid configs', () => {
  it('a config using every kernel construct compiles', async () => {
    const text = yaml(
      'backends:',
      '  - name: api',
      '    host: 127.0.0.1:9',
      'binds:',
      '  - port: 8080',
      '    listeners:',
      '      - name: main',
      '        hostname: "*.example.com"',
      '        routes:',
      '          - name: r',
      '            hostnames: [a.example.com]',
      '            matches:',
      '              - method: GET',
      '                path: { regex: "/v[0-9]+/.*" }',
      '                headers: [{ name: x-a, value: { exact: "1" } }]',
      '                query: [{ name: q, value: { regex: "[a-z]+" } }]',
      '            backends:',
      '              - backend: api',
      '                weight: 3',
      '              - host: 127.0.0.1:10',
    );
    const value = await compileValue(text);
    assert.equal((value.binds as { port: number }[])[0]!.port, 8080);
  });
});
