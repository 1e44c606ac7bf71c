// Response guards see every text of an answer (ADR 0165): tool-call arguments (Chat Completions
// `tool_calls[].function.arguments`, Anthropic `tool_use.input`, Responses `function_call.arguments`, Gemini
// `functionCall.args`) and reasoning text, not only the answer's text; on every client API, across translation,
// streamed (`streaming: Enabled`) and not. A `regex` mask lands inside the arguments' JSON strings and keeps the JSON
// valid. The real `ai` policy, the real OpenAI and Anthropic SDKs, aimock as the provider (it returns tool calls).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { request } from 'undici';
import { aiRoute, rejection, sdkClients, startAiGateway, startMock } from './harness.ts';
import type { AiGateway, Mock } from './harness.ts';

const LEAK = '{"to":"bob@example.com","note":"ssn 123-45-6789"}';
const FIXTURES = [
  { match: { userMessage: 'leak' }, response: { toolCalls: [{ name: 'send', arguments: LEAK }] } },
  { match: { userMessage: 'secret' }, response: { toolCalls: [{ name: 'send', arguments: '{"note":"the SECRET plan"}' }] } },
  { match: { userMessage: 'think' }, response: { content: 'fine', reasoning: 'I will not say the SECRET' } },
  { match: {}, response: { content: 'default reply' } },
];

const ROUTES = { '/v1/chat/completions': 'completions', '/v1/messages': 'messages', '/v1/responses': 'responses', ':generateContent': 'generateContent', ':streamGenerateContent': 'generateContent' };
const GUARDED = {
  ai: {
    routes: ROUTES,
    promptGuard: {
      response: [
        { regex: { rules: [{ builtin: 'ssn' }, { builtin: 'email' }] } },
        { regex: { action: 'reject', rules: [{ pattern: 'SECRET' }] }, rejection: { status: 451, body: 'blocked answer' } },
      ],
      streaming: 'Enabled',
    },
  },
};
const MASKED = { to: '<EMAIL_ADDRESS>', note: 'ssn <SSN>' };

describe('response guards see tool-call arguments and reasoning text', () => {
  let mock: Mock;
  let gw: AiGateway;
  before(async () => {
    mock = await startMock(FIXTURES);
    gw = await startAiGateway([
      aiRoute('/oa', { name: 'oa', provider: { openAI: {} }, hostOverride: mock.hostPort }, GUARDED),
      aiRoute('/an', { name: 'an', provider: { anthropic: {} }, hostOverride: mock.hostPort }, GUARDED),
      aiRoute('/gm', { name: 'gm', provider: { gemini: {} }, hostOverride: mock.hostPort }, GUARDED),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
  });
  const sdk = sdkClients(() => gw.base, 'sk-test');
  const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'send', parameters: { type: 'object', properties: {} } } }];
  const anthropicTools: Anthropic.Tool[] = [{ name: 'send', input_schema: { type: 'object', properties: {} } }];
  const responsesTools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'send', parameters: { type: 'object', properties: {} }, strict: false }];

  for (const prefix of ['/oa', '/an', '/gm']) {
    it(`OpenAI SDK, Chat Completions on ${prefix}: tool-call arguments are masked inside their JSON, streamed or not`, async () => {
      const client = sdk.openai(prefix);
      const args = (m: OpenAI.ChatCompletionMessage): unknown => JSON.parse((m.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall).function.arguments);
      const whole = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'leak' }], tools });
      assert.deepEqual(args(whole.choices[0]!.message), MASKED);
      const streamed = await client.chat.completions.stream({ model: 'gpt-4o', messages: [{ role: 'user', content: 'leak' }], tools }).finalChatCompletion();
      assert.deepEqual(args(streamed.choices[0]!.message), MASKED);
      for (const stream of [false, true]) {
        const err = (await rejection(client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'secret' }], tools, stream }), OpenAI.APIError)) as InstanceType<typeof OpenAI.APIError>;
        assert.equal(err.status, 451);
      }
    });

    it(`Anthropic SDK on ${prefix}: tool_use input is masked, streamed or not; a SECRET in it is rejected`, async () => {
      const client = sdk.anthropic(prefix);
      const whole = await client.messages.create({ model: 'claude-x', max_tokens: 64, messages: [{ role: 'user', content: 'leak' }], tools: anthropicTools });
      const use = whole.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
      assert.deepEqual(use.input, MASKED);
      const streamed = await client.messages.stream({ model: 'claude-x', max_tokens: 64, messages: [{ role: 'user', content: 'leak' }], tools: anthropicTools }).finalMessage();
      assert.deepEqual((streamed.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock).input, MASKED);
      for (const stream of [false, true]) {
        const err = (await rejection(client.messages.create({ model: 'claude-x', max_tokens: 64, messages: [{ role: 'user', content: 'secret' }], tools: anthropicTools, stream }), Anthropic.APIError)) as InstanceType<typeof Anthropic.APIError>;
        assert.equal(err.status, 451);
      }
    });

    it(`OpenAI SDK, Responses on ${prefix}: function_call arguments are masked, streamed or not`, async () => {
      const client = sdk.openai(prefix);
      const call = (r: OpenAI.Responses.Response) => r.output.find((i) => i.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      const whole = await client.responses.create({ model: 'gpt-4o', input: 'leak', tools: responsesTools });
      assert.deepEqual(JSON.parse(call(whole).arguments), MASKED);
      const streamed = await client.responses.stream({ model: 'gpt-4o', input: 'leak', tools: responsesTools }).finalResponse();
      assert.deepEqual(JSON.parse(call(streamed).arguments), MASKED);
      const err = (await rejection(client.responses.create({ model: 'gpt-4o', input: 'secret', tools: responsesTools }), OpenAI.APIError)) as InstanceType<typeof OpenAI.APIError>;
      assert.equal(err.status, 451);
    });
  }

  it('Gemini client: functionCall args are masked, streamed or not', async () => {
    const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'leak' }] }], tools: [{ functionDeclarations: [{ name: 'send' }] }] });
    const headers = { 'content-type': 'application/json', 'x-goog-api-key': 'k' };
    const res = await request(`${gw.base}/gm/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', headers, body });
    const answer = (await res.body.json()) as { candidates: { content: { parts: { functionCall?: { args: unknown } }[] } }[] };
    assert.equal(res.statusCode, 200);
    assert.deepEqual(answer.candidates[0]!.content.parts.find((p) => p.functionCall)!.functionCall!.args, MASKED);
    const sse = await request(`${gw.base}/gm/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, { method: 'POST', headers, body });
    const text = await sse.body.text();
    assert.equal(sse.statusCode, 200, text);
    assert.ok(!text.includes('123-45-6789') && !text.includes('bob@example.com'), text);
    assert.ok(text.includes('<SSN>'), text);
  });

  it('reasoning text is guarded: Anthropic thinking, Responses reasoning (native providers), streamed or not', async () => {
    for (const stream of [false, true]) {
      const an = (await rejection(sdk.anthropic('/an').messages.create({ model: 'claude-sonnet-4-5', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'think' }], stream }), Anthropic.APIError)) as InstanceType<typeof Anthropic.APIError>;
      assert.equal(an.status, 451);
      const oa = (await rejection(sdk.openai('/oa').responses.create({ model: 'o3', input: 'think', reasoning: { effort: 'low', summary: 'auto' }, stream }), OpenAI.APIError)) as InstanceType<typeof OpenAI.APIError>;
      assert.equal(oa.status, 451);
    }
  });
});
