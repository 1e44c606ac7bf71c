// The `openapi` transport's calls as a real API sees them: an SDK v1 client through the gateway's `mcp` backend,
// one `openapi` target in front of a recording HTTP server on 127.0.0.1 (what reached it, and what came back).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import openapi from '../../plugins/mcp-transports/openapi/plugin.ts';
import { connectClient, mcpPreset, startMcpGateway } from './harness.ts';
import type { McpGateway } from './harness.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

/** A 1x1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

const DOC = {
  openapi: '3.1.0',
  info: { title: 'audit', version: '1' },
  servers: [{ url: 'http://169.254.169.254/api' }],
  paths: {
    '/echo/{id}': { get: { operationId: 'echo', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }] } },
    '/matrix/{id}': { get: { operationId: 'matrix', parameters: [{ name: 'id', in: 'path', required: true, style: 'matrix', explode: true, schema: { type: 'array', items: { type: 'string' } } }] } },
    '/label/{id}': { get: { operationId: 'label', parameters: [{ name: 'id', in: 'path', required: true, style: 'label', schema: { type: 'string' } }] } },
    '/upload': { put: { operationId: 'upload', requestBody: { required: true, content: { 'image/png': { schema: { type: 'string', contentMediaType: 'image/png' } } } } } },
    '/own': { get: { operationId: 'own', servers: [{ url: 'https://elsewhere.example/{v}', variables: { v: { default: 'other' } } }] } },
    '/image': { get: { operationId: 'image', responses: { '200': { description: 'a PNG', content: { 'image/png': {} } } } } },
    '/fail': { get: { operationId: 'fail' } },
    '/cookie': {
      get: {
        operationId: 'cookie',
        parameters: [
          { name: 'session', in: 'cookie', required: true, schema: { type: 'string' } },
          { name: 'X-Thing', in: 'header', schema: { type: 'string' } },
        ],
      },
    },
  },
};

describe('openapi target calls against a recording API', () => {
  let api: Server;
  let gw: McpGateway;
  const seen: Seen[] = [];
  before(async () => {
    api = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks) });
      if (req.url === '/api/image') {
        // As an API that negotiates does: only what the document says it serves.
        if (req.headers.accept !== 'image/png') return void res.writeHead(406).end();
        res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
      } else if (req.url === '/api/fail') {
        res.writeHead(503, { 'content-type': 'text/plain' }).end('down');
      } else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url }));
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    const file = join(testTempDir('switchyard-openapi-calls-'), 'api.json');
    writeFileSync(file, JSON.stringify(DOC));
    gw = await startMcpGateway({ targets: [{ name: 'api', openapi: { host: '127.0.0.1', port: (api.address() as AddressInfo).port, schema: { file } } }] }, { preset: fullPresetWith(...mcpPreset, openapi) });
  });
  after(async () => {
    await gw?.stop();
    await new Promise((r) => api?.close(r));
  });

  async function call(name: string, args: Record<string, unknown>) {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      return await client.callTool({ name, arguments: args });
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  }

  it('path parameters in `label` and `matrix` style reach the API as the document says (they were sent as `simple`); an operation\'s own servers give its base path', async () => {
    assert.deepEqual((await call('matrix', { path: { id: ['x', 'y'] } })).structuredContent, { url: '/api/matrix/;id=x;id=y' });
    assert.deepEqual((await call('label', { path: { id: 'x' } })).structuredContent, { url: '/api/label/.x' });
    // The document's server names another host: only its path is taken, calls go to the configured API.
    assert.deepEqual((await call('echo', { path: { id: 'a/../b?c#d' } })).structuredContent, { url: '/api/echo/a%2F..%2Fb%3Fc%23d' });
    // An operation's own servers give its base path (they were not read); the host is still the configured one.
    assert.deepEqual((await call('own', {})).structuredContent, { url: '/other/own' });
  });

  it('an image answer reaches the SDK client as MCP image content with its bytes; a 503 is an error result with its status', async () => {
    const image = await call('image', {});
    assert.deepEqual(image.content, [{ type: 'image', data: PNG.toString('base64'), mimeType: 'image/png' }]);
    const failed = await call('fail', {});
    assert.equal(failed.isError, true);
    assert.deepEqual(failed.content, [{ type: 'text', text: 'HTTP 503: down' }]);
  });

  it('cookie parameters reach the API as one Cookie header; a header value it cannot carry is refused by name before any request', async () => {
    const before = seen.length;
    const ok = await call('cookie', { cookie: { session: 'a b;evil=1' }, header: { 'X-Thing': 'caf\u00e9' } });
    assert.equal(ok.isError, undefined, JSON.stringify(ok));
    assert.equal(seen.at(-1)!.headers.cookie, 'session=a%20b%3Bevil%3D1');
    assert.equal(Buffer.from(seen.at(-1)!.headers['x-thing'] as string, 'latin1').toString('latin1'), 'caf\u00e9');
    const bad = await call('cookie', { cookie: { session: 's' }, header: { 'X-Thing': 'snow \u2603' } });
    assert.deepEqual(bad.content, [{ type: 'text', text: "Invalid arguments for tool 'cookie': header parameter `X-Thing` has characters a header cannot carry (controls, or past U+00FF)" }]);
    assert.equal(seen.length, before + 1);
  });

  it('an image request body is given as base64 and reaches the API as its bytes with its type (it was not offered)', async () => {
    const result = await call('upload', { body: PNG.toString('base64') });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    const sent = seen.at(-1)!;
    assert.equal(sent.method, 'PUT');
    assert.equal(sent.headers['content-type'], 'image/png');
    assert.deepEqual(sent.body, PNG);
  });
});

describe('an openapi target whose document, fetched by URL, names a relative server', () => {
  it('calls go under the server path relative to the document\'s URL (`v9` beside /specs/api.json is /specs/v9; it was /v9)', async () => {
    const urls: string[] = [];
    const api = createServer((req, res) => {
      urls.push(req.url!);
      if (req.url === '/specs/api.json') {
        const doc = { openapi: '3.1.0', info: { title: 'rel', version: '1' }, servers: [{ url: 'v9' }], paths: { '/ping': { get: { operationId: 'ping' } } } };
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url }));
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    const port = (api.address() as AddressInfo).port;
    const gw = await startMcpGateway({ targets: [{ name: 'rel', openapi: { host: '127.0.0.1', port, schema: { url: `http://127.0.0.1:${port}/specs/api.json` } } }] }, { preset: fullPresetWith(...mcpPreset, openapi) });
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const result = await client.callTool({ name: 'ping', arguments: {} });
      assert.deepEqual(result.structuredContent, { url: '/specs/v9/ping' });
    } finally {
      await transport.terminateSession();
      await client.close();
      await gw.stop();
      await new Promise((r) => api.close(r));
    }
  });
});

/**
 * A recording API answering `{}`, and a gateway whose targets (`targets(port, documentFile)`) front it with `doc`;
 * `use` calls tools through an SDK client and reads what the API received.
 */
async function withKeyedApi(
  doc: unknown,
  targets: (port: number, file: string) => Record<string, unknown>[],
  use: (sent: (tool: string, args?: Record<string, unknown>) => Promise<{ url: string; headers: IncomingHttpHeaders }>) => Promise<void>,
): Promise<void> {
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  const api = createServer((req, res) => {
    seen.push({ url: req.url!, headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  const file = join(testTempDir('switchyard-openapi-key-'), 'api.json');
  writeFileSync(file, JSON.stringify(doc));
  const gw = await startMcpGateway({ targets: targets((api.address() as AddressInfo).port, file) }, { preset: fullPresetWith(...mcpPreset, openapi) });
  const { client, transport } = await connectClient(gw.mcpUrl);
  try {
    await use(async (tool, args = {}) => {
      await client.callTool({ name: tool, arguments: args });
      return seen.at(-1)!;
    });
  } finally {
    await transport.terminateSession();
    await client.close();
    await gw.stop();
    await new Promise((r) => api.close(r));
  }
}

describe('an openapi target whose API takes its key in a query parameter or a custom header (ADR 0175)', () => {
  it('`backendAuth.key.location` puts the key where the API reads it, on every tool call, replacing a model-supplied one', async () => {
    const doc = { openapi: '3.1.0', info: { title: 'k', version: '1' }, paths: { '/find': { get: { operationId: 'find', parameters: [{ name: 'q', in: 'query', schema: { type: 'string' } }] } } } };
    const key = (location: Record<string, unknown>) => ({ backendAuth: { key: { value: 'sk-query-5e1', location } } });
    await withKeyedApi(
      doc,
      (port, file) => [
        { name: 'q', openapi: { host: '127.0.0.1', port, schema: { file } }, policies: key({ queryParameter: { name: 'api_key' } }) },
        { name: 'h', openapi: { host: '127.0.0.1', port, schema: { file } }, policies: key({ header: { name: 'X-API-Key' } }) },
      ],
      async (sent) => {
        assert.equal((await sent('q_find', { query: { q: 'a b', api_key: 'from-the-model' } })).url, '/find?q=a%20b&api_key=sk-query-5e1');
        const got = await sent('h_find', { query: { q: 'x' } });
        assert.equal(got.headers['x-api-key'], 'sk-query-5e1');
        assert.equal(got.headers.authorization, undefined);
      },
    );
  });
});

describe('an openapi target whose document says where its credential goes (securitySchemes, ADR 0175)', () => {
  it('a `backendAuth.key` without a location goes where the operation\'s `security` puts it, when that is unambiguous', async () => {
    const op = (operationId: string, security?: unknown) => ({ get: { operationId, ...(security === undefined ? {} : { security }) } });
    const doc = {
      openapi: '3.0.3',
      info: { title: 's', version: '1' },
      security: [{ header: [] }],
      components: {
        securitySchemes: {
          header: { type: 'apiKey', in: 'header', name: 'X-Token' },
          query: { type: 'apiKey', in: 'query', name: 'key' },
          cookie: { type: 'apiKey', in: 'cookie', name: 'sid' },
          basic: { type: 'http', scheme: 'basic' },
          bearer: { type: 'http', scheme: 'bearer' },
          // A scheme given by `$ref` (to another scheme, or to a scheme kept elsewhere in the document) is followed.
          byRef: { $ref: '#/components/securitySchemes/query' },
          byTwoRefs: { $ref: '#/components/securitySchemes/byRef' },
          elsewhere: { $ref: '#/x-schemes/cookieKey' },
        },
      },
      'x-schemes': { cookieKey: { type: 'apiKey', in: 'cookie', name: 'ck' } },
      paths: {
        '/inherited': op('inherited'),
        '/query': op('query', [{ query: [] }, {}]),
        '/cookie': op('cookie', [{ cookie: [] }]),
        '/basic': op('basic', [{ basic: [] }]),
        '/either': op('either', [{ query: [] }, { header: [] }]),
        '/both': op('both', [{ query: [], header: [] }]),
        '/bearer': op('bearer', [{ bearer: [] }]),
        '/ref': op('ref', [{ byRef: [] }]),
        '/tworefs': op('tworefs', [{ byTwoRefs: [] }]),
        '/elsewhere': op('elsewhere', [{ elsewhere: [] }]),
        '/refandquery': op('refandquery', [{ byRef: [] }, { query: [] }]),
      },
    };
    const K = 'sk-scheme-81b';
    await withKeyedApi(
      doc,
      (port, file) => [
        { name: 'a', openapi: { host: '127.0.0.1', port, schema: { file } }, policies: { backendAuth: { key: K } } },
        { name: 'b', openapi: { host: '127.0.0.1', port, schema: { file } }, policies: { backendAuth: { key: 'dXNlcjpwdw==' } } },
        { name: 'c', openapi: { host: '127.0.0.1', port, schema: { file } }, policies: { backendAuth: { key: { value: K, location: { header: { name: 'x-mine' } } } } } },
      ],
      async (sent) => {
        let got = await sent('a_inherited');
        assert.equal(got.headers['x-token'], K, 'the document\'s own security');
        assert.equal(got.headers.authorization, undefined);
        assert.equal((await sent('a_query')).url, `/query?key=${K}`, 'anonymous access is another alternative, not a conflict');
        assert.equal((await sent('a_cookie')).headers.cookie, `sid=${K}`);
        assert.equal((await sent('b_basic')).headers.authorization, 'Basic dXNlcjpwdw==');
        assert.equal((await sent('a_bearer')).headers.authorization, `Bearer ${K}`);
        assert.equal((await sent('a_ref')).url, `/ref?key=${K}`, 'a `$ref` scheme is followed');
        assert.equal((await sent('a_tworefs')).url, `/tworefs?key=${K}`);
        assert.equal((await sent('a_elsewhere')).headers.cookie, `ck=${K}`);
        assert.equal((await sent('a_refandquery')).url, `/refandquery?key=${K}`, 'a `$ref` and its target agree');
        // Ambiguous: two places, or two schemes at once: Authorization, as without a document.
        got = await sent('a_either');
        assert.deepEqual([got.url, got.headers.authorization, got.headers['x-token']], ['/either', `Bearer ${K}`, undefined]);
        assert.equal((await sent('a_both')).headers.authorization, `Bearer ${K}`);
        // The operator's own location wins over the document.
        got = await sent('c_query');
        assert.deepEqual([got.url, got.headers['x-mine']], ['/query', K]);
      },
    );
  });
});

describe('tool names of several openapi targets fit the 64 characters LLM APIs take once prefixed (ADR 0182)', () => {
  it('a prefixed name past 64 is shortened with a hash of its name: unique, the same every time, and callable (before any list too)', async () => {
    const long = `list${'_pets'.repeat(11)}_by_owner`; // 64 characters, as ADR 0163 allows an operationId
    const ids = [`${long.slice(0, 60)}_one`, `${long.slice(0, 60)}_two`, 'short'];
    const doc = { openapi: '3.1.0', info: { title: 'n', version: '1' }, paths: Object.fromEntries(ids.map((id, i) => [`/op${i}`, { get: { operationId: id } }])) };
    // What the ADR says: the first 55 characters of `<target>_<name>`, `-`, 8 hex digits of the name's SHA-256.
    const fitted = (target: string, id: string) => `${`${target}_${id}`.slice(0, 55)}-${createHash('sha256').update(id).digest('hex').slice(0, 8)}`;
    const urls: string[] = [];
    const api = createServer((req, res) => {
      urls.push(req.url!);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url }));
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    const port = (api.address() as AddressInfo).port;
    const file = join(testTempDir('switchyard-openapi-names-'), 'api.json');
    writeFileSync(file, JSON.stringify(doc));
    const gw = await startMcpGateway(
      { targets: ['petstore', 'inventory'].map((name) => ({ name, openapi: { host: '127.0.0.1', port, schema: { file } } })) },
      { preset: fullPresetWith(...mcpPreset, openapi) },
    );
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      // No list yet in this gateway: the shortened name still reaches its operation.
      assert.deepEqual((await client.callTool({ name: fitted('petstore', ids[1]!), arguments: {} })).structuredContent, { url: '/op1' });
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.deepEqual(names.sort(), [...['inventory', 'petstore'].flatMap((t) => [fitted(t, ids[0]!), fitted(t, ids[1]!), `${t}_short`])].sort());
      assert.ok(names.every((n) => /^[A-Za-z0-9_-]{1,64}$/.test(n)), names.join(','));
      assert.equal(new Set(names).size, names.length);
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), names, 'the same names every time');
      assert.deepEqual((await client.callTool({ name: fitted('inventory', ids[0]!), arguments: {} })).structuredContent, { url: '/op0' });
      assert.deepEqual((await client.callTool({ name: 'petstore_short', arguments: {} })).structuredContent, { url: '/op2' });
      assert.ok(!gw.logs.some((l) => l.includes('names LLM APIs refuse')), 'no warning: every name fits');
    } finally {
      await transport.terminateSession();
      await client.close();
      await gw.stop();
      await new Promise((r) => api.close(r));
    }
  });
});
