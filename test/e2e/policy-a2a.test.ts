// The `a2a` policy against a real A2A peer: the @a2a-js/sdk echo agent (A2A v1.0, JSON-RPC and HTTP+JSON, with its
// v0.3 compat layer) behind the gateway, driven by the same SDK's client (REAL-PEERS.md §3).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Readable } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import { request } from 'undici';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import a2aPlugin from '../../plugins/policies/a2a/plugin.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { echoText, EXTENDED_SKILL, factory, sendParams, startEchoAgent, userMessage } from '../helpers/a2a-agent.ts';
import type { EchoAgent } from '../helpers/a2a-agent.ts';

/** The full preset with `a2a`, whether or not the preset lists it yet. */
const preset = fullPreset.some((p) => p.key === 'a2a') ? fullPreset : [...fullPreset, a2aPlugin];

async function waitFor(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a2a', () => {
  let agent: EchoAgent;
  /** The echo agent with an extended agent card. */
  let extAgent: EchoAgent;
  let cards: TestUpstream;
  let gw: RunningGateway;
  let port: number;
  let base: string;
  /** Released by the streaming test once the client has seen the first event. */
  let releaseSecondEvent: () => void = () => undefined;
  let secondEvent: Promise<void> = Promise.resolve();
  /** Resolves when the upstream's SSE response closes: true when it finished, false when it was cut. */
  let sseClosed: Promise<boolean> = Promise.resolve(true);

  /** Access-log records (JSON format). */
  const records = (): Record<string, unknown>[] =>
    gw.logs.flatMap((l) => {
      try {
        const r = JSON.parse(l) as Record<string, unknown>;
        return r.msg === 'request' || r.message === 'request' ? [r] : [];
      } catch {
        return [];
      }
    });
  const logged = async (check: (r: Record<string, unknown>) => boolean, what: string): Promise<Record<string, unknown>> => {
    await waitFor(() => records().some(check), what);
    return records().find(check)!;
  };

  before(async () => {
    agent = await startEchoAgent();
    extAgent = await startEchoAgent({ extendedCard: true });
    // Cards and streams the echo agent cannot produce: broken cards, a v0.3-only card, a compressed card, a slow SSE.
    cards = await startUpstream((req, res) => {
      const self = `http://127.0.0.1:${cards.port}`;
      const json = (body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(200, { 'content-type': 'application/json', ...headers });
        res.end(typeof body === 'string' ? body : JSON.stringify(body));
      };
      // A server that reads paths as Tomcat and IIS do: `;` parameters, repeated slashes and trailing dots dropped.
      const read = req.url!.replace(/;[^/]*/g, '').replace(/\/{2,}/g, '/').replace(/\.+$/, '');
      if (read === '/cards/tomcat/.well-known/agent-card.json') return json({ name: 'tomcat', supportedInterfaces: [{ url: `${self}/cards/tomcat/rpc`, protocolBinding: 'JSONRPC' }] });
      switch (req.url) {
        case '/cards/links/.well-known/agent-card.json':
          // Every URL on the agent's own origin, beside the interfaces: icon, docs, provider, OAuth endpoints (v1.0
          // and v0.3 security scheme shapes). The identity provider's URLs are another origin's.
          return json({
            name: 'links',
            supportedInterfaces: [{ url: `${self}/cards/links/rpc`, protocolBinding: 'JSONRPC' }],
            iconUrl: `${self}/cards/links/icon.png`,
            documentationUrl: `${self}/cards/links/docs?page=1`,
            provider: { organization: 'acme', url: `${self}/` },
            securitySchemes: {
              v1: { oauth2SecurityScheme: { oauth2MetadataUrl: `${self}/.well-known/oauth-authorization-server`, flows: { authorizationCode: { authorizationUrl: 'https://idp.example.com/authorize', tokenUrl: `${self}/cards/links/token`, refreshUrl: `${self}/cards/links/token` } } } },
              v03: { type: 'openIdConnect', openIdConnectUrl: `${self}/cards/links/.well-known/openid-configuration` },
              other: { type: 'oauth2', flows: { clientCredentials: { tokenUrl: 'https://idp.example.com/token' } } },
            },
            capabilities: { extensions: [{ uri: `${self}/ext/v1`, required: false }] },
            skills: [{ id: 's', name: 's', description: 'd', tags: [], examples: [`see ${self}/cards/links/docs`] }],
          });
        case '/cards/snake/.well-known/agent-card.json':
          // A v1.0 card in the proto field names (protobuf JSON with the original names), which ProtoJSON
          // parsers (the a2a-js client's included) take as well as the camelCase ones.
          return json({
            name: 'snake',
            supported_interfaces: [
              { url: `${self}/cards/snake/rpc`, protocol_binding: 'JSONRPC', protocol_version: '1.0' },
              { url: 'https://agent.internal:8443', protocol_binding: 'GRPC', protocol_version: '1.0' },
            ],
            icon_url: `${self}/cards/snake/icon.png`,
            // A ProtoJSON security scheme: what makes the a2a-js client parse the card as ProtoJSON.
            securitySchemes: { key: { apiKeySecurityScheme: { location: 'header', name: 'x-key' } } },
            capabilities: {},
            skills: [],
          });
        case '/cards/renamed/card':
          // An agent whose card lives off the well-known path: the route maps the well-known path onto it.
          return json({ name: 'renamed', supportedInterfaces: [{ url: `${self}/cards/renamed/rpc`, protocolBinding: 'JSONRPC' }] });
        case '/cards/gzipped/rpc': {
          // An agent behind a compressing middleware (FastAPI's GZipMiddleware): fetch-based clients ask for gzip.
          const body = gzipSync(JSON.stringify({ jsonrpc: '2.0', id: 3, error: { code: -32002, message: 'Task cannot be canceled' } }));
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          return res.end(body);
        }
        case '/cards/bad/.well-known/agent-card.json':
          return json('{"name": "broken", ');
        case '/cards/nourl/.well-known/agent-card.json':
          return json({ name: 'no url', skills: [] });
        case '/cards/v03/.well-known/agent.json':
          return json({
            name: 'legacy',
            protocolVersion: '0.3.0',
            url: `${self}/cards/v03/`,
            preferredTransport: 'JSONRPC',
            additionalInterfaces: [
              { url: `${self}/cards/v03/`, transport: 'JSONRPC' },
              { url: `${self}/cards/v03/rest`, transport: 'HTTP+JSON' },
            ],
          });
        case '/cards/lax/rpc':
          // An agent that reads any body as JSON, whatever its Content-Type (Starlette's request.json(), under the
          // a2a Python SDK), and whose JSON parser takes what JavaScript's does not (a byte-order mark).
          return json({ jsonrpc: '2.0', id: 1, result: { name: 'lax', skills: [], supportedInterfaces: [{ url: `${self}/cards/lax/rpc`, protocolBinding: 'JSONRPC' }] } });
        case '/cards/lax/task': {
          const body = gzipSync(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' }, metadata: { url: `${self}/x`, skills: [] } } } }));
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(body.length) });
          return res.end(body);
        }
        case '/cards/py/agent/authenticatedExtendedCard':
          // The a2a Python SDK's (deprecated) GET of the extended card.
          return json({ name: 'py', url: `${self}/cards/py/`, version: '1', skills: [] });
        case '/cards/legacy-rest/v1/card':
          // The v0.3 REST binding's authenticated extended card.
          return json({ name: 'legacy rest', protocolVersion: '0.3.0', url: `${self}/cards/legacy-rpc`, additionalInterfaces: [{ url: `${self}/cards/legacy-rest`, transport: 'HTTP+JSON' }] });
        case '/cards/cut/.well-known/agent-card.json':
          // The agent dies halfway through its card.
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
          res.write('{"name": "cut", "url": "http://agent/');
          setTimeout(() => res.destroy(), 50);
          return;
        case '/cards/ranged/.well-known/agent-card.json': {
          // A static file server: it honours Range.
          const card = JSON.stringify({ name: 'ranged', supportedInterfaces: [{ url: `${self}/cards/ranged/rpc`, protocolBinding: 'JSONRPC' }] });
          const range = /^bytes=(\d+)-(\d+)$/.exec(String(req.headers.range ?? ''));
          if (!range) return json(card);
          const part = card.slice(Number(range[1]), Number(range[2]) + 1);
          res.writeHead(206, { 'content-type': 'application/json', 'content-range': `bytes ${range[1]}-${range[2]}/${card.length}` });
          return res.end(part);
        }
        case '/cards/gzip/.well-known/agent-card.json': {
          const body = gzipSync(JSON.stringify({ name: 'zipped', supportedInterfaces: [{ url: `${self}/cards/gzip/rpc`, protocolBinding: 'JSONRPC' }] }));
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(body.length) });
          return res.end(body);
        }
        case '/cards/sse': {
          sseClosed = new Promise((resolve) => res.once('close', () => resolve(res.writableFinished)));
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          const event = (result: unknown) => `data: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result })}\n\n`;
          res.write(event({ task: { id: 't1', contextId: 'ctx-sse', status: { state: 'TASK_STATE_WORKING' } } }));
          void secondEvent.then(() => {
            res.write(event({ artifactUpdate: { taskId: 't1', contextId: 'ctx-sse', artifact: { parts: [{ text: 'part' }] } } }));
            res.end(event({ statusUpdate: { taskId: 't1', contextId: 'ctx-sse', status: { state: 'TASK_STATE_COMPLETED' } } }));
          });
          return;
        }
        default:
          res.writeHead(404, { 'content-type': 'text/plain' });
          res.end('not found');
      }
    });
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const echo = `127.0.0.1:${agent.port}`;
    gw = await startGateway(
      {
        // The tests sending X-Forwarded-Proto stand for a proxy in front of the gateway (ADR 0014).
        config: { logging: { format: 'json', level: 'info' }, trustedProxies: ['127.0.0.1/32'] },
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  {
                    name: 'prefixed',
                    matches: [{ path: { pathPrefix: '/agents/echo' } }],
                    policies: { a2a: {}, urlRewrite: { path: { prefix: '/' } } },
                    backends: [{ host: echo }],
                  },
                  {
                    name: 'extended',
                    matches: [{ path: { pathPrefix: '/ext' } }],
                    policies: { a2a: {}, urlRewrite: { path: { prefix: '/' } } },
                    backends: [{ host: `127.0.0.1:${extAgent.port}` }],
                  },
                  {
                    name: 'on-backend',
                    matches: [{ path: { pathPrefix: '/via-backend' } }],
                    policies: { urlRewrite: { path: { prefix: '/' } } },
                    backends: [{ host: echo, policies: { a2a: {} } }],
                  },
                  {
                    name: 'both',
                    matches: [{ path: { pathPrefix: '/both' } }],
                    policies: { a2a: {}, urlRewrite: { path: { prefix: '/' } } },
                    backends: [{ host: echo, policies: { a2a: {} } }],
                  },
                  {
                    name: 'plain',
                    matches: [{ path: { pathPrefix: '/plain' } }],
                    policies: { urlRewrite: { path: { prefix: '/' } } },
                    backends: [{ host: echo }],
                  },
                  {
                    name: 'renamed-card',
                    matches: [{ path: { exact: '/renamed/.well-known/agent-card.json' } }],
                    policies: { a2a: {}, urlRewrite: { path: { full: '/cards/renamed/card' } } },
                    backends: [{ host: `127.0.0.1:${cards.port}` }],
                  },
                  { name: 'cards', matches: [{ path: { pathPrefix: '/cards' } }], policies: { a2a: {} }, backends: [{ host: `127.0.0.1:${cards.port}` }] },
                  {
                    name: 'secured',
                    matches: [{ path: { pathPrefix: '/secured' } }],
                    policies: { apiKey: { keys: [{ key: 'sk-a2a-client-key' }], mode: 'strict' }, a2a: {}, urlRewrite: { path: { prefix: '/' } } },
                    backends: [{ host: echo }],
                  },
                  // Nothing listens on port 1: the gateway answers 503 itself.
                  { name: 'dead', matches: [{ path: { pathPrefix: '/dead' } }], policies: { a2a: {} }, backends: [{ host: '127.0.0.1:1' }] },
                  { name: 'agent', policies: { a2a: {} }, backends: [{ host: echo }] },
                ],
              },
            ],
          },
        ],
      },
      { preset },
    );
  });

  after(async () => {
    releaseSecondEvent();
    await gw?.stop();
    await agent?.close();
    await extAgent?.close();
    await cards?.close();
  });

  it('the a2a-js client finds the agent through the gateway and every call goes through it (JSON-RPC)', async () => {
    const seen = agent.received.length;
    const client = await factory('JSONRPC').createFromUrl(base);
    const card = await client.getAgentCard();
    assert.deepEqual(
      card.supportedInterfaces.map((i) => i.url),
      [`${base}/a2a/jsonrpc`, `${base}/a2a/rest`, `${base}/a2a/jsonrpc`],
    );
    const result = await client.sendMessage(sendParams('hello'));
    assert.equal(echoText(result), 'echo: hello');
    const calls = agent.received.slice(seen).filter((r) => r.method === 'POST');
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.url, '/a2a/jsonrpc');
    assert.equal(calls[0]!.headers['x-forwarded-host'], `127.0.0.1:${port}`, 'the call came through the gateway');
    assert.equal(calls[0]!.headers['a2a-version'], '1.0', 'A2A-Version is forwarded');
  });

  it('streams a message over SSE through the gateway and delivers every event', async () => {
    const client = await factory('JSONRPC').createFromUrl(base);
    const events: string[] = [];
    let finalText = '';
    for await (const event of client.sendMessageStream(sendParams('streamed'))) {
      events.push(String(event.payload?.$case));
      if (event.payload?.$case === 'statusUpdate') {
        const part = event.payload.value.status?.message?.parts[0]?.content;
        finalText = part?.$case === 'text' ? part.value : '';
      }
    }
    assert.deepEqual(events, ['task', 'statusUpdate']);
    assert.equal(finalText, 'echo: streamed');
    const record = await logged((r) => r['a2a.method'] === 'SendStreamingMessage', 'the streaming call in the access log');
    assert.equal(record['a2a.task.state'], 'TASK_STATE_COMPLETED');
    assert.equal(record['a2a.result.kind'], 'status-update');
    assert.equal(record['a2a.response.outcome'], 'success');
  });

  it('passes SSE events on as they arrive, without waiting for the stream to end', async () => {
    secondEvent = new Promise((resolve) => (releaseSecondEvent = resolve));
    const res = await request(`${base}/cards/sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: {} }),
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    let text = '';
    const reader = res.body[Symbol.asyncIterator]();
    const first = await Promise.race([
      reader.next(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the first event was held back')), 3000)),
    ]);
    text += Buffer.from(first.value as Buffer).toString();
    assert.match(text, /TASK_STATE_WORKING/);
    assert.doesNotMatch(text, /TASK_STATE_COMPLETED/, 'the upstream has not sent the rest yet');
    releaseSecondEvent();
    for (let next = await reader.next(); !next.done; next = await reader.next()) text += Buffer.from(next.value as Buffer).toString();
    assert.equal(text.match(/^data: /gm)?.length, 3);
    const record = await logged((r) => r['http.path'] === '/cards/sse', 'the SSE call in the access log');
    assert.equal(record['a2a.method'], 'SendStreamingMessage');
    assert.equal(record['a2a.task.state'], 'TASK_STATE_COMPLETED', 'the state of the last event that has one');
    assert.equal(record['a2a.context.id'], 'ctx-sse');
  });

  it('a client that leaves mid-stream releases the upstream stream', async () => {
    secondEvent = new Promise(() => undefined); // the upstream never sends the rest
    const res = await request(`${base}/cards/sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'SendStreamingMessage', params: {} }),
    });
    const first = await res.body[Symbol.asyncIterator]().next();
    assert.match(Buffer.from(first.value as Buffer).toString(), /TASK_STATE_WORKING/);
    res.body.destroy();
    const finished = await Promise.race([sseClosed, new Promise<string>((r) => setTimeout(() => r('still open'), 3000))]);
    assert.equal(finished, false, 'the upstream response was cut when the client left');
    // The log still says what the stream had said before the cut: the task was working.
    await waitFor(() => records().filter((r) => r['http.path'] === '/cards/sse').length === 2, 'the cut stream in the access log');
    const record = records().filter((r) => r['http.path'] === '/cards/sse')[1]!;
    assert.equal(record['a2a.task.state'], 'TASK_STATE_WORKING');
    assert.equal(record['a2a.result.kind'], 'task');
    assert.equal(record['a2a.context.id'], 'ctx-sse');
  });

  it('works over HTTP+JSON (REST) too, and logs the REST method', async () => {
    const seen = agent.received.length;
    const client = await factory('HTTP+JSON').createFromUrl(base);
    const result = await client.sendMessage(sendParams('rest'));
    assert.equal(echoText(result), 'echo: rest');
    const call = agent.received.slice(seen).find((r) => r.method === 'POST');
    assert.equal(call?.url, '/a2a/rest/message:send');
    assert.equal(call?.headers['x-forwarded-host'], `127.0.0.1:${port}`);
    const record = await logged((r) => r['http.path'] === '/a2a/rest/message:send', 'the REST call in the access log');
    assert.equal(record['a2a.method'], 'SendMessage');
    assert.equal(record['a2a.task.state'], 'TASK_STATE_COMPLETED');
    assert.equal(record['a2a.result.kind'], 'task');
  });

  it('logs the A2A fields of a call: method, outcome, result kind, task state, context id, protocol', async () => {
    const res = await request(`${base}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SendMessage', params: { message: { messageId: 'm-log', role: 'ROLE_USER', parts: [{ text: 'log me' }] } } }),
    });
    const body = (await res.body.json()) as { result: { task: { contextId: string } } };
    const record = await logged((r) => r['a2a.method'] === 'SendMessage' && r['a2a.context.id'] === body.result.task.contextId, 'the call in the access log');
    assert.equal(record.protocol, 'a2a');
    assert.equal(record['a2a.response.outcome'], 'success');
    assert.equal(record['a2a.result.kind'], 'task');
    assert.equal(record['a2a.task.state'], 'TASK_STATE_COMPLETED');
    assert.equal(record['http.status'], 200);
  });

  it('logs a JSON-RPC error: outcome and code', async () => {
    const res = await request(`${base}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'NoSuchMethod', params: {} }),
    });
    const body = (await res.body.json()) as { error: { code: number } };
    assert.equal(typeof body.error.code, 'number');
    const record = await logged((r) => r['a2a.method'] === 'NoSuchMethod', 'the failed call in the access log');
    assert.equal(record['a2a.response.outcome'], 'error');
    assert.equal(record['a2a.response.error_code'], body.error.code);
  });

  it('logs what a compressed answer says (outcome, code): the agent compressed it for a client that asked', async () => {
    const res = await request(`${base}/cards/gzipped/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'CancelTask', params: { id: 'done' } }),
    });
    assert.equal(res.headers['content-encoding'], 'gzip', 'the answer passes as the agent sent it');
    const body = JSON.parse(gunzipSync(Buffer.from(await res.body.arrayBuffer())).toString('utf8')) as { error: { code: number } };
    assert.equal(body.error.code, -32002);
    const record = await logged((r) => r['http.path'] === '/cards/gzipped/rpc', 'the compressed answer in the access log');
    assert.equal(record['a2a.method'], 'CancelTask');
    assert.equal(record['a2a.response.outcome'], 'error');
    assert.equal(record['a2a.response.error_code'], -32002);
  });

  it('logs the A2A error reason, the same over JSON-RPC and HTTP+JSON', async () => {
    const rpc = await request(`${base}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'GetTask', params: { id: 'no-such-task-rpc' } }),
    });
    await rpc.body.text();
    const rest = await request(`${base}/a2a/rest/tasks/no-such-task-rest`, { headers: { 'a2a-version': '1.0' } });
    assert.equal(rest.statusCode, 404);
    await rest.body.text();
    const viaRpc = await logged((r) => r['a2a.method'] === 'GetTask' && r['a2a.response.error_code'] === -32001, 'the JSON-RPC error in the access log');
    const viaRest = await logged((r) => r['http.path'] === '/a2a/rest/tasks/no-such-task-rest', 'the REST error in the access log');
    assert.equal(viaRpc['a2a.response.error_reason'], 'TASK_NOT_FOUND');
    assert.equal(viaRest['a2a.response.error_reason'], 'TASK_NOT_FOUND');
    assert.equal(viaRest['a2a.response.outcome'], 'error');
  });

  it('a method name as long as the body is logged as unknown, not copied into the log line', async () => {
    const method = `x${'y'.repeat(100_000)}`;
    const res = await request(`${base}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-test': 'long-method' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'z'.repeat(100_000), method, params: { message: { contextId: 'c'.repeat(100_000) } } }),
    });
    await res.body.text();
    await waitFor(() => gw.logs.some((l) => l.includes('"a2a.method":"unknown"')), 'the call in the access log');
    assert.ok(gw.logs.every((l) => l.length < 10_000), 'no log line carries the long names');
  });

  it('counts calls on /metrics by route, A2A method (known names only) and outcome', async () => {
    const client = await factory('JSONRPC').createFromUrl(base);
    await client.sendMessage(sendParams('counted'));
    const call = (path: string, method: string) =>
      request(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method, params: {} }),
      }).then((r) => r.body.text());
    await call('/a2a/jsonrpc', 'Invented/Method');
    await call('/dead/rpc', 'SendMessage');
    const count = async (labels: string): Promise<number> => {
      const text = await (await request(`${gw.statsUrl}/metrics`)).body.text();
      const line = text.split('\n').find((l) => l.startsWith(`switchyard_a2a_call_duration_seconds_count{${labels}}`));
      return line === undefined ? 0 : Number(line.split(' ').at(-1));
    };
    // The call is counted once its response has finished, which the client may not wait for.
    for (let i = 0; i < 100 && (await count('route="dead",a2a_method="SendMessage",outcome="failed"')) === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok((await count('route="agent",a2a_method="SendMessage",outcome="success"')) >= 1);
    assert.ok((await count('route="agent",a2a_method="_OTHER",outcome="error"')) >= 1, 'an invented method is "_OTHER", never its own series');
    assert.equal(await count('route="dead",a2a_method="SendMessage",outcome="failed"'), 1, 'the gateway could not reach the agent');
    const text = await (await request(`${gw.statsUrl}/metrics`)).body.text();
    assert.doesNotMatch(text, /Invented/);
  });

  it('the key an authentication policy read never reaches the agent; the card and the call still go through', async () => {
    const seen = agent.received.length;
    const auth = { authorization: 'Bearer sk-a2a-client-key', 'a2a-version': '1.0' };
    const res = await request(`${base}/secured/.well-known/agent-card.json`, { headers: auth });
    const card = (await res.body.json()) as { supportedInterfaces: { url: string }[] };
    assert.equal(card.supportedInterfaces[0]!.url, `${base}/secured/a2a/jsonrpc`);
    const call = await request(card.supportedInterfaces[0]!.url, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'SendMessage', params: { message: { messageId: 'm-auth', role: 'ROLE_USER', parts: [{ text: 'auth' }] } } }),
    });
    assert.equal(call.statusCode, 200);
    await call.body.text();
    const upstream = agent.received.slice(seen);
    assert.equal(upstream.length, 2);
    for (const r of upstream) assert.equal(r.headers.authorization, undefined, `${r.method} ${r.url}`);
    const denied = await request(`${base}/secured/.well-known/agent-card.json`);
    assert.equal(denied.statusCode, 401);
    await denied.body.text();
    assert.equal(agent.received.length, seen + 2, 'nothing reached the agent without the key');
  });

  it('a chunked JSON-RPC body over 2 MiB is not refused (ADR 0142): sent on (here to an agent that is down: 503), logged as an A2A call', async () => {
    const big = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { pad: 'x'.repeat(3 * 1024 * 1024) } }));
    // A stream of unknown length: sent chunked.
    const body = Readable.from((function* () {
      for (let i = 0; i < big.length; i += 65536) yield big.subarray(i, i + 65536);
    })());
    const res = await request(`${base}/dead/chunked`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(res.statusCode, 503);
    await res.body.text();
    const record = await logged((r) => r['http.path'] === '/dead/chunked', 'the refused call in the access log');
    assert.equal(record.protocol, 'a2a');
    assert.equal(record['a2a.method'], 'unknown');
  });

  it('a v0.3 client reads the v0.3 card (top-level url) through the gateway and calls through it', async () => {
    // No A2A-Version: the agent's compat layer answers with a v0.3 card (with v1.0 interfaces beside it).
    const res = await request(`${base}/.well-known/agent-card.json`);
    const card = (await res.body.json()) as { url: string; protocolVersion: string; supportedInterfaces: { url: string }[] };
    assert.equal(card.protocolVersion, '0.3');
    assert.equal(card.url, `${base}/a2a/jsonrpc`);
    assert.ok(card.supportedInterfaces.every((i) => i.url.startsWith(`${base}/`)));
    const seen = agent.received.length;
    const transport = new LegacyJsonRpcTransport({ endpoint: card.url });
    const result = await transport.sendMessage(sendParams('legacy') as never);
    assert.equal(echoText(result), 'echo: legacy');
    const call = agent.received.slice(seen).find((r) => r.method === 'POST');
    assert.equal(call?.headers['x-forwarded-host'], `127.0.0.1:${port}`);
    const record = await logged((r) => r['a2a.method'] === 'message/send', 'the v0.3 call in the access log');
    assert.equal(record['a2a.result.kind'], 'task');
    assert.equal(record['a2a.task.state'], 'completed');
  });

  it('v0.3: the card url becomes the gateway base (card path without the well-known suffix), scheme from X-Forwarded-Proto', async () => {
    const res = await request(`${base}/cards/v03/.well-known/agent.json`, { headers: { host: 'agents.example.com', 'x-forwarded-proto': 'https' } });
    assert.equal(res.statusCode, 200);
    const text = await res.body.text();
    assert.equal(res.headers['content-length'], String(Buffer.byteLength(text)), 'the length of the rewritten card, not the upstream one');
    const card = JSON.parse(text) as { url: string; additionalInterfaces: { url: string }[] };
    assert.equal(card.url, 'https://agents.example.com/cards/v03');
    assert.deepEqual(
      card.additionalInterfaces.map((i) => i.url),
      ['https://agents.example.com/cards/v03', 'https://agents.example.com/cards/v03/rest'],
    );
  });

  it('v1.0 behind a prefix rewrite: the rewrite is inverted, and the client calls through the prefix', async () => {
    const seen = agent.received.length;
    const client = await factory('JSONRPC').createFromUrl(`${base}/agents/echo/`);
    const card = await client.getAgentCard();
    assert.deepEqual(
      card.supportedInterfaces.map((i) => i.url),
      [`${base}/agents/echo/a2a/jsonrpc`, `${base}/agents/echo/a2a/rest`, `${base}/agents/echo/a2a/jsonrpc`],
    );
    assert.equal(echoText(await client.sendMessage(sendParams('prefixed'))), 'echo: prefixed');
    const upstream = agent.received.slice(seen).map((r) => `${r.method} ${r.url}`);
    assert.deepEqual(upstream, ['GET /.well-known/agent-card.json', 'POST /a2a/jsonrpc']);
  });

  it('v1.0: X-Forwarded-Proto and the client Host name the gateway in the card', async () => {
    const res = await request(`${base}/agents/echo/.well-known/agent-card.json`, {
      headers: { host: 'gateway.example.com:8443', 'x-forwarded-proto': 'https', 'a2a-version': '1.0' },
    });
    const card = (await res.body.json()) as { supportedInterfaces: { url: string }[] };
    assert.deepEqual(
      card.supportedInterfaces.map((i) => i.url),
      ['https://gateway.example.com:8443/agents/echo/a2a/jsonrpc', 'https://gateway.example.com:8443/agents/echo/a2a/rest', 'https://gateway.example.com:8443/agents/echo/a2a/jsonrpc'],
    );
  });

  it('the extended agent card names the gateway too (JSON-RPC and REST), behind a prefix rewrite', async () => {
    for (const [binding, method] of [
      ['JSONRPC', 'GetExtendedAgentCard'],
      ['HTTP+JSON', 'GetExtendedAgentCard'],
    ] as const) {
      const seen = extAgent.received.length;
      const client = await factory(binding).createFromUrl(`${base}/ext/`);
      const card = await client.getAgentCard();
      assert.ok(
        card.skills.some((s) => s.id === EXTENDED_SKILL),
        `${binding}: the client fetched the extended card`,
      );
      assert.deepEqual(
        card.supportedInterfaces.map((i) => i.url),
        [`${base}/ext/a2a/jsonrpc`, `${base}/ext/a2a/rest`, `${base}/ext/a2a/jsonrpc`],
        binding,
      );
      const upstream = extAgent.received.slice(seen).map((r) => `${r.method} ${r.url}`);
      assert.equal(upstream.length, 2, `${binding}: both cards came through the gateway`);
      assert.equal(extAgent.received.at(-1)!.headers['accept-encoding'], 'identity', `${binding}: the card is asked for uncompressed`);
      await logged((r) => r.route === 'extended' && r['a2a.method'] === method && r['http.path'] !== undefined && r['a2a.response.outcome'] === 'success', `${binding}: the card call in the access log`);
    }
  });

  it('the v0.3 extended card (agent/getAuthenticatedExtendedCard, GET /v1/card) names the gateway too', async () => {
    const res = await request(`${base}/ext/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'agent/getAuthenticatedExtendedCard' }),
    });
    assert.equal(res.statusCode, 200);
    const text = await res.body.text();
    assert.equal(res.headers['content-length'], String(Buffer.byteLength(text)));
    const body = JSON.parse(text) as { jsonrpc: string; id: number; result: { url: string; skills: { id: string }[] } };
    assert.equal(body.id, 3);
    assert.equal(body.result.url, `${base}/ext/a2a/jsonrpc`);
    assert.ok(body.result.skills.some((s) => s.id === EXTENDED_SKILL));
    assert.doesNotMatch(text, new RegExp(`:${extAgent.port}`), 'no agent address left');

    const rest = await request(`${base}/cards/legacy-rest/v1/card`);
    const card = (await rest.body.json()) as { url: string; additionalInterfaces: { url: string }[] };
    assert.equal(card.url, `${base}/cards/legacy-rpc`);
    assert.deepEqual(
      card.additionalInterfaces.map((i) => i.url),
      [`${base}/cards/legacy-rest`],
    );
    const record = await logged((r) => r['http.path'] === '/cards/legacy-rest/v1/card', 'the v0.3 REST card in the access log');
    assert.equal(record['a2a.method'], 'GetExtendedAgentCard');
  });

  it('a card answering a call the gateway could not name (body not sent as JSON, a BOM, a body past 2 MiB) is rewritten too', async () => {
    const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard' });
    for (const [what, headers, body] of [
      ['text/plain', { 'content-type': 'text/plain' }, call],
      ['no content type', {}, call],
      ['a byte-order mark', { 'content-type': 'application/json' }, `\ufeff${call}`],
      ['padded past 2 MiB', { 'content-type': 'application/json' }, `${call}${' '.repeat(2 * 1024 * 1024)}`],
    ] as const) {
      const res = await request(`${base}/cards/lax/rpc`, { method: 'POST', headers, body });
      const text = await res.body.text();
      assert.equal(res.statusCode, 200, what);
      assert.ok(!text.includes(`127.0.0.1:${cards.port}`), `${what}: the agent's address is not in the card`);
      assert.equal((JSON.parse(text) as { result: { supportedInterfaces: { url: string }[] } }).result.supportedInterfaces[0]!.url, `${base}/cards/lax/rpc`, what);
    }
    // Any other answer to such a call passes byte for byte, compressed as it came.
    const res = await request(`${base}/cards/lax/task`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: call });
    assert.equal(res.headers['content-encoding'], 'gzip');
    const raw = Buffer.from(await res.body.arrayBuffer());
    assert.match(gunzipSync(raw).toString(), new RegExp(`127\\.0\\.0\\.1:${cards.port}/x`));
    const record = await logged((r) => r['http.path'] === '/cards/lax/task', 'the unnamed call in the access log');
    assert.equal(record['a2a.task.state'], 'TASK_STATE_COMPLETED');
  });

  it("the a2a Python SDK's GET /agent/authenticatedExtendedCard is an extended card too", async () => {
    const res = await request(`${base}/cards/py/agent/authenticatedExtendedCard`);
    const card = (await res.body.json()) as { url: string };
    assert.equal(card.url, `${base}/cards/py/`);
  });

  it('no spelling the agent serves its card under gets it past the rewrite (case, trailing slash)', async () => {
    // Express, under the a2a-js agent, matches paths case-insensitively and ignores a trailing slash.
    for (const path of ['/.well-known/agent-card.json/', '/.WELL-KNOWN/AGENT-CARD.JSON', '/agents/echo/.Well-Known/Agent-Card.json', '/ext/a2a/rest/EXTENDEDAGENTCARD', '/ext/a2a/rest/extendedagentcard/']) {
      const res = await request(`${base}${path}`, { headers: { 'a2a-version': '1.0' } });
      const text = await res.body.text();
      assert.equal(res.statusCode, 200, path);
      assert.ok(!text.includes(`127.0.0.1:${agent.port}`) && !text.includes(`127.0.0.1:${extAgent.port}`), `${path}: the agent's address is not in the card`);
      const card = JSON.parse(text) as { supportedInterfaces: { url: string }[] };
      assert.ok(card.supportedInterfaces.every((i) => i.url.startsWith(`${base}/`)), path);
    }
  });

  it('no spelling an agent on another server reads as its card path gets the card past the rewrite (`;` parameters, trailing dots; ADR 0182)', async () => {
    for (const path of ['/cards/tomcat/.well-known/agent-card.json;jsessionid=1', '/cards/tomcat/.well-known;x/agent-card.json', '/cards/tomcat/.well-known/agent-card.json.', '/cards/tomcat/.well-known/agent-card%2Ejson']) {
      const res = await request(`${base}${path}`);
      const text = await res.body.text();
      assert.equal(res.statusCode, 200, path);
      assert.ok(!text.includes(`127.0.0.1:${cards.port}`), `${path}: the agent's address is not in the card: ${text}`);
      assert.equal((JSON.parse(text) as { supportedInterfaces: { url: string }[] }).supportedInterfaces[0]!.url, `${base}/cards/tomcat/rpc`, path);
    }
  });

  it('works as a backend policy, and on both route and backend the card is rewritten once', async () => {
    for (const prefix of ['/via-backend', '/both']) {
      const res = await request(`${base}${prefix}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } });
      const card = (await res.body.json()) as { supportedInterfaces: { url: string }[] };
      assert.equal(card.supportedInterfaces[0]!.url, `${base}${prefix}/a2a/jsonrpc`, prefix);
    }
    const client = await factory('JSONRPC').createFromUrl(`${base}/via-backend/`);
    assert.equal(echoText(await client.sendMessage(sendParams('backend'))), 'echo: backend');
    await logged((r) => r.route === 'on-backend' && r['a2a.method'] === 'SendMessage', 'the backend-policy call in the access log');
  });

  it('asks for an uncompressed card and still rewrites one the agent compressed', async () => {
    const seen = cards.received.length;
    const res = await request(`${base}/cards/gzip/.well-known/agent-card.json`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(res.headers['content-encoding'], undefined);
    const card = (await res.body.json()) as { supportedInterfaces: { url: string }[] };
    assert.equal(card.supportedInterfaces[0]!.url, `${base}/cards/gzip/rpc`);
    assert.equal(cards.received[seen]!.headers['accept-encoding'], 'identity');
  });

  it('a Range on a card is not sent on: the client gets the whole rewritten card, not a 503 for a partial one', async () => {
    const seen = cards.received.length;
    const res = await request(`${base}/cards/ranged/.well-known/agent-card.json`, { headers: { range: 'bytes=0-9', 'if-range': 'W/"x"' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-range'], undefined);
    const card = (await res.body.json()) as { supportedInterfaces: { url: string }[] };
    assert.equal(card.supportedInterfaces[0]!.url, `${base}/cards/ranged/rpc`);
    assert.equal(cards.received[seen]!.headers.range, undefined);
    assert.equal(cards.received[seen]!.headers['if-range'], undefined);
  });

  it('every URL of the card on the agent\'s own origin names the gateway (icon, docs, provider, security schemes); others stay', async () => {
    const res = await request(`${base}/cards/links/.well-known/agent-card.json`, { headers: { host: 'gw.example.com' } });
    assert.equal(res.statusCode, 200);
    const text = await res.body.text();
    const card = JSON.parse(text) as Record<string, any>;
    const gw = 'http://gw.example.com';
    assert.equal(card.iconUrl, `${gw}/cards/links/icon.png`);
    assert.equal(card.documentationUrl, `${gw}/cards/links/docs?page=1`);
    assert.equal(card.provider.url, `${gw}/`);
    const v1 = card.securitySchemes.v1.oauth2SecurityScheme;
    assert.equal(v1.oauth2MetadataUrl, `${gw}/.well-known/oauth-authorization-server`);
    assert.equal(v1.flows.authorizationCode.authorizationUrl, 'https://idp.example.com/authorize');
    assert.equal(v1.flows.authorizationCode.tokenUrl, `${gw}/cards/links/token`);
    assert.equal(v1.flows.authorizationCode.refreshUrl, `${gw}/cards/links/token`);
    assert.equal(card.securitySchemes.v03.openIdConnectUrl, `${gw}/cards/links/.well-known/openid-configuration`);
    assert.equal(card.securitySchemes.other.flows.clientCredentials.tokenUrl, 'https://idp.example.com/token');
    // Free text is the agent's to write: only URL fields are addresses the card gives clients.
    assert.equal(card.skills[0].examples[0], `see http://127.0.0.1:${cards.port}/cards/links/docs`);
    // An extension's uri names the extension (clients match it in A2A-Extensions), whatever host it is on.
    assert.equal(card.capabilities.extensions[0].uri, `http://127.0.0.1:${cards.port}/ext/v1`);
  });

  it('a v1.0 card in proto field names (supported_interfaces, protocol_binding) is rewritten as the client reads it', async () => {
    const client = await factory('JSONRPC').createFromUrl(`${base}/cards/snake/`);
    const card = await client.getAgentCard();
    assert.deepEqual(
      card.supportedInterfaces.map((i) => i.url),
      [`${base}/cards/snake/rpc`, 'https://agent.internal:8443'],
    );
    const res = await request(`${base}/cards/snake/.well-known/agent-card.json`);
    const raw = (await res.body.json()) as { icon_url: string };
    assert.equal(raw.icon_url, `${base}/cards/snake/icon.png`);
  });

  it('a well-known card path rewritten to another upstream path is still a card: rewritten, not passed with the agent\'s URLs', async () => {
    const res = await request(`${base}/renamed/.well-known/agent-card.json`);
    assert.equal(res.statusCode, 200);
    const card = (await res.body.json()) as { supportedInterfaces: { url: string }[] };
    assert.deepEqual(card.supportedInterfaces.map((i) => i.url), [`${base}/renamed/cards/renamed/rpc`]);
  });

  it('a card that is not JSON: 503 "processing failed: agent card invalid JSON" (the card is read whole first)', async () => {
    const res = await request(`${base}/cards/bad/.well-known/agent-card.json`);
    assert.equal(res.statusCode, 503);
    assert.equal(res.headers['content-type'], 'application/json');
    const body = (await res.body.json()) as { error: { type: string; message: string } };
    assert.deepEqual(body.error, { type: 'processing_failed', message: 'processing failed: agent card invalid JSON' });
    const record = await logged((r) => r['http.path'] === '/cards/bad/.well-known/agent-card.json', 'the failed card in the access log');
    assert.equal(record['http.status'], 503);
  });

  it('a card cut short by the agent: 503 "processing failed", not the socket error', async () => {
    const res = await request(`${base}/cards/cut/.well-known/agent-card.json`);
    assert.equal(res.statusCode, 503);
    const body = (await res.body.json()) as { error: { type: string; message: string } };
    assert.deepEqual(body.error, { type: 'processing_failed', message: 'processing failed: agent card could not be read' });
  });

  it('a card without url or supportedInterfaces: 503 naming what is missing', async () => {
    const res = await request(`${base}/cards/nourl/.well-known/agent-card.json`);
    assert.equal(res.statusCode, 503);
    const body = (await res.body.json()) as { error: { message: string } };
    assert.match(body.error.message, /agent card missing URL/);
  });

  it('without the policy the card is proxied as plain HTTP, unchanged', async () => {
    const direct = await request(`${agent.base}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } });
    const expected = await direct.body.text();
    const res = await request(`${base}/plain/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } });
    assert.equal(res.headers['content-length'], String(Buffer.byteLength(expected)));
    assert.equal(await res.body.text(), expected);
    assert.ok(expected.includes(`${agent.base}/a2a/jsonrpc`));
    const record = await logged((r) => r['http.path'] === '/plain/.well-known/agent-card.json', 'the plain card in the access log');
    assert.equal(record.protocol, 'http');
    assert.equal(record['a2a.method'], undefined);
  });
});
