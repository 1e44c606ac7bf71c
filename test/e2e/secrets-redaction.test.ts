// Issue 14 item 7 and issue 12: secrets planted in every place a config can hold one never come back out of
// /config_dump, `--validate-only` messages and code frames, or the logs (a failed reload included), while the
// values that are not secret still show.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin/switchyard.js');

const tag = randomBytes(4).toString('hex');
const planted = (n: number): string => `Planted${String(n).padStart(2, '0')}x${tag}`;

/** The 19 secrets, by where they are planted. */
const S = {
  reqAuthorization: `Bearer ${planted(1)}`,
  reqApiKey: planted(2),
  reqProxyAuthorization: `Basic ${planted(3)}`,
  reqCookie: `session=${planted(4)}`,
  resSetCookie: `sid=${planted(5)}; HttpOnly`,
  resToken: planted(6),
  stdioEnv: planted(7),
  celLiteral: planted(8),
  transformationLiteral: planted(9),
  envTenant: planted(10),
  envInCel: planted(11),
  backendKey: planted(12),
  apiKey: `sk-${planted(13)}`,
  sessionKey: randomBytes(32).toString('hex'),
  awsSecret: planted(15),
  awsSessionToken: planted(16),
  azureSecret: planted(17),
  matchHeader: `Bearer ${planted(18)}`,
  envStdioArg: planted(19),
};
const SECRETS = Object.entries(S);
/** The parts a leak would show, without prefixes such as `Bearer ` that are not secret on their own. */
const NEEDLES = SECRETS.map(([name, v]) => [name, name === 'sessionKey' ? v : /Planted\d\dx[0-9a-f]+/.exec(v)![0]] as const);

const ENV = { ...process.env, TENANT_ID: S.envTenant, TEAM_SECRET: S.envInCel, CLI_TOKEN: S.envStdioArg, STATUS_CODE: planted(20) };

function configText(port: number, broken: boolean): string {
  const typo = (line: string): string => (broken ? `${line}\n` : '');
  return `config:
  adminAddr: 127.0.0.1:0
  statsAddr: 127.0.0.1:0
  readinessAddr: 127.0.0.1:0
  logging: { level: debug }
  session:
    key: ${broken ? `"not-hex-${S.sessionKey}"` : S.sessionKey}
binds:
  - port: ${port}
    listeners:
      - routes:
          - name: visible-route
            matches:
              - path: { pathPrefix: /public }
                headers:
                  - name: Authorization
                    value: { exact: "${S.matchHeader}" }
                  - name: x-plain-match
                    value: { exact: visible-match-value }
            policies:
              requestHeaderModifier:
                set:
                  authorization: "${S.reqAuthorization}"
                  x-api-key: ${S.reqApiKey}
                  cookie: "${S.reqCookie}"
                  x-tenant: "\${TENANT_ID}"
                  x-plain: visible-header-value
                add:
                  Proxy-Authorization: "${S.reqProxyAuthorization}"
${typo('                sett: {}')}
              responseHeaderModifier:
                set:
                  set-cookie: "${S.resSetCookie}"
                  x-upstream-token: ${S.resToken}
              authorization:
                ${broken ? 'rulez: []\n                ' : ''}rules:
                  - 'request.headers["x-api-key"] == "${S.celLiteral}"'
                  - 'request.path.startsWith("/visible-cel")'
                  - 'request.headers["x-team"] == "\${TEAM_SECRET}"'
              transformations:
                request:
                  set:
                    x-internal-secret: '"${S.transformationLiteral}"'
                    x-plain-cel: '"visible-cel-value"'
              apiKey:
                keys:
                  - key: ${S.apiKey}
                    metadata: { team: visible-team }
${typo('                    metadta: {}')}
              directResponse: { status: ${broken ? '"${STATUS_CODE}"' : 200}, body: visible-body }
          - name: tools
            backends:
              - mcp:
                  targets:
                    - name: local
                      stdio:
                        cmd: visible-command
                        args: [--token, "\${CLI_TOKEN}", --visible-flag]
                        env:
                          API_TOKEN: ${S.stdioEnv}
${typo('                        envv: {}')}
backends:
  - name: keyed
    host: 127.0.0.1:9
    policies:
      backendAuth:
        key: ${S.backendKey}
  - name: signed
    host: 127.0.0.1:9
    policies:
      backendAuth:
        aws:
          accessKeyId: AKIDVISIBLEEXAMPLE
          secretAccessKey: ${S.awsSecret}
          sessionToken: ${S.awsSessionToken}
          region: us-east-1
${typo('          regoin: us-east-1')}
  - name: entra
    host: 127.0.0.1:9
    policies:
      backendAuth:
        azure:
          explicitConfig:
            clientSecret:
              tenant_id: visible-tenant
              client_id: visible-client
              client_secret: ${S.azureSecret}
`;
}

function leaks(text: string): string[] {
  return NEEDLES.filter(([, needle]) => text.includes(needle)).map(([name]) => name);
}

describe('secrets stay secret', () => {
  let gw: RunningGateway;
  let port: number;
  let dump: string;
  before(async () => {
    port = await freePort();
    gw = await startGateway(configText(port, false), { env: ENV });
    const res = await request(`${gw.adminUrl}/config_dump`);
    assert.equal(res.statusCode, 200);
    dump = await res.body.text();
  });
  after(() => gw.stop());

  it('/config_dump shows none of the 19 planted secrets', () => {
    assert.deepEqual(leaks(dump), []);
    assert.equal(SECRETS.length, 19);
  });

  it('/config_dump still shows what is not secret, and marks what it hid', () => {
    for (const visible of [
      'visible-route',
      'visible-header-value',
      'visible-match-value',
      'visible-cel-value',
      '/visible-cel',
      'visible-team',
      'visible-body',
      'visible-tenant',
      'visible-client',
      'visible-command',
      '--visible-flag',
      'request.headers[\\"x-api-key\\"]',
    ]) {
      assert.ok(dump.includes(visible), `${visible} is shown`);
    }
    const config = (JSON.parse(dump) as { config: { binds: { listeners: { routes: { policies: Record<string, Record<string, Record<string, string>>> }[] }[] }[] } }).config;
    const policies = config.binds[0]!.listeners[0]!.routes[0]!.policies;
    assert.equal(policies.requestHeaderModifier!.set!.authorization, '<redacted>');
    // A value from the environment shows where it came from, not what it is.
    assert.equal(policies.requestHeaderModifier!.set!['x-tenant'], '${TENANT_ID}');
  });

  it('no log line holds a secret: startup, requests, and a failed reload that echoes values', async () => {
    const res = await request(`${gw.url(port)}/public/visible-cel?access_token=${planted(21)}`, { headers: { 'x-api-key': 'nope', authorization: S.matchHeader } });
    await res.body.text();
    const reloaded = await gw.gateway.reload(configText(port, true));
    assert.equal(reloaded, false);
    await new Promise((r) => setImmediate(r));
    const text = gw.logs.join('\n');
    assert.match(text, /config reload failed/);
    assert.match(text, /INFO +request /, 'the access log line was written');
    assert.deepEqual(leaks(text), []);
    assert.ok(!text.includes(planted(20)), 'the expanded ${STATUS_CODE} is not echoed');
    assert.ok(!text.includes(planted(21)), 'a credential in the query string is not logged');
  });
});

describe('a plugin log line that would quote a secret', () => {
  it('the stdio child printing its env token to stderr is logged with the token replaced', async () => {
    const port = await freePort();
    const token = planted(22);
    const script = 'process.stderr.write("token is " + process.env.API_TOKEN + "\\n"); setTimeout(() => process.exit(1), 200)';
    const gw = await startGateway({
      binds: [{ port, listeners: [{ routes: [{ backends: [{ mcp: { targets: [{ name: 'leaky', stdio: { cmd: process.execPath, args: ['-e', script], env: { API_TOKEN: token } } }] } }] }] }] }],
    });
    try {
      const res = await request(`${gw.url(port)}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
      });
      await res.body.text();
      const until = Date.now() + 5000;
      while (!gw.logs.some((l) => l.includes('token is')) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      const line = gw.logs.find((l) => l.includes('token is'));
      assert.ok(line, 'the stderr line of the child was logged');
      assert.match(line, /token is <redacted>/);
      assert.ok(!gw.logs.join('\n').includes(token));
    } finally {
      await gw.stop();
    }
  });
});

describe('a value from ${VAR} copied by a YAML merge key is hidden too', () => {
  it('/config_dump shows the reference in both places', async () => {
    const port = await freePort();
    const text = `config: { adminAddr: 127.0.0.1:0, statsAddr: 127.0.0.1:0, readinessAddr: 127.0.0.1:0 }
binds:
  - port: ${port}
    listeners:
      - routes:
          - name: anchored
            policies:
              requestHeaderModifier:
                set: &common
                  x-tenant: \${TENANT_ID}
          - name: merged
            policies:
              requestHeaderModifier:
                set:
                  <<: *common
                  x-extra: visible-extra
`;
    const gw = await startGateway(text, { env: ENV });
    try {
      const dump = await (await request(`${gw.adminUrl}/config_dump`)).body.text();
      assert.deepEqual(leaks(dump), []);
      assert.equal(dump.split('${TENANT_ID}').length - 1, 2);
      assert.ok(dump.includes('visible-extra'));
    } finally {
      await gw.stop();
    }
  });
});

describe('--validate-only hides secrets in messages and code frames', () => {
  let dir: string;
  before(() => {
    dir = testTempDir('switchyard-secrets-');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  function validate(text: string): Promise<{ code: number | null; stderr: string; stdout: string }> {
    const file = join(dir, 'config.yaml');
    writeFileSync(file, text);
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, '--validate-only', '-f', file], { cwd: ROOT, env: { ...ENV, NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  it('the valid config validates', async () => {
    const r = await validate(configText(await freePort(), false));
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(leaks(r.stdout + r.stderr), []);
  });

  it('an invalid config: every error positioned, frames shown redacted, no secret anywhere', async () => {
    const r = await validate(configText(await freePort(), true));
    assert.equal(r.code, 1);
    // The frames cover the secret lines...
    assert.match(r.stderr, /unknown key `sett`/);
    assert.match(r.stderr, /\| +Proxy-Authorization: <redacted>/);
    assert.match(r.stderr, /\| +API_TOKEN: <redacted>/);
    assert.match(r.stderr, /\| +sessionToken: <redacted>/);
    assert.match(r.stderr, /\| +- key: <redacted>/);
    assert.match(r.stderr, /\| +- 'request\.headers\["x-api-key"\] == "<redacted>"'/);
    assert.match(r.stderr, /\| +metadata: \{ team: visible-team \}/, 'lines without secrets are shown as written');
    assert.match(r.stderr, /\(at config\.session\.key\)/);
    assert.match(r.stderr, /\(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.directResponse\.status\)/);
    // ...and neither they nor the messages show a secret or an expanded variable.
    assert.deepEqual(leaks(r.stderr), []);
    assert.ok(!r.stderr.includes(planted(20)), 'the expanded ${STATUS_CODE} is not echoed');
  });

  it('a YAML syntax error: the frame hides values of secret-named keys', async () => {
    const r = await validate(`binds:\n  - port: 1\n    x-api-key: ${S.reqApiKey}\n    bad: [unclosed\n    authorization: "${S.reqAuthorization}"\n`);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /YAML syntax error/);
    assert.match(r.stderr, /x-api-key: <redacted>/);
    assert.deepEqual(leaks(r.stderr), []);
  });

  it('a misspelled key: no schema says its value is secret, so the frame hides what is named like a credential', async () => {
    const r = await validate(`binds:
  - port: ${await freePort()}
    listeners:
      - routes:
          - policies:
              apiKye: { keys: [{ key: "${S.apiKey}", metadata: { team: visible-team } }] }
              backendAuth:
                keyy: ${S.backendKey}
            backends:
              - host: 127.0.0.1:1
                policies:
                  backendAuht: { key: ${S.awsSecret}, region: visible-region }
`);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /did you mean `apiKey`/);
    // A key named like a credential hides all it holds; another hides only what is named so.
    assert.match(r.stderr, /\| +apiKye: \{ keys: \[\{ key: <redacted>, metadata: \{ team: <redacted> \} \}\] \}/);
    assert.match(r.stderr, /\| +keyy: <redacted>/);
    assert.match(r.stderr, /\| +backendAuht: \{ key: <redacted>, region: visible-region \}/);
    assert.deepEqual(leaks(r.stderr), []);
  });
});

describe('credentials in the query of a URL the config names', () => {
  // MCP servers and JWKS endpoints are often given a key in the URL; the access log already hides such parameters.
  const jwksToken = `jwks-${planted(30)}`;
  const mcpKey = `mcp-${planted(31)}`;
  let gw: RunningGateway;
  before(async () => {
    const port = await freePort();
    gw = await startGateway({
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'jwt', matches: [{ path: { pathPrefix: '/jwt' } }], policies: { jwtAuth: { issuer: 'x', jwks: { url: `http://127.0.0.1:9/jwks?tenant=visible-tenant&access_token=${jwksToken}` } }, directResponse: { status: 200 } } },
                { name: 'mcp', matches: [{ path: { pathPrefix: '/mcp' } }], backends: [{ mcp: { targets: [{ name: 'remote', mcp: { host: `http://127.0.0.1:9/mcp?api_key=${mcpKey}&region=visible-region` } }] } }] },
              ],
            },
          ],
        },
      ],
    });
  });
  after(() => gw.stop());

  it('/config_dump and the admin UI show the URLs with those parameters redacted', async () => {
    for (const path of ['/config_dump', '/ui/api/config']) {
      const dump = await (await request(`${gw.adminUrl}${path}`)).body.text();
      assert.ok(!dump.includes(jwksToken) && !dump.includes(mcpKey), `${path} shows a credential: ${dump}`);
      assert.ok(dump.includes('http://127.0.0.1:9/jwks?tenant=visible-tenant&access_token=<redacted>'), dump);
      assert.ok(dump.includes('http://127.0.0.1:9/mcp?api_key=<redacted>&region=visible-region'), dump);
    }
  });
});
