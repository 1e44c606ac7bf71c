// The `openapi` transport behind the real `mcp` backend: the Petstore API as prefixed MCP tools next to a stdio
// target, driven by the SDK v1 client through the gateway.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import openapi from '../../plugins/mcp-transports/openapi/plugin.ts';
import { connectClient, everythingStdio, mcpPreset, startMcpGateway } from './harness.ts';
import type { McpGateway } from './harness.ts';
import { PETSTORE_JSON, startPetstore } from './support/petstore-server.ts';
import type { Petstore } from './support/petstore-server.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

describe('mcp backend with an openapi target', () => {
  let petstore: Petstore;
  let gw: McpGateway;
  before(async () => {
    petstore = await startPetstore();
    gw = await startMcpGateway(
      { targets: [{ name: 'petstore', openapi: { host: '127.0.0.1', port: petstore.port, schema: { file: PETSTORE_JSON } } }, everythingStdio()] },
      { preset: fullPresetWith(...mcpPreset, openapi) },
    );
  });
  after(async () => {
    await gw?.stop();
    await petstore?.close();
  });

  it('lists the Petstore operations as `petstore_<operationId>` and calls them', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('petstore_getPetById') && tools.includes('petstore_addPet'), tools.join(','));
      assert.ok(tools.includes('everything_echo'));
      const pet = await client.callTool({ name: 'petstore_getPetById', arguments: { path: { petId: 1 } } });
      assert.equal((pet.structuredContent as { name?: string }).name, 'doggie');
      const missing = await client.callTool({ name: 'petstore_getPetById', arguments: { path: { petId: 999 } } });
      assert.equal(missing.isError, true);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('lists the same names again, in the same session and in another (the shared tool list is not renamed in place)', async () => {
    const first = await connectClient(gw.mcpUrl);
    const second = await connectClient(gw.mcpUrl);
    try {
      const names = async (c: typeof first): Promise<string[]> => (await c.client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('petstore_')).sort();
      const once = await names(first);
      assert.ok(once.includes('petstore_getPetById'), once.join(','));
      assert.deepEqual(await names(first), once);
      assert.deepEqual(await names(second), once);
      const pet = await second.client.callTool({ name: 'petstore_getPetById', arguments: { path: { petId: 1 } } });
      assert.equal((pet.structuredContent as { name?: string }).name, 'doggie');
    } finally {
      for (const c of [first, second]) {
        await c.transport.terminateSession();
        await c.client.close();
      }
    }
  });
});

describe('mcp backend with an openapi target whose $refs expand exponentially (ADR 0134)', () => {
  it('lists the other tools at once; the exploding one is left out with a warning at load', async () => {
    const schemas: Record<string, unknown> = { S30: { type: 'string' } };
    for (let i = 0; i < 30; i++) schemas[`S${i}`] = { type: 'object', properties: { a: { $ref: `#/components/schemas/S${i + 1}` }, b: { $ref: `#/components/schemas/S${i + 1}` } } };
    const body = (ref: string) => ({ content: { 'application/json': { schema: { $ref: ref } } } });
    const file = join(testTempDir('switchyard-openapi-bomb-'), 'bomb.json');
    writeFileSync(
      file,
      JSON.stringify({
        openapi: '3.1.0',
        info: { title: 'bomb', version: '1' },
        paths: { '/bomb': { post: { operationId: 'bomb', requestBody: body('#/components/schemas/S0'), responses: {} } }, '/fine': { post: { operationId: 'fine', requestBody: body('#/components/schemas/S28'), responses: {} } } },
        components: { schemas },
      }),
    );
    const gw = await startMcpGateway({ targets: [{ name: 'api', openapi: { host: '127.0.0.1', port: 9, schema: { file } } }, everythingStdio()] }, { preset: fullPresetWith(...mcpPreset, openapi) });
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('api_'));
      assert.deepEqual(tools, ['api_fine']);
      assert.ok(gw.logs.some((l) => l.includes('POST /bomb: left out')));
    } finally {
      await transport.terminateSession();
      await client.close();
      await gw.stop();
    }
  });
});
