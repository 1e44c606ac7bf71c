// What a stdio target's process sees of the gateway's environment (ADR 0134): the gateway's environment plus the
// target's `env` (BEHAVIOUR.md), never the gateway's session-sealing key `SESSION_KEY` (with it, whoever can read the
// child's environment, e.g. through server-everything's `get-env` tool, forges session ids); `clearEnv: true` gives
// the process only its `env`.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { EVERYTHING, NODE, connectClient, startMcpGateway } from './harness.ts';
import type { McpGateway } from './harness.ts';

const SESSION_KEY = randomBytes(32).toString('hex');

async function childEnv(gw: McpGateway, tool: string): Promise<Record<string, string>> {
  const { client } = await connectClient(gw.mcpUrl);
  try {
    const result = (await client.callTool({ name: tool })) as { content: { type: string; text: string }[] };
    return JSON.parse(result.content[0]!.text) as Record<string, string>;
  } finally {
    await client.close();
  }
}

describe('mcp stdio: the environment of a target process', () => {
  let gw: McpGateway;
  const saved = { SESSION_KEY: process.env.SESSION_KEY, SWY_ENV_PROBE: process.env.SWY_ENV_PROBE };
  before(async () => {
    // The gateway runs in this process: its environment is this one.
    process.env.SESSION_KEY = SESSION_KEY;
    process.env.SWY_ENV_PROBE = 'inherited';
    gw = await startMcpGateway({
      targets: [
        { name: 'plain', stdio: { cmd: NODE, args: [EVERYTHING, 'stdio'], env: { ADDED: 'yes' } } },
        { name: 'clear', stdio: { cmd: NODE, args: [EVERYTHING, 'stdio'], env: { ONLY: 'this' }, clearEnv: true } },
      ],
    });
  });
  after(async () => {
    await gw?.stop();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('inherits the gateway environment and adds `env`, without the session key', async () => {
    const env = await childEnv(gw, 'plain_get-env');
    assert.equal(env.SWY_ENV_PROBE, 'inherited');
    assert.equal(env.ADDED, 'yes');
    assert.equal(env.PATH, process.env.PATH);
    assert.equal(env.SESSION_KEY, undefined, 'the session key reached the target process');
    assert.ok(!JSON.stringify(env).includes(SESSION_KEY), 'the session key value reached the target process');
  });

  it('`clearEnv: true`: only the target `env`', async () => {
    const env = await childEnv(gw, 'clear_get-env');
    assert.equal(env.ONLY, 'this');
    assert.equal(env.SWY_ENV_PROBE, undefined);
    assert.equal(env.SESSION_KEY, undefined);
    assert.equal(env.HOME, undefined);
  });
});
