// Extended thinking across translation (ADR 0167): an Anthropic client's `thinking` budget and the thinking blocks of
// its history reach Bedrock Converse (Claude), Gemini and OpenAI in their own terms, and their reasoning comes back
// as thinking blocks, streamed and not. Loopback stand-ins speak each provider's wire format.
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { aiRoute, scriptedAi } from './harness.ts';
import type { ScriptedAi } from './harness.ts';
import { frame, sse } from './stream-fixtures.ts';
import { completionsRequestToMessages } from '../../plugins/lib/llm/completions-messages/requests.ts';
import { messagesResponseToCompletions } from '../../plugins/lib/llm/completions-messages/answers.ts';

const AWS_KEYS = { backendAuth: { aws: { accessKeyId: 'AKIDEXPLICIT', secretAccessKey: 'explicit-secret', region: 'us-east-1', serviceName: 'bedrock' } } };
const CLAUDE = 'anthropic.claude-sonnet-4-20250514-v1:0';
const SIG = 'EqQBCkYIBxgCKkB0c2lnbmF0dXJl';

/** A Converse answer: reasoning with its signature, a redacted block, then a tool call. */
const CONVERSE_ANSWER = {
  output: {
    message: {
      role: 'assistant',
      content: [
        { reasoningContent: { reasoningText: { text: 'The user wants weather.', signature: SIG } } },
        { reasoningContent: { redactedContent: 'cmVkYWN0ZWQ=' } },
        { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } } },
      ],
    },
  },
  stopReason: 'tool_use',
  usage: { inputTokens: 20, outputTokens: 40, totalTokens: 60 },
};

const CONVERSE_STREAM = Buffer.concat([
  frame('messageStart', { role: 'assistant' }),
  frame('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'The user ' } } }),
  frame('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'wants weather.' } } }),
  frame('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { signature: SIG } } }),
  frame('contentBlockStop', { contentBlockIndex: 0 }),
  frame('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'Checking.' } }),
  frame('contentBlockStop', { contentBlockIndex: 1 }),
  frame('messageStop', { stopReason: 'end_turn' }),
  frame('metadata', { usage: { inputTokens: 20, outputTokens: 40, totalTokens: 60 }, metrics: { latencyMs: 5 } }),
]);

const TOOLS = [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }];

/** A tool-use turn after thinking: the question, the answer's `blocks` (thinking, then the call), the call's result. */
const toolTurn = (model: string, blocks: Anthropic.ContentBlockParam[]): Anthropic.MessageCreateParamsNonStreaming => ({
  model,
  max_tokens: 4000,
  thinking: { type: 'enabled', budget_tokens: 2000 },
  tools: TOOLS,
  messages: [
    { role: 'user', content: 'weather in Paris?' },
    { role: 'assistant', content: blocks },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: (blocks[blocks.length - 1] as Anthropic.ToolUseBlockParam).id, content: 'sunny' }] },
  ],
});

/** What the stand-in provider last received, parsed. */
const lastBody = (t: ScriptedAi): Record<string, any> => JSON.parse(t.upstream.received[t.upstream.received.length - 1]!.body.toString());

describe('extended thinking to Bedrock Converse (Claude)', () => {
  const t = scriptedAi((host) => [
    aiRoute('/br', { name: 'br', provider: { bedrock: { region: 'us-east-1', model: CLAUDE } }, hostOverride: host }, { ...AWS_KEYS, testAi: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }),
    aiRoute('/nova', { name: 'nova', provider: { bedrock: { region: 'us-east-1', model: 'amazon.nova-pro-v1:0' } }, hostOverride: host }, { ...AWS_KEYS, testAi: { routes: { '/v1/messages': 'messages' } } }),
  ]);
  beforeEach(() => t.answer('application/json', JSON.stringify(CONVERSE_ANSWER)));
  const lastWire = (): Record<string, any> => lastBody(t);
  const anthropic = (): Anthropic => new Anthropic({ baseURL: `${t.gw.base}/br`, apiKey: 'unused', maxRetries: 0 });

  it("sends an Anthropic client's thinking budget as Claude's thinking model field, and answers reasoning as thinking blocks", async () => {
    const res = await anthropic().messages.create({ model: 'claude', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, tools: TOOLS, messages: [{ role: 'user', content: 'weather in Paris?' }] });
    assert.deepEqual(lastWire().additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 2000 } });
    assert.deepEqual(res.content, [
      { type: 'thinking', thinking: 'The user wants weather.', signature: SIG },
      { type: 'redacted_thinking', data: 'cmVkYWN0ZWQ=' },
      { type: 'tool_use', id: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } },
    ]);
    assert.equal(res.stop_reason, 'tool_use');
  });

  it('sends the thinking blocks of the history back as reasoningContent with their signatures (a tool-use turn after thinking)', async () => {
    await anthropic().messages.create(
      toolTurn('claude', [
        { type: 'thinking', thinking: 'The user wants weather.', signature: SIG },
        { type: 'redacted_thinking', data: 'cmVkYWN0ZWQ=' },
        { type: 'tool_use', id: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } },
      ]),
    );
    assert.deepEqual(lastWire().messages[1].content, [
      { reasoningContent: { reasoningText: { text: 'The user wants weather.', signature: SIG } } },
      { reasoningContent: { redactedContent: 'cmVkYWN0ZWQ=' } },
      { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } } },
    ]);
  });

  it('streams reasoning as a thinking block: thinking_delta, then signature_delta, before the text', async () => {
    t.answer('application/vnd.amazon.eventstream', CONVERSE_STREAM);
    const stream = anthropic().messages.stream({ model: 'claude', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, messages: [{ role: 'user', content: 'weather?' }] });
    const deltas: string[] = [];
    stream.on('streamEvent', (e) => {
      if (e.type === 'content_block_delta') deltas.push(e.delta.type);
    });
    const final = await stream.finalMessage();
    assert.deepEqual(final.content, [
      { type: 'thinking', thinking: 'The user wants weather.', signature: SIG },
      { type: 'text', text: 'Checking.' },
    ]);
    assert.deepEqual(deltas, ['thinking_delta', 'thinking_delta', 'signature_delta', 'text_delta']);
    assert.deepEqual(lastWire().additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 2000 } });
  });

  it("passes adaptive thinking on to Claude as it is (the model decides its budget)", async () => {
    await anthropic().messages.create({ model: 'claude', max_tokens: 4000, thinking: { type: 'adaptive' }, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(lastWire().additionalModelRequestFields, { thinking: { type: 'adaptive' } });
  });

  it('refuses a budget that leaves no room for the answer (budget_tokens >= max_tokens), as Anthropic does', async () => {
    const before = t.upstream.received.length;
    await assert.rejects(anthropic().messages.create({ model: 'claude', max_tokens: 1024, thinking: { type: 'enabled', budget_tokens: 2048 }, messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof Anthropic.BadRequestError);
      assert.match(String(err.message), /budget_tokens/);
      return true;
    });
    assert.equal(t.upstream.received.length, before);
  });

  it('refuses thinking to a Converse model other than Claude (no field carries it) rather than dropping it', async () => {
    const before = t.upstream.received.length;
    const nova = new Anthropic({ baseURL: `${t.gw.base}/nova`, apiKey: 'unused', maxRetries: 0 });
    await assert.rejects(nova.messages.create({ model: 'n', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof Anthropic.BadRequestError);
      assert.match(String(err.message), /`thinking` \(extended thinking\)/);
      return true;
    });
    assert.equal(t.upstream.received.length, before);
  });

  it("an OpenAI client's reasoning_effort becomes Claude's thinking budget, kept below max_tokens", async () => {
    const openai = new OpenAI({ baseURL: `${t.gw.base}/br/v1`, apiKey: 'unused', maxRetries: 0 });
    await openai.chat.completions.create({ model: 'm', max_completion_tokens: 5000, reasoning_effort: 'high', messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(lastWire().additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 4999 } });
    await openai.chat.completions.create({ model: 'm', reasoning_effort: 'low', messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(lastWire().additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 2048 } });
    // No output limit given: Anthropic's default for translated requests, the budget below it.
    assert.deepEqual(lastWire().inferenceConfig, { maxTokens: 4096 });
    await openai.chat.completions.create({ model: 'm', reasoning_effort: 'high', messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(lastWire().additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 4095 } });
    // A tool loop an OpenAI client continues keeps no thinking blocks, which Claude then requires: no thinking asked.
    await openai.chat.completions.create({
      model: 'm',
      reasoning_effort: 'low',
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'tooluse_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'tooluse_1', content: 'sunny' },
      ],
    });
    assert.equal(lastWire().additionalModelRequestFields, undefined);
  });
});

describe('extended thinking to Bedrock Converse (Nova 2): reasoningConfig', () => {
  const t = scriptedAi((host) => [
    aiRoute('/nova2', { name: 'nova2', provider: { bedrock: { region: 'us-east-1', model: 'us.amazon.nova-2-lite-v1:0' } }, hostOverride: host }, { ...AWS_KEYS, testAi: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }),
  ]);
  beforeEach(() => t.answer('application/json', JSON.stringify(CONVERSE_ANSWER)));
  const lastWire = (): Record<string, any> => lastBody(t);

  it("an Anthropic client's thinking becomes Nova's reasoning effort, its budget's bucket (adaptive: its effort); the reasoning answered as thinking", async () => {
    const nova = new Anthropic({ baseURL: `${t.gw.base}/nova2`, apiKey: 'unused', maxRetries: 0 });
    const res = await nova.messages.create({ model: 'n', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(lastWire().additionalModelRequestFields, { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'low' } });
    assert.equal(res.content[0]?.type, 'thinking');
    await nova.messages.create({ model: 'n', max_tokens: 20000, thinking: { type: 'enabled', budget_tokens: 16384 }, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(lastWire().additionalModelRequestFields, { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'high' } });
    // The installed SDK's types predate adaptive thinking: sent as given.
    const adaptive = { thinking: { type: 'adaptive' } } as unknown as { thinking: { type: 'enabled'; budget_tokens: number } };
    await nova.messages.create({ model: 'n', max_tokens: 4000, messages: [{ role: 'user', content: 'hi' }], ...adaptive });
    assert.deepEqual(lastWire().additionalModelRequestFields, { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'medium' } });
  });

  it("an OpenAI client's reasoning_effort: Nova's three levels (minimal is low, xhigh high), none asks for no reasoning", async () => {
    const openai = new OpenAI({ baseURL: `${t.gw.base}/nova2/v1`, apiKey: 'unused', maxRetries: 0 });
    const cases: [string, string | undefined][] = [['minimal', 'low'], ['low', 'low'], ['medium', 'medium'], ['high', 'high'], ['xhigh', 'high'], ['none', undefined]];
    for (const [effort, nova] of cases) {
      const res = await openai.chat.completions.create({ model: 'm', reasoning_effort: effort as 'low', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(res.choices[0]?.message.role, 'assistant');
      const expected = nova === undefined ? undefined : { reasoningConfig: { type: 'enabled', maxReasoningEffort: nova } };
      assert.deepEqual(lastWire().additionalModelRequestFields, expected, effort);
      // The reasoning counts against the output: no limit is added to what the client set.
      assert.equal(lastWire().inferenceConfig, undefined);
    }
  });
});

const GSIG = 'Cq0CAdHtim9Z2VtaW5pLXNpZw==';

/** A Gemini answer: a thought summary, then a call carrying the turn's thought signature. */
const GEMINI_ANSWER = {
  candidates: [
    {
      content: {
        role: 'model',
        parts: [
          { text: 'Weather wanted.', thought: true },
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: GSIG },
        ],
      },
      finishReason: 'STOP',
      index: 0,
    },
  ],
  usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, thoughtsTokenCount: 30, totalTokenCount: 45 },
  modelVersion: 'gemini-2.5-flash',
};

const GEMINI_STREAM = [
  sse(undefined, { candidates: [{ content: { role: 'model', parts: [{ text: 'Weather ', thought: true }] }, index: 0 }] }),
  sse(undefined, { candidates: [{ content: { role: 'model', parts: [{ text: 'wanted.', thought: true }] }, index: 0 }] }),
  sse(undefined, { candidates: [{ content: { role: 'model', parts: [{ text: 'Sunny.', thoughtSignature: GSIG }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 2, thoughtsTokenCount: 30, totalTokenCount: 42 } }),
].join('');

describe('extended thinking to Gemini', () => {
  const t = scriptedAi((host) => [
    aiRoute('/gem', { name: 'gem', provider: { gemini: { model: 'gemini-2.5-flash' } }, hostOverride: host }, { testAi: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }),
  ]);
  beforeEach(() => t.answer('application/json', JSON.stringify(GEMINI_ANSWER)));
  const lastWire = (): Record<string, any> => lastBody(t);
  const anthropic = (): Anthropic => new Anthropic({ baseURL: `${t.gw.base}/gem`, apiKey: 'unused', maxRetries: 0 });

  it("sends an Anthropic client's budget as thinkingConfig (thoughts included) and answers thoughts and the signature as a thinking block", async () => {
    const res = await anthropic().messages.create({ model: 'g', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, tools: TOOLS, messages: [{ role: 'user', content: 'weather in Paris?' }] });
    assert.deepEqual(lastWire().generationConfig, { maxOutputTokens: 4000, thinkingConfig: { thinkingBudget: 2000, includeThoughts: true } });
    assert.deepEqual(res.content.map((b) => b.type), ['thinking', 'tool_use']);
    assert.deepEqual(res.content[0], { type: 'thinking', thinking: 'Weather wanted.', signature: GSIG });
    // Thinking tokens are output tokens.
    assert.equal(res.usage.output_tokens, 35);
  });

  it("sends the signature of the history's thinking block back on the turn's first call (Gemini's function calling with thinking)", async () => {
    await anthropic().messages.create(
      toolTurn('g', [
        { type: 'thinking', thinking: 'Weather wanted.', signature: GSIG },
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      ]),
    );
    assert.deepEqual(lastWire().contents[1], { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: GSIG }] });
  });

  it('streams thoughts as thinking_delta and the signature as signature_delta, before the text', async () => {
    t.answer('text/event-stream', GEMINI_STREAM);
    const stream = anthropic().messages.stream({ model: 'g', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, messages: [{ role: 'user', content: 'weather?' }] });
    const final = await stream.finalMessage();
    assert.deepEqual(final.content, [
      { type: 'thinking', thinking: 'Weather wanted.', signature: GSIG },
      { type: 'text', text: 'Sunny.' },
    ]);
  });

  it("streams a call's thought signature as a thinking block before the tool_use (Claude Code keeps it for the next turn)", async () => {
    t.answer('text/event-stream', sse(undefined, { candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: GSIG }] }, finishReason: 'STOP', index: 0 }] }));
    const final = await anthropic().messages.stream({ model: 'g', max_tokens: 4000, tools: TOOLS, messages: [{ role: 'user', content: 'weather?' }] }).finalMessage();
    assert.deepEqual(final.content.map((b) => b.type), ['thinking', 'tool_use']);
    assert.deepEqual(final.content[0], { type: 'thinking', thinking: '', signature: GSIG });
    assert.equal(final.stop_reason, 'tool_use');
  });

  it("sends adaptive thinking as Gemini's dynamic budget (-1), thoughts included", async () => {
    await anthropic().messages.create({ model: 'g', max_tokens: 4000, thinking: { type: 'adaptive' }, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(lastWire().generationConfig.thinkingConfig, { thinkingBudget: -1, includeThoughts: true });
  });

  it("an OpenAI client's reasoning_effort becomes a thinking budget (its thoughts not asked for)", async () => {
    const openai = new OpenAI({ baseURL: `${t.gw.base}/gem/v1`, apiKey: 'unused', maxRetries: 0 });
    const res = await openai.chat.completions.create({ model: 'g', reasoning_effort: 'medium', messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(lastWire().generationConfig, { thinkingConfig: { thinkingBudget: 8192 } });
    assert.equal(res.choices[0]!.message.tool_calls![0]!.type, 'function');
    // The thoughts as DeepSeek's and vLLM's member; no Anthropic block in an OpenAI answer.
    assert.equal((res.choices[0]!.message as unknown as Record<string, unknown>).reasoning_content, 'Weather wanted.');
    assert.equal((res.choices[0]!.message as unknown as Record<string, unknown>).thinking, undefined);
  });
});

const OPENAI_ANSWER = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'o4-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 40, total_tokens: 43, completion_tokens_details: { reasoning_tokens: 39 } } };

describe('extended thinking to OpenAI', () => {
  const t = scriptedAi((host) => [
    aiRoute('/oa', { name: 'oa', provider: { openAI: { model: 'o4-mini' } }, hostOverride: host }, { testAi: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }),
  ]);
  beforeEach(() => t.answer('application/json', JSON.stringify(OPENAI_ANSWER)));

  it("sends an Anthropic client's budget as reasoning_effort by bucket (below 4096 low, below 16384 medium, else high)", async () => {
    const anthropic = new Anthropic({ baseURL: `${t.gw.base}/oa`, apiKey: 'unused', maxRetries: 0 });
    const sent = async (budget: number): Promise<unknown> => {
      await anthropic.messages.create({ model: 'o4-mini', max_tokens: 20000, thinking: { type: 'enabled', budget_tokens: budget }, messages: [{ role: 'user', content: 'hi' }] });
      return lastBody(t).reasoning_effort;
    };
    assert.deepEqual([await sent(1024), await sent(4096), await sent(16384)], ['low', 'medium', 'high']);
    // Adaptive thinking: its output_config.effort (`max` is `high`), else medium.
    const adaptive = (extra: Record<string, unknown>) => ({ thinking: { type: 'adaptive' as const }, ...extra });
    await anthropic.messages.create({ model: 'o4-mini', max_tokens: 2000, ...adaptive({}), messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(lastBody(t).reasoning_effort, 'medium');
    await anthropic.messages.create({ model: 'o4-mini', max_tokens: 2000, ...adaptive({ output_config: { effort: 'max' } }), messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(lastBody(t).reasoning_effort, 'high');
    // A name that is no effort (an inherited member's, say) is adaptive's default.
    await anthropic.messages.create({ model: 'o4-mini', max_tokens: 2000, ...adaptive({ output_config: { effort: 'constructor' } }), messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(lastBody(t).reasoning_effort, 'medium');
    // No thinking asked: no effort sent.
    await anthropic.messages.create({ model: 'o4-mini', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(lastBody(t).reasoning_effort, undefined);
  });
});

describe('OpenAI clients and Claude (Messages) providers', () => {
  it('reasoning_effort becomes a thinking budget below max_tokens; the answer reasoning comes back as reasoning_content', () => {
    const request = completionsRequestToMessages({ model: 'c', max_completion_tokens: 3000, reasoning_effort: 'medium', messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(request.thinking, { type: 'enabled', budget_tokens: 2999 });
    assert.equal(completionsRequestToMessages({ model: 'c', messages: [{ role: 'user', content: 'hi' }] }).thinking, undefined);
    assert.throws(() => completionsRequestToMessages({ model: 'c', max_tokens: 1000, reasoning_effort: 'low', messages: [{ role: 'user', content: 'hi' }] }), /max_tokens/);
    const answer = messagesResponseToCompletions({ id: 'msg_1', model: 'c', content: [{ type: 'thinking', thinking: 'Hmm.', signature: SIG }, { type: 'text', text: 'Hi.' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 2 } });
    assert.deepEqual(JSON.parse(JSON.stringify(answer.choices[0].message)), { role: 'assistant', content: 'Hi.', reasoning_content: 'Hmm.' });
  });
});

/** Gemini's OpenAI-compatible answer: a call signed in `extra_content` (Gemini 3 wants it back on the next turn). */
const COMPAT_CALL = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' }, extra_content: { google: { thought_signature: GSIG } } };
const COMPAT_ANSWER = {
  id: 'c1',
  object: 'chat.completion',
  created: 1,
  model: 'gemini-3-pro-preview',
  choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [COMPAT_CALL, { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }] }, finish_reason: 'tool_calls' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
};
const compatChunk = (delta: object, finish: string | null = null): string => sse(undefined, { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gemini-3-pro-preview', choices: [{ index: 0, delta, finish_reason: finish }] });
const COMPAT_STREAM = [compatChunk({ role: 'assistant', tool_calls: [{ index: 0, ...COMPAT_CALL }] }), compatChunk({}, 'tool_calls'), 'data: [DONE]\n\n'].join('');

describe("Gemini's OpenAI-compatible endpoint: thought signatures for Anthropic clients", () => {
  const t = scriptedAi((host) => [
    aiRoute('/gc', { name: 'gc', provider: { gemini: { model: 'gemini-3-pro-preview', openAICompatible: true } }, hostOverride: host }, { testAi: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }),
  ]);
  beforeEach(() => t.answer('application/json', JSON.stringify(COMPAT_ANSWER)));
  const lastWire = (): Record<string, any> => lastBody(t);
  const anthropic = (): Anthropic => new Anthropic({ baseURL: `${t.gw.base}/gc`, apiKey: 'unused', maxRetries: 0 });

  it("answers a signed call's signature as a thinking block before the calls, as a native answer's", async () => {
    const res = await anthropic().messages.create({ model: 'g', max_tokens: 4000, tools: TOOLS, messages: [{ role: 'user', content: 'weather in Paris and Rome?' }] });
    assert.deepEqual(res.content.map((b) => b.type), ['thinking', 'tool_use', 'tool_use']);
    assert.deepEqual(res.content[0], { type: 'thinking', thinking: '', signature: GSIG });
  });

  it("sends the thinking block's signature back on the turn's first call, in extra_content", async () => {
    await anthropic().messages.create(
      toolTurn('g', [
        { type: 'thinking', thinking: '', signature: GSIG },
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
      ]),
    );
    const calls = lastWire().messages[1].tool_calls;
    assert.deepEqual(calls[0].extra_content, { google: { thought_signature: GSIG } });
    // Only the first of parallel calls is signed, as Gemini answers them.
    assert.equal(calls[1].extra_content, undefined);
  });

  it('streams the signature as a thinking block (signature_delta) before the call', async () => {
    t.answer('text/event-stream', COMPAT_STREAM);
    const stream = anthropic().messages.stream({ model: 'g', max_tokens: 4000, tools: TOOLS, messages: [{ role: 'user', content: 'weather in Paris?' }] });
    const message = await stream.finalMessage();
    assert.deepEqual(message.content.map((b) => b.type), ['thinking', 'tool_use']);
    assert.deepEqual(message.content[0], { type: 'thinking', thinking: '', signature: GSIG });
  });
});
