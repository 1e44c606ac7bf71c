// The JSON access log (issue 12 item 3): numeric duration_ms, a request id (honoured or generated, forwarded
// upstream, never a log-injection vector), `config.logging.fields.add`/`remove` and `filter` (CEL, compiled at load),
// credentials never logged, reload errors as structured fields.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import { request } from 'undici';
import { stringify } from 'yaml';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { rawRequest } from './proxy-support.ts';

const ISSUER = 'https://logs.issuer.test';
const API_KEY = 'sk-log-9f8e7d6c';

type Line = Record<string, unknown>;

describe('access log fields, request id, filter', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let token: string;
  let config: Record<string, unknown>;

  const requestLines = (): Line[] => gw.logs.map((l) => JSON.parse(l) as Line).filter((l) => l.msg === 'request');

  /** The access-log line of the request that carried `x-probe: probe`, waiting for the batch to be written. */
  async function lineFor(probe: string): Promise<Line> {
    for (let i = 0; i < 100; i++) {
      const line = requestLines().find((l) => l.probe === probe);
      if (line) return line;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no access-log line for ${probe}:\n${gw.logs.join('\n')}`);
  }

  async function call(path: string, probe: string, headers: Record<string, string> = {}): Promise<number> {
    const res = await request(`${gw.url(port)}${path}`, { headers: { 'x-probe': probe, ...headers } });
    await res.body.text();
    return res.statusCode;
  }

  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    const dir = testTempDir('switchyard-logs-');
    const { privateKey, publicKey } = await jose.generateKeyPair('ES256', { extractable: true });
    writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await jose.exportJWK(publicKey)), kid: 'k1', use: 'sig' }] }));
    token = await new jose.SignJWT({ sub: 'alice', tenant: 'acme' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience('logs')
      .setExpirationTime('1h')
      .sign(privateKey);
    const backend = [{ host: `127.0.0.1:${upstream.port}` }];
    config = {
      config: {
        logging: {
          format: 'json',
          fields: {
            add: {
              probe: "request.headers['x-probe']",
              user: 'jwt.sub',
              tenant: "jwt.tenant + '/' + request.method",
              auth: 'request.headers.authorization',
              headers: 'request.headers',
              key: 'apiKey.key',
              uri: 'request.uri',
              qtoken: "request.query['access_token']",
            },
            remove: ['http.host', 'protocol'],
          },
          filter: "!request.path.startsWith('/healthz')",
        },
      },
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'health', matches: [{ path: { pathPrefix: '/healthz' } }], policies: { directResponse: { status: 200, body: 'ok' } } },
                {
                  name: 'jwt',
                  matches: [{ path: { pathPrefix: '/jwt' } }],
                  policies: { jwtAuth: { issuer: ISSUER, audiences: ['logs'], jwks: { file: join(dir, 'jwks.json') }, mode: 'strict' } },
                  backends: backend,
                },
                { name: 'key', matches: [{ path: { pathPrefix: '/key' } }], policies: { apiKey: { keys: [{ key: API_KEY }], mode: 'strict' } }, backends: backend },
                { name: 'open', backends: backend },
              ],
            },
          ],
        },
      ],
    };
    gw = await startGateway(config);
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('duration_ms is a number; removed fields are absent', async () => {
    assert.equal(await call('/plain', 'p1'), 200);
    const line = await lineFor('p1');
    assert.equal(typeof line.duration_ms, 'number');
    assert.ok((line.duration_ms as number) >= 0);
    assert.equal(line['http.status'], 200);
    assert.equal(line['http.path'], '/plain');
    assert.equal('http.host' in line, false);
    assert.equal('protocol' in line, false);
  });

  it('a request id is generated, logged and forwarded upstream; distinct per request', async () => {
    const before = upstream.received.length;
    await call('/a', 'gen1');
    await call('/b', 'gen2');
    const [a, b] = upstream.received.slice(before).map((r) => r.headers['x-request-id'] as string);
    assert.ok(a && b, 'the upstream received an x-request-id');
    assert.notEqual(a, b);
    assert.equal((await lineFor('gen1'))['request.id'], a);
    assert.equal((await lineFor('gen2'))['request.id'], b);
  });

  it("a client's x-request-id is honoured: logged and forwarded as sent", async () => {
    await call('/c', 'own', { 'x-request-id': 'req-7f3a.9:01' });
    assert.equal(upstream.received.at(-1)!.headers['x-request-id'], 'req-7f3a.9:01');
    assert.equal((await lineFor('own'))['request.id'], 'req-7f3a.9:01');
  });

  it('a hostile x-request-id (too long, odd characters) is replaced, in the log and upstream', async () => {
    for (const [probe, hostile] of [
      ['long', 'x'.repeat(500)],
      ['odd', 'a b"c<script>'],
    ] as const) {
      await call('/d', probe, { 'x-request-id': hostile });
      const sent = upstream.received.at(-1)!.headers['x-request-id'] as string;
      assert.notEqual(sent, hostile);
      assert.ok(sent.length > 0 && sent.length <= 128);
      assert.equal((await lineFor(probe))['request.id'], sent);
    }
  });

  it('CR/LF in x-request-id cannot forge a log line', async () => {
    const forged = '{"msg":"request","forged":true}';
    const raw = `GET /e HTTP/1.1\r\nHost: x\r\nx-probe: crlf\r\nx-request-id: a\rb\n${forged}\r\nConnection: close\r\n\r\n`;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end(raw));
      let data = '';
      socket.on('data', (c: Buffer) => (data += c.toString()));
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.1 (200|400)/);
    await call('/after', 'after-crlf');
    await lineFor('after-crlf');
    for (const l of gw.logs) {
      const parsed = JSON.parse(l) as Line;
      assert.notEqual(parsed.forged, true, l);
      assert.ok(!String(parsed['request.id'] ?? '').includes('\n') && !String(parsed['request.id'] ?? '').includes('\r'), l);
    }
  });

  it('an absolute-form target (GET http://host/path) is logged and seen by policies as its path and query', async () => {
    // RFC 9112 section 3.2.2: a server must accept it; `originalUrl` (the SDK's "path and query") held the whole URL.
    const answer = await rawRequest(port, 'GET http://abs.example/abs/form?access_token=s3cr3t-abs&x=1 HTTP/1.1\nHost: other\nx-probe: abs-form\nConnection: close');
    assert.equal(answer.status, 200);
    assert.equal(upstream.received.at(-1)!.url, '/abs/form?access_token=s3cr3t-abs&x=1');
    assert.equal((await lineFor('abs-form'))['http.path'], '/abs/form?access_token=<redacted>&x=1');
  });

  it('fields.add: CEL values from headers and JWT claims', async () => {
    assert.equal(await call('/jwt/x', 'jwt', { authorization: `Bearer ${token}` }), 200);
    const line = await lineFor('jwt');
    assert.equal(line.user, 'alice');
    assert.equal(line.tenant, 'acme/GET');
    assert.equal(line['jwt.sub'], 'alice', 'the built-in jwt.sub field');
  });

  it('credentials are never logged: authorization, cookies, api keys are redacted in added fields', async () => {
    assert.equal(await call('/jwt/y', 'secret-jwt', { authorization: `Bearer ${token}` }), 200);
    // jwtAuth removed the header it read (ADR 0017), so the expression has nothing to show.
    assert.equal((await lineFor('secret-jwt')).auth, undefined);
    // A route without an auth policy forwards the header; the log still hides it.
    assert.equal(await call('/open', 'secret-open', { authorization: `Bearer ${token}`, cookie: 'session=s3cr3t-cookie', 'x-auth-token': 's3cr3t-tok' }), 200);
    const line = await lineFor('secret-open');
    assert.equal(line.auth, '<redacted>');
    const headers = line.headers as Record<string, unknown>;
    assert.equal(headers.authorization, '<redacted>');
    assert.equal(headers.cookie, '<redacted>');
    assert.equal(headers['x-auth-token'], '<redacted>');
    assert.equal(headers['x-probe'], 'secret-open', 'other headers are logged');
    assert.equal(await call('/key/z', 'secret-key', { 'x-api-key': API_KEY }), 200);
    const keyed = await lineFor('secret-key');
    assert.equal(keyed.key, '<redacted>');
    const all = gw.logs.join('\n');
    for (const secret of [token, API_KEY, 's3cr3t-cookie', 's3cr3t-tok']) assert.ok(!all.includes(secret), `${secret.slice(0, 12)}… appears in the log`);
  });

  it('credentials in the query string are redacted in added fields too, as in http.path (ADR 0017)', async () => {
    assert.equal(await call('/open/q?access_token=s3cr3t-qtok&page=2&api_key=s3cr3t-qkey', 'secret-query'), 200);
    const line = await lineFor('secret-query');
    assert.equal(line['http.path'], '/open/q?access_token=<redacted>&page=2&api_key=<redacted>');
    assert.equal(line.uri, '/open/q?access_token=<redacted>&page=2&api_key=<redacted>');
    assert.equal(line.qtoken, '<redacted>');
    const all = gw.logs.join('\n');
    for (const secret of ['s3cr3t-qtok', 's3cr3t-qkey']) assert.ok(!all.includes(secret), `${secret} appears in the log`);
  });

  it('filter: requests it rejects are not logged', async () => {
    assert.equal(await call('/healthz', 'health'), 200);
    await call('/f', 'after-health');
    await lineFor('after-health');
    assert.equal(requestLines().some((l) => l.probe === 'health'), false);
  });

  it('a bad CEL expression: the config error names the field; on reload it is logged with structured fields', async () => {
    const bad = structuredClone(config) as { config: { logging: { fields: { add: Record<string, string> } } } };
    bad.config.logging.fields.add.broken = 'request.headers[';
    const reloaded = await gw.gateway.reload(stringify(bad));
    assert.equal(reloaded, false);
    let line: Line | undefined;
    for (let i = 0; i < 100 && !line; i++) {
      line = gw.logs.map((l) => JSON.parse(l) as Line).findLast((l) => l.level === 'error');
      if (!line) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(line, gw.logs.slice(-3).join('\n'));
    assert.equal(line.msg, 'config reload failed; keeping the last good config');
    const errors = line.errors as { path: string; line: number; col: number; message: string; code: string }[];
    assert.equal(errors[0]!.path, 'config.logging.fields.add.broken');
    assert.match(errors[0]!.message, /invalid CEL expression/);
    assert.equal(typeof errors[0]!.line, 'number');
    assert.equal(await call('/still', 'still'), 200, 'the last good config keeps serving');
  });

  it("an added field cannot take the line's own names (time, level, msg) or a name text lines cannot carry", async () => {
    const bad = structuredClone(config) as { config: { logging: { fields: { add: Record<string, string> } } } };
    Object.assign(bad.config.logging.fields.add, { msg: "'hijack'", level: "'error'", time: "'0'", 'a b': "'x'", 'k=v': "'x'" });
    const before = gw.logs.length;
    assert.equal(await gw.gateway.reload(stringify(bad)), false);
    let line: Line | undefined;
    for (let i = 0; i < 100 && !line; i++) {
      line = gw.logs.slice(before).map((l) => JSON.parse(l) as Line).findLast((l) => l.level === 'error');
      if (!line) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(line, gw.logs.slice(-3).join('\n'));
    const paths = (line.errors as { path: string; message: string }[]).map((e) => e.path).sort();
    assert.deepEqual(paths, ['config.logging.fields.add.a b', 'config.logging.fields.add.k=v', 'config.logging.fields.add.level', 'config.logging.fields.add.msg', 'config.logging.fields.add.time']);
    assert.equal(await call('/still2', 'still2'), 200, 'the last good config keeps serving');
    assert.equal((await lineFor('still2')).msg, 'request');
  });
});

describe('access log rules in text format', () => {
  it('added fields are key=value, removed ones absent, the request id present', async () => {
    const port = await freePort();
    const upstream = await startUpstream();
    const gw = await startGateway({
      config: { logging: { format: 'text', fields: { add: { agent: 'request.headers["user-agent"]', n: 'size(request.path)' }, remove: ['http.host'] } } },
      binds: [{ port, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${upstream.port}` }] }] }] }],
    });
    try {
      const res = await request(`${gw.url(port)}/abc`, { headers: { 'user-agent': 'probe agent/1', 'x-request-id': 'text-1' } });
      await res.body.text();
      let line: string | undefined;
      for (let i = 0; i < 100 && !line; i++) {
        line = gw.logs.find((l) => l.includes(' request ') && l.includes('request.id=text-1'));
        if (!line) await new Promise((r) => setTimeout(r, 20));
      }
      assert.ok(line, gw.logs.join('\n'));
      assert.match(line, / agent="probe agent\/1"/);
      assert.match(line, / n=4( |$)/);
      assert.match(line, / duration=\d+(\.\d+)?ms/);
      assert.doesNotMatch(line, /http\.host=/);
    } finally {
      await gw.stop();
      await upstream.close();
    }
  });
});
