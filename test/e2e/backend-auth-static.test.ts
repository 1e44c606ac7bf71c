// backendAuth `key` and `passthrough` (SPEC §2.7, DECIDED 6 and 8): the Authorization header as a real upstream
// receives it, plus the policy's placement, validation, redaction and failure shape.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { assertSecretHidden, config, gatewayOptions, twoAttempts } from './backend-auth-support.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const SECRET = 'sk-static-secret-7f3a';

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const res = await request(url, { headers });
  return { status: res.statusCode, body: await res.body.text() };
}

describe('backendAuth: key and passthrough', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let keyFile: string;
  const received = (): Record<string, string | string[] | undefined> => upstream.received.at(-1)!.headers;

  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    const dir = testTempDir('switchyard-backend-auth-');
    keyFile = join(dir, 'upstream.key');
    writeFileSync(keyFile, `${SECRET}-file\n`);
    gw = await startGateway(
      config(port, upstream.port, [
        { name: 'bare', policies: { backendAuth: { key: SECRET } } },
        { name: 'verbatim', policies: { backendAuth: { key: 'Basic dXNlcjpwYXNzd29yZA==' } } },
        { name: 'bearer-written', policies: { backendAuth: { key: `Bearer ${SECRET}` } } },
        // Relative to the gateway's working directory (SPEC 5.1).
        { name: 'file', policies: { backendAuth: { key: { file: relative(process.cwd(), keyFile) } } } },
        { name: 'passthrough', policies: { backendAuth: { passthrough: {} } } },
        { name: 'stripped', policies: { testAcceptAndStrip: {} } },
        { name: 'stripped-passthrough', policies: { testAcceptAndStrip: {}, backendAuth: { passthrough: {} } } },
        { name: 'stripped-key', policies: { testAcceptAndStrip: {}, backendAuth: { key: SECRET } } },
        { name: 'backend-level', backendPolicies: { backendAuth: { key: 'backend-key' } } },
        { name: 'both-levels', policies: { backendAuth: { key: 'route-key' } }, backendPolicies: { backendAuth: { key: 'backend-key' } } },
        { name: 'with-retry', policies: { backendAuth: { key: SECRET }, retry: { attempts: 1, codes: [503] } } },
      ]),
      gatewayOptions,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('a bare key is sent as `Bearer <key>`, replacing what the client sent', async () => {
    const res = await get(`${gw.url(port)}/bare`, { authorization: 'Bearer client-token' });
    assert.equal(res.status, 200);
    assert.equal(received().authorization, `Bearer ${SECRET}`);
  });

  it('a key containing a space is sent verbatim (Basic …, Bearer …): never `Bearer Bearer`', async () => {
    await get(`${gw.url(port)}/verbatim`);
    assert.equal(received().authorization, 'Basic dXNlcjpwYXNzd29yZA==');
    await get(`${gw.url(port)}/bearer-written`);
    assert.equal(received().authorization, `Bearer ${SECRET}`);
  });

  it('a key file (relative to the working directory) is read at load, trailing newline dropped', async () => {
    await get(`${gw.url(port)}/file`);
    assert.equal(received().authorization, `Bearer ${SECRET}-file`);
  });

  it('the key file is read again on reload', async () => {
    writeFileSync(keyFile, 'Basic cm90YXRlZDprZXk=\n');
    await get(`${gw.url(port)}/file`);
    assert.equal(received().authorization, `Bearer ${SECRET}-file`, 'not re-read per request');
    // A reload happens when the config file changes (an unchanged file is not recompiled).
    appendFileSync(gw.file, '\n# rotated the upstream key\n');
    assert.equal(await gw.gateway.reload(), true);
    await get(`${gw.url(port)}/file`);
    assert.equal(received().authorization, 'Basic cm90YXRlZDprZXk=');
  });

  it('passthrough without a gateway auth policy forwards the client header untouched', async () => {
    await get(`${gw.url(port)}/passthrough`, { authorization: 'Bearer client-jwt' });
    assert.equal(received().authorization, 'Bearer client-jwt');
    await get(`${gw.url(port)}/passthrough`);
    assert.equal(received().authorization, undefined, 'nothing to pass: nothing is invented');
  });

  it('an auth policy strips the accepted credential (DECIDED 6) ...', async () => {
    await get(`${gw.url(port)}/stripped`, { authorization: 'Bearer client-jwt' });
    assert.equal(received().authorization, undefined);
  });

  it('... and passthrough restores the original header exactly', async () => {
    await get(`${gw.url(port)}/stripped-passthrough`, { authorization: 'Bearer eyJhbGciOi.client.jwt' });
    assert.equal(received().authorization, 'Bearer eyJhbGciOi.client.jwt');
  });

  it('after stripping, key replaces the credential', async () => {
    await get(`${gw.url(port)}/stripped-key`, { authorization: 'Bearer client-jwt' });
    assert.equal(received().authorization, `Bearer ${SECRET}`);
  });

  it('works as a backend policy; the backend policy replaces the route one', async () => {
    await get(`${gw.url(port)}/backend-level`);
    assert.equal(received().authorization, 'Bearer backend-key');
    await get(`${gw.url(port)}/both-levels`);
    assert.equal(received().authorization, 'Bearer backend-key');
  });

  it('every upstream attempt carries the credential (retries included)', async () => {
    for (const r of await twoAttempts({ backendAuth: { key: SECRET } })) assert.equal(r.headers.authorization, `Bearer ${SECRET}`);
  });

  it('/config_dump and the logs never show the key', async () => {
    await assertSecretHidden(gw, SECRET, /"backendAuth"/);
  });
});

describe('backendAuth: configuration errors', () => {
  let upstream: TestUpstream;
  before(async () => {
    upstream = await startUpstream();
  });
  after(async () => {
    await upstream.close();
  });

  const loadError = async (policies: Record<string, unknown>): Promise<string> => {
    const port = await freePort();
    try {
      const g = await startGateway(config(port, upstream.port, [{ name: 'r', policies }]), gatewayOptions);
      await g.stop();
    } catch (err) {
      return (err as Error).message;
    }
    return assert.fail('the config loaded');
  };

  it('exactly one variant', async () => {
    assert.match(await loadError({ backendAuth: {} }), /exactly one of `passthrough`, `key`/);
    assert.match(await loadError({ backendAuth: { key: 'a', passthrough: {} } }), /only one of|exactly one/);
  });

  it('an unknown variant gets a did-you-mean', async () => {
    assert.match(await loadError({ backendAuth: { keys: 'a' } }), /unknown backendAuth variant `keys`; did you mean `key`\?/);
  });

  it('a missing key file names the file (and the key never appears)', async () => {
    const msg = await loadError({ backendAuth: { key: { file: 'no/such/key.txt' } } });
    assert.match(msg, /cannot read the key file `no\/such\/key\.txt`.*no such file/);
  });

  it('a key with a line break is refused without echoing it', async () => {
    const msg = await loadError({ backendAuth: { key: 'sk-leak\r\nx-evil: 1' } });
    const [first] = msg.split('\n');
    assert.match(first!, /the key contains a line break/);
    // The message names the problem only (the code frame below it quotes the user's own file).
    assert.doesNotMatch(first!.replace(/^.*?: /, ''), /sk-leak/);
  });

  it('key.location (ADR 0175): exactly one location, with a name that can be one', async () => {
    assert.match(await loadError({ backendAuth: { key: { value: 'a', location: { header: { name: 'x' }, cookie: { name: 'y' } } } } }), /more than 1 propert/);
    assert.match(await loadError({ backendAuth: { key: { value: 'a', location: { header: { name: 'bad name' } } } } }), /header name `bad name` is not a valid HTTP header name/);
    assert.match(await loadError({ backendAuth: { key: { value: 'a', location: { header: { name: 'host' } } } } }), /cannot be the `host` header/);
    assert.match(await loadError({ backendAuth: { key: { value: 'a', location: { cookie: { name: 'a;b' } } } } }), /cookie name `a;b` is not a valid cookie name/);
  });

  it('key.location: a value a cookie cannot carry is refused without echoing it', async () => {
    const msg = await loadError({ backendAuth: { key: { value: 'sk-semi;colon', location: { cookie: { name: 's' } } } } });
    assert.match(msg, /the key cannot be a cookie value/);
    assert.doesNotMatch(msg.split('\n')[0]!.replace(/^.*?: /, ''), /sk-semi/);
  });

  it('passthrough takes no settings', async () => {
    assert.match(await loadError({ backendAuth: { passthrough: { header: 'x' } } }), /unknown key `header`/);
  });
});
