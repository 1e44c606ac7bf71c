// An `openapi` target's document is fetched again while the gateway runs (BEHAVIOUR.md "Config lifecycle": remote
// dependencies; ADR 0137): a changed document changes the tools of new sessions and tells live ones with
// `notifications/tools/list_changed`; a failing fetch or a document that no longer converts keeps the last good tools.
// An edited `schema.file` is picked up the same way.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import openapi from '../../plugins/mcp-transports/openapi/plugin.ts';
import { REFRESH_TIMING } from '../../plugins/mcp-transports/openapi/document-source.ts';
import { connectClient, mcpPreset, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

/** A document with one GET operation per id, each on `/<id>`. */
const documentOf = (...ids: string[]): string =>
  JSON.stringify({
    openapi: '3.1.0',
    info: { title: 'changing', version: '1' },
    paths: Object.fromEntries(ids.map((id) => [`/${id}`, { get: { operationId: id, responses: { '200': { description: 'ok' } } } }])),
  });

interface Api {
  port: number;
  /** What `/openapi.json` serves; `status` other than 200 fails the fetch. */
  serve: { text: string; status: number };
  fetches: number;
  /** Fetches of the document by URL (path and query). */
  byUrl: Map<string, number>;
  close(): Promise<void>;
}

async function startApi(): Promise<Api> {
  const api = { serve: { text: documentOf('getA'), status: 200 }, fetches: 0, byUrl: new Map() } as Api;
  const server: Server = createServer((req, res) => {
    if (req.url!.startsWith('/openapi.json')) {
      api.fetches++;
      api.byUrl.set(req.url!, (api.byUrl.get(req.url!) ?? 0) + 1);
      res.writeHead(api.serve.status, { 'content-type': 'application/json', 'cache-control': 'max-age=1' });
      res.end(api.serve.status === 200 ? api.serve.text : 'down');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ served: req.url }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  api.port = (server.address() as AddressInfo).port;
  api.close = () => new Promise<void>((r) => server.close(() => r()));
  return api;
}

const toolNames = async (c: Awaited<ReturnType<typeof connectClient>>): Promise<string[]> => (await c.client.listTools()).tools.map((t) => t.name).sort();

/** A client session that has listed the first document's tools, counting the `tools/list_changed` it is sent. */
async function liveSession(gw: McpGateway): Promise<{ live: Awaited<ReturnType<typeof connectClient>>; changes: { count: number } }> {
  const live = await connectClient(gw.mcpUrl);
  const changes = { count: 0 };
  live.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes.count++);
  assert.deepEqual(await toolNames(live), ['getA']);
  return { live, changes };
}

async function closeAll(...clients: Awaited<ReturnType<typeof connectClient>>[]): Promise<void> {
  for (const c of clients) {
    await c.transport.terminateSession().catch(() => undefined);
    await c.client.close();
  }
}

/**
 * Before each suite: the API and a gateway with one target on its `/openapi.json`, and the test-only floor (`max-age=1`
 * is honoured as 1 s, not 60 s; a failure is retried after 200 ms); after it, everything stopped and the floor back.
 */
function urlTargetSuite(): { api: Api; gw: McpGateway } {
  const running = {} as { api: Api; gw: McpGateway };
  const saved = { ...REFRESH_TIMING };
  before(async () => {
    REFRESH_TIMING.minMs = 200;
    REFRESH_TIMING.retryMs = 200;
    running.api = await startApi();
    running.gw = await startMcpGateway(
      { targets: [{ name: 'api', openapi: { host: '127.0.0.1', port: running.api.port, schema: { url: `http://127.0.0.1:${running.api.port}/openapi.json` } } }] },
      { preset: fullPresetWith(...mcpPreset, openapi) },
    );
  });
  after(async () => {
    await running.gw?.stop();
    await running.api?.close();
    Object.assign(REFRESH_TIMING, saved);
  });
  return running;
}

describe('openapi target: a schema.url document is fetched again', () => {
  const suite = urlTargetSuite();

  it('serves a changed document to new sessions and tells live ones; failures and bad documents keep the last good tools', async () => {
    const { api, gw } = suite;
    const { live, changes } = await liveSession(gw);
    const opened = [live];
    try {

      api.serve.text = documentOf('getB', 'getC');
      await waitFor(() => changes.count > 0, 'notifications/tools/list_changed on the live session');
      const fresh = await connectClient(gw.mcpUrl);
      opened.push(fresh);
      assert.deepEqual(await toolNames(fresh), ['getB', 'getC']);
      assert.deepEqual(await toolNames(live), ['getB', 'getC']);
      const called = await fresh.client.callTool({ name: 'getC', arguments: {} });
      assert.deepEqual(called.structuredContent, { served: '/getC' });

      // The API fails its document: the tools stay, and one warning covers the whole streak.
      api.serve.status = 503;
      const failedFrom = api.fetches;
      await waitFor(() => api.fetches >= failedFrom + 3, 'three failing fetches');
      const during = await connectClient(gw.mcpUrl);
      opened.push(during);
      assert.deepEqual(await toolNames(during), ['getB', 'getC']);
      const warned = gw.logs.filter((l) => l.includes('OpenAPI document refresh failed'));
      assert.equal(warned.length, 1, warned.join('\n'));
      assert.match(warned[0]!, /HTTP 503/);

      // A document that no longer converts (Swagger 2.0): the last good tools stay, with a warning.
      api.serve.status = 200;
      api.serve.text = JSON.stringify({ swagger: '2.0', paths: {} });
      await waitFor(() => gw.logs.some((l) => l.includes('Swagger 2.0')), 'the warning about the unusable document');
      const afterBad = await connectClient(gw.mcpUrl);
      opened.push(afterBad);
      assert.deepEqual(await toolNames(afterBad), ['getB', 'getC']);
      const notified = changes.count;

      // And a good one again takes effect.
      api.serve.text = documentOf('getD');
      await waitFor(() => changes.count > notified, 'a second notifications/tools/list_changed');
      assert.deepEqual(await toolNames(live), ['getD']);
    } finally {
      await closeAll(...opened);
    }
  });
});

describe('openapi target: two targets of one schema.url', () => {
  let api: Api;
  let gw: McpGateway;
  const saved = { ...REFRESH_TIMING };
  before(async () => {
    REFRESH_TIMING.minMs = 200;
    REFRESH_TIMING.retryMs = 200;
    api = await startApi();
    const url = `http://127.0.0.1:${api.port}/openapi.json`;
    gw = await startMcpGateway(
      { targets: ['v1', 'v2'].map((name) => ({ name, openapi: { host: '127.0.0.1', port: api.port, schema: { url } } })) },
      { preset: fullPresetWith(...mcpPreset, openapi) },
    );
  });
  after(async () => {
    await gw?.stop();
    await api?.close();
    Object.assign(REFRESH_TIMING, saved);
  });

  it('a change of the document is one notifications/tools/list_changed for a session, not one per target (ADR 0143)', async () => {
    const live = await connectClient(gw.mcpUrl);
    try {
      const changes = { count: 0 };
      live.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes.count++);
      assert.deepEqual(await toolNames(live), ['v1_getA', 'v2_getA']);
      api.serve.text = documentOf('getB');
      await waitFor(() => changes.count > 0, 'notifications/tools/list_changed on the live session');
      // The document is fetched again every second (max-age=1), unchanged: nothing more is sent.
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(changes.count, 1);
      assert.deepEqual(await toolNames(live), ['v1_getB', 'v2_getB']);
      api.serve.text = documentOf('getC');
      await waitFor(() => changes.count > 1, 'the second change');
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(changes.count, 2);
    } finally {
      await closeAll(live);
    }
  });
});

describe('openapi target: the refresh across reloads', () => {
  const suite = urlTargetSuite();

  it('a reload keeps the document (no fetch of its own); a URL no config names any more is not fetched again', async () => {
    const { api, gw } = suite;
    assert.equal(api.byUrl.get('/openapi.json'), 1);
    const text = readFileSync(gw.file, 'utf8');
    assert.equal(await gw.gateway.reload(`${text}\n# a change that keeps the target\n`), true);
    assert.equal(api.byUrl.get('/openapi.json'), 1);
    // Its 1 s lifetime runs on across the reload.
    await waitFor(() => api.byUrl.get('/openapi.json') === 2, 'the refresh after the reload');

    assert.equal(await gw.gateway.reload(text.replace('openapi.json', 'openapi.json?v=2')), true);
    assert.equal(api.byUrl.get('/openapi.json?v=2'), 1);
    await waitFor(() => (api.byUrl.get('/openapi.json?v=2') ?? 0) >= 3, 'two refreshes of the new URL');
    const old = api.byUrl.get('/openapi.json');
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(api.byUrl.get('/openapi.json'), old);
  });
});

describe('openapi target: an edited schema.file is read again', () => {
  let gw: McpGateway;
  const file = join(testTempDir('switchyard-openapi-watch-'), 'api.json');
  before(async () => {
    writeFileSync(file, documentOf('getA'));
    gw = await startMcpGateway({ targets: [{ name: 'api', openapi: { host: '127.0.0.1', port: 9, schema: { file } } }] }, { preset: fullPresetWith(...mcpPreset, openapi) });
  });
  after(async () => {
    await gw?.stop();
  });

  it('serves the edited document and tells live sessions', async () => {
    const { live, changes } = await liveSession(gw);
    const opened = [live];
    try {
      writeFileSync(file, documentOf('getA', 'getE'));
      await waitFor(() => changes.count > 0, 'notifications/tools/list_changed after the edit');
      const fresh = await connectClient(gw.mcpUrl);
      opened.push(fresh);
      assert.deepEqual(await toolNames(fresh), ['getA', 'getE']);
    } finally {
      await closeAll(...opened);
    }
  });
});
