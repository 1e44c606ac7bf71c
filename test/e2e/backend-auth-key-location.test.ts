// backendAuth `key` with a `location` (the reference's `key: {value, location}`, ADR 0175): the credential in
// another header, a query parameter or a cookie, as a real upstream receives it; never in a dump, a log or a trace.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { assertSecretHidden, config, gatewayOptions, twoAttempts } from './backend-auth-support.ts';

const SECRET = 'sk-located-9d41e';

describe('backendAuth.key location: header, queryParameter, cookie', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  const last = (): { url: string; headers: Record<string, string | string[] | undefined> } => upstream.received.at(-1)!;

  /** The gateway's status for `path` (the body read and dropped). */
  const get = (path: string, headers: Record<string, string> = {}): Promise<number> =>
    request(`${gw.url(port)}${path}`, { headers }).then(async (res) => (await res.body.text(), res.statusCode));

  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    const dir = testTempDir('switchyard-key-location-');
    const keyFile = join(dir, 'api.key');
    writeFileSync(keyFile, `${SECRET}-file\n`);
    gw = await startGateway(
      config(port, upstream.port, [
        { name: 'value', policies: { backendAuth: { key: { value: SECRET } } } },
        { name: 'header', policies: { backendAuth: { key: { value: SECRET, location: { header: { name: 'X-API-Key' } } } } } },
        { name: 'prefixed', policies: { backendAuth: { key: { value: SECRET, location: { header: { name: 'authorization', prefix: 'Token ' } } } } } },
        { name: 'query', policies: { backendAuth: { key: { value: SECRET, location: { queryParameter: { name: 'api_key' } } } } } },
        { name: 'cookie', policies: { backendAuth: { key: { value: SECRET, location: { cookie: { name: 'session' } } } } } },
        { name: 'file', policies: { backendAuth: { key: { value: { file: relative(process.cwd(), keyFile) }, location: { header: { name: 'x-api-key' } } } } } },
      ]),
      gatewayOptions,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('`{value}` alone is the plain key: `Authorization: Bearer <value>` (DECIDED 8)', async () => {
    assert.equal(await get('/value'), 200);
    assert.equal(last().headers.authorization, `Bearer ${SECRET}`);
  });

  it('a header location sends the value as written under that name, replacing the client\'s', async () => {
    assert.equal(await get('/header', { 'x-api-key': 'client-supplied', authorization: 'Bearer client' }), 200);
    assert.equal(last().headers['x-api-key'], SECRET);
    assert.equal(last().headers.authorization, 'Bearer client', 'Authorization is not the key\'s any more');
    await get('/prefixed');
    assert.equal(last().headers.authorization, `Token ${SECRET}`);
  });

  it('a queryParameter location adds the key to the query, replacing a parameter of that name', async () => {
    assert.equal(await get('/query/items?limit=5&api_key=attacker&q=a%20b'), 200);
    const url = new URL(last().url, 'http://x');
    assert.equal(url.pathname, '/query/items');
    assert.deepEqual(url.searchParams.getAll('api_key'), [SECRET]);
    assert.equal(url.searchParams.get('limit'), '5');
    assert.equal(url.searchParams.get('q'), 'a b');
    assert.equal(last().headers.authorization, undefined);
    await get('/query');
    assert.equal(new URL(last().url, 'http://x').searchParams.get('api_key'), SECRET);
  });

  it('a cookie location adds the cookie beside the client\'s, replacing one of that name', async () => {
    await get('/cookie', { cookie: 'theme=dark; session=forged; lang=en' });
    assert.equal(last().headers.cookie, `theme=dark; lang=en; session=${SECRET}`);
    await get('/cookie');
    assert.equal(last().headers.cookie, `session=${SECRET}`);
  });

  it('the value may come from a file', async () => {
    await get('/file');
    assert.equal(last().headers['x-api-key'], `${SECRET}-file`);
  });

  it('each retry carries the key once', async () => {
    for (const r of await twoAttempts({ backendAuth: { key: { value: SECRET, location: { queryParameter: { name: 'key' } } } } }, '/r?x=1')) {
      assert.deepEqual(new URL(r.url, 'http://x').searchParams.getAll('key'), [SECRET]);
    }
  });

  it('/config_dump and the logs never show the key', async () => {
    await assertSecretHidden(gw, SECRET, /queryParameter/);
  });
});
