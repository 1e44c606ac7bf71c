// CEL as a user porting agentgateway rules writes it (BEHAVIOUR.md §10, docs/adr/0145): every variable and function
// the reference lists is evaluated on a live request through `config.logging.fields.add` and an `authorization`
// rule; names Switchyard does not provide, and misspelt ones, are config errors that say so and point into the
// expression; a client-sized list cannot make a rule spend seconds of CPU.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { request } from 'undici';
import { logRecords, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const ISSUER = 'https://cel.issuer.test';

/** [field name, expression, the value the access log must carry (ints as numbers, maps as objects)]. */
const FIELDS: readonly (readonly [string, string, unknown])[] = [
  // request.*
  ['method', 'request.method', 'GET'],
  ['path', 'request.path', '/v1/items'],
  ['host', 'request.host', '127.0.0.1'],
  ['scheme', 'request.scheme', 'http'],
  ['uri', 'request.uri', '/v1/items?limit=10&tag=a&tag=b'],
  ['pathAndQuery', 'request.pathAndQuery', '/v1/items?limit=10&tag=a&tag=b'],
  ['version', 'request.version', 'HTTP/1.1'],
  ['header', 'request.headers["x-user"]', 'alice'],
  ['query', 'request.query["tag"]', 'a'],
  ['queryInt', 'int(request.query["limit"]) + 1', 11],
  // source.*, response.*
  ['address', 'source.address', '127.0.0.1'],
  ['portIsInt', 'type(source.port) == int && source.port > 0', true],
  ['rawAddress', 'source.rawAddress', '127.0.0.1'],
  ['rawPort', 'source.rawPort == source.port', true],
  ['noCert', 'has(source.subjectCn)', false],
  ['code', 'response.code', 200],
  // jwt.*
  ['sub', 'jwt.sub', 'alice'],
  ['group', '"admins" in jwt.groups', true],
  ['claimNumber', 'int(jwt.level) * 2', 6],
  // strings (standard and cel-go strings ext)
  ['split', '"a,b,c".split(",")', ['a', 'b', 'c']],
  ['join', '["a", "b"].join("-")', 'a-b'],
  ['lower', '"MiXed".lowerAscii() + "x".upperAscii()', 'mixedX'],
  ['trim', '"  x ".trim()', 'x'],
  ['indexOf', '"hello".indexOf("l") + "hello".lastIndexOf("l")', 5],
  ['substring', '"hello".substring(1, 3)', 'el'],
  ['charAt', '"hello".charAt(1)', 'e'],
  ['stripPrefix', 'request.path.stripPrefix("/v1")', '/items'],
  ['stripSuffix', 'request.path.stripSuffix("/items")', '/v1'],
  ['replace', 'request.path.replace("/", "_")', '_v1_items'],
  ['matches', 'request.path.matches("^/v[0-9]+/")', true],
  ['regexReplace', '"/id/1234/data".regexReplace("/id/[0-9]*/", "/id/{id}/")', '/id/{id}/data'],
  ['regexWhole', 'request.path.regexReplace("[a-z]+$", "<$0>")', '/v1/<items>'],
  ['contains', 'request.headers["accept"].contains("json") && request.path.startsWith("/v1") && request.path.endsWith("items")', true],
  // json / toJson / with / maps
  ['json', 'json(request.headers["x-json"]).a.b', 'c'],
  ['jsonBytes', 'json(b\'{"n": 1}\').n', 1],
  ['toJson', 'toJson({"a": [1, true, "x"]})', '{"a":[1,true,"x"]}'],
  ['with', 'request.headers["x-user"].with(u, u + "@" + u)', 'alice@alice'],
  ['merge', '{"a": 2, "k": "v"}.merge({"a": 3})', { a: 3, k: 'v' }],
  ['filterKeys', '{"a": 1, "b": 2}.filterKeys(k, k == "a")', { a: 1 }],
  ['removeKeys', '{"a": 1, "b": 2}.removeKeys(k, k == "b")', { a: 1 }],
  ['mapValues', '{"a": 1, "b": 2}.mapValues(v, v * 10)', { a: 10, b: 20 }],
  // encodings, helpers
  ['b64', 'base64.encode("user:pass")', 'dXNlcjpwYXNz'],
  ['unb64', 'string(base64.decode("aGk="))', 'hi'],
  ['url', 'url.encode("a b&c") + url.decode("%21")', 'a%20b%26c!'],
  ['default', 'default(request.headers["x-missing"], "anon")', 'anon'],
  ['optional', 'request.headers[?"x-missing"].orValue("none")', 'none'],
  ['random', 'random() >= 0.0 && random() < 1.0', true],
  ['uuid', 'uuid().matches("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")', true],
  // ip / cidr
  ['cidr', 'cidr("127.0.0.0/8").containsIP(source.address) && cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")', true],
  ['ip', 'string(ip("::ffff:10.1.2.3")) + "/" + string(cidr("10.1.2.3/8").masked())', '10.1.2.3/10.0.0.0/8'],
  ['ipFamily', 'ip(source.address).family() == 4 && ip(source.address).isLoopback() && isIP("::1") && !isCIDR("x")', true],
  // time
  ['clock', 'timestamp("2024-01-15T14:30:00Z").getHours("America/New_York")', 9],
  ['duration', 'duration("1h30m").getSeconds() + (timestamp("2024-01-01T00:00:00Z") + duration("1h")).getHours()', 5401],
  // macros
  ['exists', 'jwt.groups.exists(g, g == "admins") && jwt.groups.all(g, size(g) > 2) && jwt.groups.exists_one(g, g == "dev")', true],
  ['map', '[1, 2, 3].map(x, x > 1, x * 10)', [20, 30]],
  ['filter', 'jwt.groups.filter(g, g.startsWith("a"))', ['admins']],
  ['bind', 'cel.bind(u, request.headers["x-user"], u + "!")', 'alice!'],
];

describe('CEL as the reference writes it, on a live request', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let token: string;

  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const dir = testTempDir('switchyard-cel-');
    const jwks = join(dir, 'jwks.json');
    writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', use: 'sig', alg: 'ES256' }] }));
    token = await new SignJWT({ sub: 'alice', groups: ['admins', 'dev'], level: 3 })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setExpirationTime('5m')
      .sign(privateKey);
    const backends = [{ host: `127.0.0.1:${upstream.port}` }];
    const jwtAuth = { issuer: ISSUER, jwks: { file: jwks }, mode: 'strict' };
    gw = await startGateway({
      config: {
        logging: {
          format: 'json',
          fields: {
            add: {
              probe: 'request.headers["x-probe"]',
              // The client's header once per item of the client's list: its size squared.
              echo: 'request.headers[?"x-list"].orValue("").split(",").map(e, request.headers["x-list"])',
              ...Object.fromEntries(FIELDS.map(([n, e]) => [n, e])),
            },
          },
        },
      },
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                {
                  name: 'bomb',
                  matches: [{ path: { pathPrefix: '/bomb' } }],
                  policies: {
                    // Three nested macros over the client's list: 2000^3 steps unbounded.
                    authorization: { rules: ['cel.bind(l, request.headers["x-list"].split(","), l.all(a, l.all(b, l.exists(c, c == a))))'] },
                  },
                  backends,
                },
                {
                  // A deny rule the client can push past the budget must not let the request through (ADR 0145).
                  name: 'veto',
                  matches: [{ path: { pathPrefix: '/veto' } }],
                  policies: {
                    authorization: {
                      rules: [{ allow: 'true' }, { deny: 'cel.bind(l, request.headers["x-list"].split(","), l.exists(a, l.exists(b, a + b == "bannedbanned")))' }],
                    },
                  },
                  backends,
                },
                {
                  name: 'rules',
                  matches: [{ path: { pathPrefix: '/rules' } }],
                  policies: {
                    authorization: {
                      rules: [
                        'json(request.headers["x-json"]).role == "admin"',
                        'request.headers["x-n"].with(n, int(n) / 0 == 1)',
                        'request.path.matches("^/rules/ok$")',
                      ],
                    },
                  },
                  backends,
                },
                { name: 'open', policies: { jwtAuth }, backends },
              ],
            },
          ],
        },
      ],
    });
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  async function call(path: string, headers: Record<string, string>): Promise<number> {
    const res = await request(`${gw.url(port)}${path}`, { headers });
    await res.body.text();
    return res.statusCode;
  }

  async function lineFor(probe: string): Promise<Record<string, unknown>> {
    for (let i = 0; i < 100; i++) {
      const line = logRecords(gw).find((l) => l.msg === 'request' && l.probe === probe);
      if (line) return line;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no access-log line for ${probe}:\n${gw.logs.join('\n')}`);
  }

  it('every variable and function of BEHAVIOUR.md §10 that Switchyard provides has the reference value', async () => {
    const headers = { 'x-probe': 'table', authorization: `Bearer ${token}`, 'x-user': 'alice', accept: 'application/json', 'x-json': '{"a": {"b": "c"}}' };
    assert.equal(await call('/v1/items?limit=10&tag=a&tag=b', headers), 200);
    const line = await lineFor('table');
    const wrong = FIELDS.filter(([name, , want]) => !isDeepStrictEqualJson(line[name], want)).map(([name, expr, want]) => `${name}: \`${expr}\` gave ${JSON.stringify(line[name])}, want ${JSON.stringify(want)}`);
    assert.deepEqual(wrong, []);
  });

  it('a rule that errors (division by zero, a missing header, bad JSON) denies; a true rule allows', async () => {
    assert.equal(await call('/rules/x', { 'x-json': '{"role": "admin"}' }), 200);
    assert.equal(await call('/rules/x', { 'x-json': '{"role": "user"}', 'x-n': '4' }), 403, 'int / 0 is an error: false');
    assert.equal(await call('/rules/x', { 'x-json': '{not json' }), 403, 'a JSON parse error: false');
    assert.equal(await call('/rules/ok', {}), 200);
  });

  it('a client-sized list cannot make a rule run for seconds: the evaluation stops, the rule is false', async () => {
    const list = Array.from({ length: 2000 }, (_, i) => `g${i}`).join(',');
    const t0 = performance.now();
    assert.equal(await call('/bomb', { 'x-list': list }), 403);
    const ms = performance.now() - t0;
    assert.ok(ms < 1000, `the quadratic rule took ${ms.toFixed(0)} ms`);
    assert.equal(await call('/bomb', { 'x-list': 'a,b,c' }), 200, 'a small list is evaluated as before');
  });

  it('a deny rule stopped by the budget denies (it is the client who made it blow up)', async () => {
    assert.equal(await call('/veto', { 'x-list': 'a,b' }), 200);
    assert.equal(await call('/veto', { 'x-list': 'a,banned' }), 403);
    assert.equal(await call('/veto', { 'x-list': Array.from({ length: 2000 }, (_, i) => `g${i}`).join(',') }), 403);
  });

  it('a log field built from a client\'s input is bounded: past 256 KiB of text it is left out', async () => {
    const list = Array.from({ length: 2000 }, (_, i) => `g${i}`).join(',');
    assert.equal(await call('/rules/ok', { 'x-probe': 'echo-small', 'x-list': 'a,b' }), 200);
    assert.deepEqual((await lineFor('echo-small')).echo, ['a,b', 'a,b']);
    assert.equal(await call('/rules/ok', { 'x-probe': 'echo-big', 'x-list': list }), 200);
    const line = await lineFor('echo-big');
    assert.equal('echo' in line, false);
    assert.ok(JSON.stringify(line).length < 256 * 1024, `a line of ${JSON.stringify(line).length} characters`);
  });

  const yaml = (rule: string) =>
    `binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        authorization:\n          rules:\n          - ${rule}\n      backends: [{ host: "127.0.0.1:1" }]\n`;

  it('a misspelt variable, field or function is a config error with a suggestion, pointing into the expression', async () => {
    // Column 13 is the opening quote; the expression starts at 14.
    await assert.rejects(gw.gateway.compile(yaml(`'request.headres["x"] == "a"'`)), /:8:22: invalid CEL expression `request\.headres\["x"\] == "a"`: `request` has no field `headres`; did you mean `headers`\?/);
    await assert.rejects(gw.gateway.compile(yaml(`'has(request.pth)'`)), /:8:26: .*`request` has no field `pth`; did you mean `path`\?/);
    await assert.rejects(gw.gateway.compile(yaml(`'requets.path == "/"'`)), /:8:14: .*unknown variable `requets`; did you mean `request`\?/);
    await assert.rejects(gw.gateway.compile(yaml(`'request.path.startWith("/a")'`)), /:8:27: .*unknown function `startWith`; did you mean `startsWith`\?/);
    await assert.rejects(gw.gateway.compile(yaml(`'jsno(request.headers["x"]).a == 1'`)), /:8:14: .*unknown function `jsno`; did you mean `json`\?/);
    await assert.rejects(gw.gateway.compile(yaml(`'request.path ==' `)), /:8:29: invalid CEL expression `request\.path ==`/);
  });

  it('a name the reference has but Switchyard does not provide is a config error that says so', async () => {
    await assert.rejects(gw.gateway.compile(yaml(`'backend.name == "x"'`)), /:8:14: .*`backend` is a variable of the reference gateway that Switchyard does not provide \(docs\/cel\.md#not-available\)/);
    await assert.rejects(gw.gateway.compile(yaml(`'request.body.contains("x")'`)), /:8:22: .*`request\.body` .* Switchyard does not provide/);
    await assert.rejects(gw.gateway.compile(yaml(`'source.identity.namespace == "x"'`)), /:8:21: .*`source\.identity` .* Switchyard does not provide/);
    await assert.rejects(gw.gateway.compile(yaml(`'sha256.encode("a") == "x"'`)), /:8:14: .*`sha256\.encode\(\)` is a function of the reference gateway that Switchyard does not provide/);
    await assert.rejects(gw.gateway.compile(yaml(`'request.headers.cookie("a") == "x"'`)), /`cookie\(\)` is a function of the reference gateway that Switchyard does not provide/);
  });
});

/** Deep equality after a JSON round trip (the log line is JSON). */
function isDeepStrictEqualJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
