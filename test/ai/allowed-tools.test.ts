// Tool choices a provider has no form for, kept as the client meant them: `tool_choice: {type: "allowed_tools"}`
// (Chat Completions and Responses) on Anthropic, Gemini and Bedrock Converse declares only the allowed tools, with
// the mode (`auto` / `required`) as the choice; `none` on Converse (which has no `none`) declares only the tools the
// history needs. Left as they were, the model could call any tool the request lists. Real `openai` client, aimock
// behind a recording hop.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type OpenAI from 'openai';
import { aiRoute, recordedAi, sdkClients } from './harness.ts';

const ROUTES = { testAi: { routes: { '/v1/responses': 'responses', '*': 'completions' } } };
const AWS_KEYS = { aws: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', region: 'us-east-1', serviceName: 'bedrock' } };
const tool = (name: string): OpenAI.Chat.Completions.ChatCompletionFunctionTool => ({ type: 'function', function: { name, parameters: { type: 'object', properties: { q: { type: 'string' } } } } });
const TOOLS = [tool('search'), tool('delete_everything'), tool('lookup')];
const allowed = (mode: 'auto' | 'required'): OpenAI.Chat.Completions.ChatCompletionAllowedToolChoice => ({
  type: 'allowed_tools',
  allowed_tools: { mode, tools: [{ type: 'function', function: { name: 'search' } }, { type: 'function', function: { name: 'lookup' } }] },
});
const hello = [{ role: 'user' as const, content: 'hello' }];

describe('tool choices a provider has no form for', () => {
  const t = recordedAi((hostPort) => [
    aiRoute('/an', { name: 'an', provider: { anthropic: {} }, hostOverride: hostPort }, ROUTES),
    aiRoute('/gem', { name: 'gem', provider: { gemini: {} }, hostOverride: hostPort }, ROUTES),
    aiRoute('/br', { name: 'br', provider: { bedrock: { region: 'us-east-1' } }, hostOverride: hostPort }, { ...ROUTES, backendAuth: AWS_KEYS }),
  ]);
  const { openai } = sdkClients(() => t.gw.base, 'sk-test');

  it('Anthropic: only the allowed tools, `any` for required, `auto` for auto', async () => {
    await openai('/an').chat.completions.create({ model: 'claude-x', tools: TOOLS, tool_choice: allowed('required'), messages: hello });
    let sent = t.rec.last().json();
    assert.deepEqual((sent.tools as { name: string }[]).map((x) => x.name), ['search', 'lookup']);
    assert.deepEqual(sent.tool_choice, { type: 'any' });
    await openai('/an').chat.completions.create({ model: 'claude-x', tools: TOOLS, tool_choice: allowed('auto'), parallel_tool_calls: false, messages: hello });
    sent = t.rec.last().json();
    assert.deepEqual((sent.tools as { name: string }[]).map((x) => x.name), ['search', 'lookup']);
    assert.deepEqual(sent.tool_choice, { type: 'auto', disable_parallel_tool_use: true });
  });

  it('Gemini and Converse: only the allowed tools declared', async () => {
    await openai('/gem').chat.completions.create({ model: 'gemini-x', tools: TOOLS, tool_choice: allowed('required'), messages: hello });
    const gem = t.rec.last().json();
    assert.deepEqual((gem.tools as { functionDeclarations: { name: string }[] }[])[0]!.functionDeclarations.map((x) => x.name), ['search', 'lookup']);
    assert.deepEqual(gem.toolConfig, { functionCallingConfig: { mode: 'ANY' } });
    await openai('/br').chat.completions.create({ model: 'anthropic.claude-x', tools: TOOLS, tool_choice: allowed('auto'), messages: hello }).catch(() => undefined);
    const br = t.rec.last().json();
    const config = br.toolConfig as { tools: { toolSpec: { name: string } }[]; toolChoice: unknown };
    assert.deepEqual(config.tools.map((x) => x.toolSpec.name), ['search', 'lookup']);
    assert.deepEqual(config.toolChoice, { auto: {} });
  });

  it("Converse, which has no `none`: tool_choice none declares no tools, only those the history called", async () => {
    await openai('/br').chat.completions.create({ model: 'anthropic.claude-x', tools: TOOLS, tool_choice: 'none', messages: hello }).catch(() => undefined);
    assert.equal(t.rec.last().json().toolConfig, undefined);
    const history: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'find it' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'found' },
    ];
    await openai('/br').chat.completions.create({ model: 'anthropic.claude-x', tools: TOOLS, tool_choice: 'none', messages: history }).catch(() => undefined);
    const config = t.rec.last().json().toolConfig as { tools: { toolSpec: { name: string } }[]; toolChoice?: unknown };
    assert.deepEqual(config.tools.map((x) => x.toolSpec.name), ['search']);
    assert.equal(config.toolChoice, undefined);
  });

  it('a Responses client: its allowed_tools reach Anthropic the same way', async () => {
    const tools = TOOLS.map((x) => ({ type: 'function' as const, name: x.function.name, parameters: x.function.parameters!, strict: false }));
    await openai('/an').responses.create({
      model: 'claude-x',
      input: 'hello',
      tools,
      tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'lookup' }] },
    });
    const sent = t.rec.last().json();
    assert.deepEqual((sent.tools as { name: string }[]).map((x) => x.name), ['lookup']);
    assert.deepEqual(sent.tool_choice, { type: 'any' });
  });
});
