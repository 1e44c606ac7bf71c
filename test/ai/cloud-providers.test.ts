// The cloud providers: azureOpenAI (paths, key header), bedrock (Converse, AWS event streams, SigV4 by default) and
// vertex (OpenAI-compatible endpoint, Google token by default). aimock plays Azure and Bedrock; Vertex's
// OpenAI-compatible path is not in aimock, so a loopback stand-in answers it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGceMetadata } from '../helpers/gce-metadata.ts';
import { verifySigV4 } from '../helpers/sigv4.ts';
import { createVertexProvider } from '../../plugins/llm-providers/vertex/vertex.ts';
import { countTokensModel, withCountBetas } from '../../plugins/llm-providers/bedrock/count-tokens.ts';
import type { GceMetadata } from '../helpers/gce-metadata.ts';
import { accessRecords, aiRoute, recordedAi, startAiGateway, startMock, startRecorder, withEnv } from './harness.ts';
import { converseTools } from './stream-fixtures.ts';
import { scrape, value } from '../helpers/metrics.ts';
import type { AiGateway, Mock, Recorder } from './harness.ts';

const AWS_KEYS = { backendAuth: { aws: { accessKeyId: 'AKIDEXPLICIT', secretAccessKey: 'explicit-secret', region: 'us-east-1', serviceName: 'bedrock' } } };

/** An Entra ID access token's shape (a JWT), as `backendAuth.azure` sets it. */
const ENTRA_TOKEN = `eyJhbGciOiJSUzI1NiJ9.${Buffer.from('{"aud":"https://cognitiveservices.azure.com"}').toString('base64url')}.c2ln`;

describe('azureOpenAI provider', () => {
  const t = recordedAi((hostPort) => [
    aiRoute('/dated', { name: 'dated', provider: { azureOpenAI: { host: 'my-res.openai.azure.com', apiVersion: '2024-10-21', model: 'my-deployment' } }, hostOverride: hostPort }),
    aiRoute('/v1api', { name: 'v1api', provider: { vendorSix: { host: 'https://my-res.openai.azure.com' } }, hostOverride: hostPort }),
    aiRoute('/keyed', { name: 'keyed', provider: { azureOpenAI: { host: 'my-res.openai.azure.com', apiVersion: '2024-10-21' } }, hostOverride: hostPort }, { backendAuth: { key: 'azure-key-from-policy' } }),
    aiRoute('/entra', { name: 'entra', provider: { azureOpenAI: { host: 'my-res.openai.azure.com' } }, hostOverride: hostPort }, { backendAuth: { key: ENTRA_TOKEN } }),
    aiRoute('/datedresp', { name: 'datedresp', provider: { azureOpenAI: { host: 'my-res.openai.azure.com', apiVersion: '2024-10-21', model: 'my-deployment' } }, hostOverride: hostPort }, { testAi: { routes: { '/v1/responses': 'responses', '*': 'completions' } } }),
  ]);

  it('sends a dated-version request to the deployment path with the key in api-key', async () => {
    const client = new OpenAI({ baseURL: `${t.gw.base}/dated/v1`, apiKey: 'azure-client-key', maxRetries: 0 });
    const res = await client.chat.completions.create({ model: 'ignored', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    const wire = t.rec.last();
    assert.equal(wire.url, '/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21');
    assert.equal(wire.headers['api-key'], 'azure-client-key');
    assert.equal(wire.headers.authorization, undefined);
    const [log] = await accessRecords(t.gw, '/dated/v1/chat/completions');
    assert.equal(log!['llm.provider'], 'azure.openai');
    assert.equal(log!['llm.model'], 'my-deployment');
    assert.equal(log!['llm.inputTokens'], 11);
    // OTel's GenAI name for Azure OpenAI on the gen_ai_* series (ADR 0171); the gateway's own keep the reference's name.
    const m = await scrape(t.gw);
    const genAi = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'azure.ai.openai', gen_ai_request_model: 'my-deployment' };
    assert.ok((value(m, 'gen_ai_client_operation_duration_seconds_count', { ...genAi, error_type: '' }) ?? 0) >= 1);
    assert.ok((value(m, 'switchyard_llm_requests_total', { provider: 'azure.openai', model: 'my-deployment', streaming: 'false' }) ?? 0) >= 1);
  });

  it('sends a Responses client on a dated apiVersion (older than the Responses API) to the v1 path, the deployment in the body', async () => {
    const client = new OpenAI({ baseURL: `${t.gw.base}/datedresp/v1`, apiKey: 'azure-client-key', maxRetries: 0 });
    const res = await client.responses.create({ model: 'ignored', input: 'hello' });
    assert.equal(res.output_text, 'Hello from the mock!');
    const wire = t.rec.last();
    assert.equal(wire.url, '/openai/v1/responses');
    assert.equal(wire.json().model, 'my-deployment');
    assert.equal(wire.headers['api-key'], 'azure-client-key');
    // Chat Completions keep the dated deployment path.
    await client.chat.completions.create({ model: 'ignored', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(t.rec.last().url, '/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21');
  });

  it('uses the v1 API by default, with the model in the body', async () => {
    const client = new OpenAI({ baseURL: `${t.gw.base}/v1api/v1`, apiKey: 'azure-client-key', maxRetries: 0 });
    await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    const wire = t.rec.last();
    assert.equal(wire.url, '/openai/v1/chat/completions');
    assert.equal(wire.json().model, 'gpt-4o');
    assert.equal(wire.headers['api-key'], 'azure-client-key');
  });

  it('keeps an Entra ID token (a JWT) in Authorization', async () => {
    const jwt = `eyJhbGciOiJSUzI1NiJ9.${Buffer.from('{"aud":"https://cognitiveservices.azure.com"}').toString('base64url')}.c2ln`;
    const client = new OpenAI({ baseURL: `${t.gw.base}/v1api/v1`, apiKey: jwt, maxRetries: 0 });
    await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    const h = t.rec.last().headers;
    assert.equal(h.authorization, `Bearer ${jwt}`);
    assert.equal(h['api-key'], undefined);
  });

  it("sends the gateway's Entra token alone: a client's api-key does not go beside it", async () => {
    const res = await fetch(`${t.gw.base}/entra/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'api-key': 'client-own-key' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }) });
    assert.equal(res.status, 200);
    const wire = t.rec.last();
    assert.equal(wire.headers.authorization, `Bearer ${ENTRA_TOKEN}`);
    assert.equal(wire.headers['api-key'], undefined);
  });

  it('moves a backendAuth key into api-key', async () => {
    const res = await fetch(`${t.gw.base}/keyed/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'dep2', messages: [{ role: 'user', content: 'hello' }] }) });
    assert.equal(res.status, 200);
    const wire = t.rec.last();
    assert.equal(wire.url, '/openai/deployments/dep2/chat/completions?api-version=2024-10-21');
    assert.equal(wire.headers['api-key'], 'azure-key-from-policy');
    assert.equal(wire.headers.authorization, undefined);
  });
});

describe('bedrock provider (Converse)', () => {
  let mock: Mock;
  let rec: Recorder;
  let gw: AiGateway;
  let env: { restore(): void };

  before(async () => {
    // The default credential chain's first source: the environment.
    env = withEnv({ AWS_ACCESS_KEY_ID: 'AKIDFROMENV', AWS_SECRET_ACCESS_KEY: 'env-secret', AWS_SESSION_TOKEN: undefined, AWS_PROFILE: undefined });
    mock = await startMock();
    rec = await startRecorder(mock.url);
    gw = await startAiGateway([
      aiRoute('/br', { name: 'br', provider: { bedrock: { region: 'us-east-1' } }, hostOverride: rec.hostPort }, AWS_KEYS),
      aiRoute('/brm', { name: 'brm', provider: { vendorFive: { region: 'us-east-1', model: 'anthropic.claude-3-haiku-20240307-v1:0' } }, hostOverride: rec.hostPort }, { ...AWS_KEYS, testAi: { routes: { '/v1/messages': 'messages' } } }),
      aiRoute('/implicit', { name: 'implicit', provider: { bedrock: { region: 'eu-west-1' } }, hostOverride: rec.hostPort }),
      aiRoute('/session', { name: 'session', provider: { bedrock: { region: 'us-west-2' } }, hostOverride: rec.hostPort }, {
        backendAuth: { aws: { accessKeyId: 'ASIASESSION', secretAccessKey: 'session-secret', sessionToken: 'session-token', region: 'us-west-2', serviceName: 'bedrock' } },
      }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await rec?.close();
    await mock?.stop();
    env?.restore();
  });

  const client = (prefix: string): OpenAI => new OpenAI({ baseURL: `${gw.base}${prefix}/v1`, apiKey: 'unused', maxRetries: 0 });

  it('translates a completion to /model/<id>/converse, signed with the backendAuth keys', async () => {
    const res = await client('/br').chat.completions.create({
      model: 'amazon.nova-lite-v1:0',
      max_tokens: 64,
      temperature: 0.5,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello' },
      ],
    });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(res.model, 'amazon.nova-lite-v1:0');
    assert.deepEqual(res.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    const wire = rec.last();
    assert.equal(wire.url, '/model/amazon.nova-lite-v1%3A0/converse');
    assert.deepEqual(wire.json(), {
      messages: [{ role: 'user', content: [{ text: 'hello' }] }],
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { maxTokens: 64, temperature: 0.5 },
    });
    assert.match(String(wire.headers.authorization), /^AWS4-HMAC-SHA256 Credential=AKIDEXPLICIT\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
    assert.ok(wire.headers['x-amz-date']);
    const [log] = await accessRecords(gw, '/br/v1/chat/completions');
    assert.equal(log!['llm.provider'], 'aws.bedrock');
    assert.equal(log!['llm.inputTokens'], 11);
    assert.equal(log!['llm.outputTokens'], 5);
  });

  it('translates tools to toolConfig and a toolUse back to tool_calls', async () => {
    const res = await client('/br').chat.completions.create({
      model: 'amazon.nova-lite-v1:0',
      tool_choice: 'auto',
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      messages: [{ role: 'user', content: 'weather' }],
    });
    const call = res.choices[0]!.message.tool_calls![0]!;
    assert.ok(call.type === 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
    assert.equal(res.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(rec.last().json().toolConfig, {
      tools: [{ toolSpec: { name: 'get_weather', inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } } } }, description: 'Weather' } }],
      toolChoice: { auto: {} },
    });
  });

  it('streams: decodes the AWS event stream from /converse-stream into chat.completion.chunks', async () => {
    const stream = await client('/br').chat.completions.create({ model: 'amazon.nova-lite-v1:0', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    let usage: unknown;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, 'Hello from the mock!');
    assert.equal(finish, 'stop');
    assert.deepEqual(usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    assert.equal(rec.last().url, '/model/amazon.nova-lite-v1%3A0/converse-stream');
    const logs = await accessRecords(gw, '/br/v1/chat/completions', 3);
    const log = logs[logs.length - 1]!;
    assert.equal(log['llm.streaming'], true);
    assert.equal(log['llm.outputTokens'], 5);
  });

  it('serves an Anthropic client (Messages → Converse → Messages), streamed', async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/brm`, apiKey: 'unused', maxRetries: 0 });
    const stream = anthropic.messages.stream({ model: 'claude', max_tokens: 32, system: 'Be brief.', messages: [{ role: 'user', content: 'hello' }] });
    const final = await stream.finalMessage();
    assert.deepEqual(final.content, [{ type: 'text', text: 'Hello from the mock!' }]);
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(final.usage.output_tokens, 5);
    const wire = rec.last();
    assert.equal(wire.url, '/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream');
    assert.deepEqual(wire.json().system, [{ text: 'Be brief.' }]);
    assert.deepEqual(wire.json().inferenceConfig, { maxTokens: 32 });
  });

  it("marks an Anthropic client's failed tool result (is_error) as Converse's status: error", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/brm`, apiKey: 'unused', maxRetries: 0 });
    await anthropic.messages.create({
      model: 'claude',
      max_tokens: 32,
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Atlantis' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', is_error: true, content: 'no such city' }] },
      ],
    });
    const messages = rec.last().json().messages as { content: Record<string, unknown>[] }[];
    assert.deepEqual(messages[2]!.content, [{ toolResult: { toolUseId: 'toolu_1', content: [{ text: 'no such city' }], status: 'error' } }]);
  });

  it("carries an Anthropic client's anthropic-beta and top_k to a Claude model in additionalModelRequestFields", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/brm`, apiKey: 'unused', maxRetries: 0 });
    const betas = ['interleaved-thinking-2025-05-14', 'context-1m-2025-08-07'];
    // A Messages API member this SDK version's types do not list: spread in, sent as written.
    const topK: Record<string, unknown> = { top_k: 40 };
    await anthropic.beta.messages.create({ model: 'claude', max_tokens: 32, ...topK, betas, messages: [{ role: 'user', content: 'hello' }] });
    const wire = rec.last();
    // Bedrock takes Claude's betas and top_k as model fields; the header is not Bedrock's (and not signed).
    assert.deepEqual(wire.json().additionalModelRequestFields, { top_k: 40, anthropic_beta: betas });
    assert.equal(wire.headers['anthropic-beta'], undefined);
  });

  it('sends no Claude-only model fields to another model (anthropic-beta and top_k dropped)', async () => {
    await client('/br').chat.completions.create({ model: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: 'hello' }], top_k: 40 } as OpenAI.ChatCompletionCreateParamsNonStreaming, { headers: { 'anthropic-beta': 'context-1m-2025-08-07' } });
    const wire = rec.last();
    assert.equal(wire.json().additionalModelRequestFields, undefined);
    assert.equal(wire.headers['anthropic-beta'], undefined);
    // A Claude model on the same route (a system-defined inference profile ARN) gets them.
    await client('/br').chat.completions.create({ model: 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-haiku-20240307-v1:0', messages: [{ role: 'user', content: 'hello' }], top_k: 5 } as OpenAI.ChatCompletionCreateParamsNonStreaming, { headers: { 'anthropic-beta': 'oauth-2025-04-20, output-128k-2025-02-19,effort-2025-11-24' } });
    // Betas Bedrock does not document for Claude are dropped: it refuses the whole request for one (`invalid beta flag`).
    assert.deepEqual(rec.last().json().additionalModelRequestFields, { top_k: 5, anthropic_beta: ['output-128k-2025-02-19', 'effort-2025-11-24'] });
  });

  it('translates a Bedrock error into the OpenAI error shape', async () => {
    await assert.rejects(client('/br').chat.completions.create({ model: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: 'boom' }] }), (err) => {
      assert.ok(err instanceof OpenAI.RateLimitError);
      assert.equal((err.error as { message: string }).message, 'rate limited');
      return true;
    });
  });

  it('signs an inference-profile ARN (`:` and `/` in one encoded path segment) with a session token, as SigV4 computes it', async () => {
    const arn = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-haiku-20240307-v1:0';
    const res = await client('/session').chat.completions.create({ model: arn, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    const wire = rec.last();
    assert.equal(wire.url, `/model/${encodeURIComponent(arn)}/converse`);
    assert.equal(wire.headers['x-amz-security-token'], 'session-token');
    const check = verifySigV4({ method: wire.method, url: wire.url, headers: wire.headers, body: wire.body }, 'session-secret');
    assert.ok(check.ok, check.problem ?? `signature ${check.signature} is not ${check.expected}`);
    assert.equal(check.region, 'us-west-2');
    assert.ok(check.signedHeaders!.includes('x-amz-security-token'));
  });

  it("sends no client key beside the signature (an Azure or Gemini SDK's key header)", async () => {
    const res = await fetch(`${gw.base}/br/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'api-key': 'client-azure-key', 'x-goog-api-key': 'client-google-key', 'x-api-key': 'client-anthropic-key' },
      body: JSON.stringify({ model: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(res.status, 200);
    const wire = rec.last();
    for (const name of ['api-key', 'x-goog-api-key', 'x-api-key']) assert.equal(wire.headers[name], undefined, name);
    const check = verifySigV4({ method: wire.method, url: wire.url, headers: wire.headers, body: wire.body }, 'explicit-secret');
    assert.ok(check.ok, check.problem);
  });

  it('signs with the AWS default credential chain when no backendAuth applies', async () => {
    const res = await client('/implicit').chat.completions.create({ model: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.match(String(rec.last().headers.authorization), /^AWS4-HMAC-SHA256 Credential=AKIDFROMENV\/\d{8}\/eu-west-1\/bedrock\/aws4_request/);
  });
});

describe('vertex provider', () => {
  let upstream: TestUpstream;
  let gw: AiGateway;
  let metadata: GceMetadata;
  const claudeMessage = { id: 'msg_v', type: 'message', role: 'assistant', model: 'claude-sonnet-4@20250514', content: [{ type: 'text', text: 'hi from claude' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 6, output_tokens: 4 } };
  const completion = { id: 'c1', object: 'chat.completion', created: 1, model: 'google/gemini-2.5-flash', choices: [{ index: 0, message: { role: 'assistant', content: 'hi from vertex' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } };

  before(async () => {
    metadata = await startGceMetadata('ya29.vertex-token');
    upstream = await startUpstream((req, res) => {
      if (req.url!.endsWith(':countTokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ totalTokens: 5, totalBillableCharacters: 20 }));
      }
      if (req.url!.endsWith('/count-tokens:rawPredict')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ input_tokens: 14 }));
      }
      if (req.url!.endsWith(':rawPredict')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify(claudeMessage));
      }
      if (req.url!.endsWith(':streamRawPredict')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const ev = (type: string, data: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
        return void res.end(
          ev('message_start', { message: { ...claudeMessage, content: [], stop_reason: null, usage: { input_tokens: 6, output_tokens: 0 } } }) +
            ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
            ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'hi from claude' } }) +
            ev('content_block_stop', { index: 0 }) +
            ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } }) +
            ev('message_stop', {}),
        );
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(completion));
    });
    gw = await startAiGateway([
      aiRoute('/vx', { name: 'vx', provider: { vertex: { projectId: 'my-proj', region: 'us-central1', openAICompatible: true } }, hostOverride: `127.0.0.1:${upstream.port}` }, { backendAuth: { key: 'Bearer static-token' }, testAi: { routes: { '/v1/messages': 'messages', '/v1/messages/count_tokens': 'anthropicTokenCount' } } }),
      aiRoute('/vxg', { name: 'vxg', provider: { vendorFour: { projectId: 'my-proj', model: 'meta/llama-3.1-8b-instruct-maas' } }, hostOverride: `127.0.0.1:${upstream.port}` }),
      aiRoute('/vxp', { name: 'vxp', provider: { vertex: { projectId: 'my-proj' } }, hostOverride: `127.0.0.1:${upstream.port}` }, { testAi: { routes: { '*': 'passthrough' } } }),
      aiRoute('/vxk', { name: 'vxk', provider: { vertex: { projectId: 'my-proj' } }, hostOverride: `127.0.0.1:${upstream.port}` }, { backendAuth: { key: 'AIzaExpressKey' }, testAi: { routes: { '*': 'passthrough' } } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await metadata?.close();
  });

  it("reaches a location's host: regional, global, and the `us` and `eu` multi-regions on their `rep` hosts", () => {
    const origin = (region?: string): string => createVertexProvider({ projectId: 'p', region }).origin;
    assert.equal(origin('us-central1'), 'https://us-central1-aiplatform.googleapis.com');
    assert.equal(origin(), 'https://aiplatform.googleapis.com');
    assert.equal(origin('global'), 'https://aiplatform.googleapis.com');
    assert.equal(origin('eu'), 'https://aiplatform.eu.rep.googleapis.com');
    assert.equal(origin('us'), 'https://aiplatform.us.rep.googleapis.com');
  });

  it('sends completions to the regional OpenAI-compatible endpoint with a publisher-qualified model', async () => {
    const client = new OpenAI({ baseURL: `${gw.base}/vx/v1`, apiKey: 'unused', maxRetries: 0 });
    const res = await client.chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'hi from vertex');
    const got = upstream.received[upstream.received.length - 1]!;
    assert.equal(got.url, '/v1/projects/my-proj/locations/us-central1/endpoints/openapi/chat/completions');
    assert.equal(JSON.parse(got.body.toString()).model, 'google/gemini-2.5-flash');
    assert.equal(got.headers.authorization, 'Bearer static-token', 'backendAuth replaces the default Google credential');
    const [log] = await accessRecords(gw, '/vx/v1/chat/completions');
    assert.equal(log!['llm.provider'], 'gcp.vertex_ai');
    assert.equal(log!['llm.model'], 'gemini-2.5-flash');
    assert.equal(log!['llm.inputTokens'], 3);
  });

  it('uses the global location and a Google access token from the default credentials', async () => {
    const res = await fetch(`${gw.base}/vxg/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }] }) });
    assert.equal(res.status, 200);
    const got = upstream.received[upstream.received.length - 1]!;
    assert.equal(got.url, '/v1/projects/my-proj/locations/global/endpoints/openapi/chat/completions');
    assert.equal(JSON.parse(got.body.toString()).model, 'meta/llama-3.1-8b-instruct-maas', 'a qualified model is kept');
    assert.equal(got.headers.authorization, 'Bearer ya29.vertex-token');
  });

  it('sends Claude models to Anthropic\'s publisher endpoint in the Messages format (rawPredict)', async () => {
    const client = new OpenAI({ baseURL: `${gw.base}/vx/v1`, apiKey: 'unused', maxRetries: 0 });
    const res = await client.chat.completions.create({ model: 'claude-sonnet-4@20250514', max_tokens: 20, messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'hi from claude');
    assert.deepEqual(res.usage, { prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 });
    const got = upstream.received[upstream.received.length - 1]!;
    assert.equal(got.url, '/v1/projects/my-proj/locations/us-central1/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict');
    assert.deepEqual(JSON.parse(got.body.toString()), { messages: [{ role: 'user', content: 'hello' }], system: 'sys', max_tokens: 20, anthropic_version: 'vertex-2023-10-16' });
    assert.equal(got.headers.authorization, 'Bearer static-token', 'a Google token is never moved to x-api-key');
  });

  it("keeps an Anthropic client's anthropic-beta on Claude models (Vertex enables beta features by it)", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/vx`, apiKey: 'unused', maxRetries: 0 });
    const res = await anthropic.beta.messages.create({ model: 'claude-sonnet-4@20250514', max_tokens: 20, betas: ['context-1m-2025-08-07'], messages: [{ role: 'user', content: 'hello' }] });
    assert.deepEqual(res.content, [{ type: 'text', text: 'hi from claude' }]);
    const got = upstream.received[upstream.received.length - 1]!;
    assert.match(got.url, /publishers\/anthropic\/models\/claude-sonnet-4@20250514:rawPredict$/);
    assert.equal(got.headers['anthropic-beta'], 'context-1m-2025-08-07');
    assert.equal(got.headers['anthropic-version'], undefined, 'the version goes in the body');
    assert.equal(JSON.parse(got.body.toString()).anthropic_version, 'vertex-2023-10-16');
  });

  it("counts an Anthropic client's tokens on Claude's count-tokens endpoint (the model in the body)", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/vx`, apiKey: 'unused', maxRetries: 0 });
    const res = await anthropic.messages.countTokens({ model: 'claude-sonnet-4@20250514', system: 'sys', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.input_tokens, 14);
    const got = upstream.received[upstream.received.length - 1]!;
    assert.equal(got.url, '/v1/projects/my-proj/locations/us-central1/publishers/anthropic/models/count-tokens:rawPredict');
    assert.deepEqual(JSON.parse(got.body.toString()), { model: 'claude-sonnet-4@20250514', system: 'sys', messages: [{ role: 'user', content: 'hello' }], anthropic_version: 'vertex-2023-10-16' });
    assert.equal(got.headers.authorization, 'Bearer static-token');
  });

  it("passthrough keys as the API its path names: Claude's anthropic-beta kept beside the Google token; an express-mode key in x-goog-api-key", async () => {
    const claude = '/v1/projects/my-proj/locations/global/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict';
    const body = JSON.stringify({ anthropic_version: 'vertex-2023-10-16', max_tokens: 8, messages: [{ role: 'user', content: 'hello' }] });
    let res = await fetch(`${gw.base}/vxp${claude}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-beta': 'context-1m-2025-08-07', 'x-goog-api-key': 'client-key' }, body });
    assert.equal(res.status, 200);
    let got = upstream.received[upstream.received.length - 1]!;
    assert.equal(got.headers['anthropic-beta'], 'context-1m-2025-08-07');
    assert.equal(got.headers.authorization, 'Bearer ya29.vertex-token');
    assert.equal(got.headers['x-goog-api-key'], undefined);
    res = await fetch(`${gw.base}/vxk/v1/publishers/google/models/gemini-2.5-flash:generateContent?key=AIzaClientKey`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ contents: [] }) });
    assert.equal(res.status, 200);
    got = upstream.received[upstream.received.length - 1]!;
    assert.equal(got.headers['x-goog-api-key'], 'AIzaExpressKey');
    assert.equal(got.headers.authorization, undefined);
    assert.equal(got.url, '/vxk/v1/publishers/google/models/gemini-2.5-flash:generateContent');
  });

  it("counts an Anthropic client's tokens for a Gemini model on Vertex's countTokens (contents, system and tools at the top)", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/vx`, apiKey: 'unused', maxRetries: 0 });
    const res = await anthropic.messages.countTokens({ model: 'gemini-2.5-flash', system: 'sys', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.input_tokens, 5);
    const got = upstream.received[upstream.received.length - 1]!;
    assert.equal(got.url, '/v1/projects/my-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:countTokens');
    assert.deepEqual(JSON.parse(got.body.toString()), { contents: [{ role: 'user', parts: [{ text: 'hello' }] }], systemInstruction: { parts: [{ text: 'sys' }] } });
  });

  it('streams Claude on Vertex through streamRawPredict', async () => {
    const client = new OpenAI({ baseURL: `${gw.base}/vx/v1`, apiKey: 'unused', maxRetries: 0 });
    let text = '';
    let usage: unknown;
    for await (const c of await client.chat.completions.create({ model: 'claude-sonnet-4@20250514', stream: true, messages: [{ role: 'user', content: 'hello' }] })) {
      text += c.choices[0]?.delta.content ?? '';
      if (c.usage) usage = c.usage;
    }
    assert.equal(text, 'hi from claude');
    assert.deepEqual(usage, { prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 });
    assert.match(upstream.received[upstream.received.length - 1]!.url, /:streamRawPredict$/);
  });
});

describe('bedrock streams off the wire: frames split across TCP writes, parallel tool calls, a bad checksum', () => {
  /** Text, two tool calls (the first's input in two pieces, the second with none); usage with cache reads. */
  const TOOLS = converseTools({ inputTokens: 30, outputTokens: 9, cacheReadInputTokens: 20, totalTokens: 59 });
  let upstream: TestUpstream;
  let gw: AiGateway;
  let corrupt = false;

  before(async () => {
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
      const bytes = Buffer.from(TOOLS);
      // A flipped bit in the second message's payload: its message CRC no longer matches.
      if (corrupt) bytes[bytes.indexOf('Checking.')] ^= 0x01;
      let at = 0;
      // 7-byte writes, each flushed on its own turn: preludes, headers and payloads arrive in pieces.
      const next = (): void => {
        if (at >= bytes.length) return void res.end();
        res.write(bytes.subarray(at, (at += 7)));
        setImmediate(next);
      };
      next();
    });
    gw = await startAiGateway([
      aiRoute('/bs', { name: 'bs', provider: { bedrock: { region: 'us-east-1', model: 'anthropic.claude-3-haiku-20240307-v1:0' } }, hostOverride: `127.0.0.1:${upstream.port}` }, { ...AWS_KEYS, testAi: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('an OpenAI client gets the text and both calls by index, the arguments whole, tool_calls and the usage', async () => {
    corrupt = false;
    const openai = new OpenAI({ baseURL: `${gw.base}/bs/v1`, apiKey: 'unused', maxRetries: 0 });
    const stream = openai.chat.completions.stream({ model: 'm', messages: [{ role: 'user', content: 'weather and time' }], stream_options: { include_usage: true } });
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0]!.message.content, 'Checking.');
    const calls = final.choices[0]!.message.tool_calls!.map((c) => (c.type === 'function' ? [c.id, c.function.name, JSON.parse(c.function.arguments)] : []));
    assert.deepEqual(calls, [
      ['tooluse_a', 'get_weather', { city: 'Paris' }],
      ['tooluse_b', 'get_time', {}],
    ]);
    assert.equal(final.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(final.usage, { prompt_tokens: 50, completion_tokens: 9, total_tokens: 59, prompt_tokens_details: { cached_tokens: 20 } });
    const [log] = await accessRecords(gw, '/bs/v1/chat/completions');
    assert.equal(log!['llm.inputTokens'], 50);
    assert.equal(log!['llm.cachedInputTokens'], 20);
    assert.equal(log!['llm.outputTokens'], 9);
  });

  it('an Anthropic client gets the text and two tool_use blocks with their input, stop_reason tool_use and the cache reads', async () => {
    corrupt = false;
    const anthropic = new Anthropic({ baseURL: `${gw.base}/bs`, apiKey: 'unused', maxRetries: 0 });
    const final = await anthropic.messages.stream({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'weather and time' }] }).finalMessage();
    assert.deepEqual(
      final.content.map((b) => (b.type === 'tool_use' ? [b.id, b.name, b.input] : b.type === 'text' ? [b.text] : [b.type])),
      [
        ['Checking.'],
        ['tooluse_a', 'get_weather', { city: 'Paris' }],
        ['tooluse_b', 'get_time', {}],
      ],
    );
    assert.equal(final.stop_reason, 'tool_use');
    assert.equal(final.usage.input_tokens, 30);
    assert.equal(final.usage.cache_read_input_tokens, 20);
    assert.equal(final.usage.output_tokens, 9);
  });

  it('a message whose checksum fails breaks the stream off: the client sees no complete answer', async () => {
    corrupt = true;
    const openai = new OpenAI({ baseURL: `${gw.base}/bs/v1`, apiKey: 'unused', maxRetries: 0 });
    const chunks: unknown[] = [];
    await assert.rejects(async () => {
      for await (const c of await openai.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'weather and time' }] })) chunks.push(c);
    });
    assert.ok(!chunks.some((c) => (c as { choices: { finish_reason: string | null }[] }).choices[0]?.finish_reason), 'no finish reason was made up');
    const logs = await accessRecords(gw, '/bs/v1/chat/completions', 2);
    assert.match(String(logs[logs.length - 1]!.error), /checksum|upstream stream failed/);
  });
});

describe("bedrock: an Anthropic client's count_tokens on Bedrock's CountTokens API", () => {
  let upstream: TestUpstream;
  let gw: AiGateway;
  const KEYS = { backendAuth: { aws: { accessKeyId: 'AKIDCOUNT', secretAccessKey: 'count-secret', region: 'us-east-1', serviceName: 'bedrock' } } };
  const ROUTES = { testAi: { routes: { '/v1/messages/count_tokens': 'anthropicTokenCount', '/v1/messages': 'messages' } } };

  before(async () => {
    upstream = await startUpstream((req, res, body) => {
      // Bedrock's CountTokens: `{input: {invokeModel: {body: "<InvokeModel body as a string>"}}}` → `{inputTokens}`.
      const parsed = JSON.parse(body.toString()) as { input?: { invokeModel?: { body?: unknown } } };
      if (!req.url!.endsWith('/count-tokens') || typeof parsed.input?.invokeModel?.body !== 'string' || req.url!.includes('nova')) {
        res.writeHead(400, { 'content-type': 'application/json', 'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/' });
        return void res.end(JSON.stringify({ message: 'The provided model doesn\'t support counting tokens.' }));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ inputTokens: 42 }));
    });
    gw = await startAiGateway([
      aiRoute('/bc', { name: 'bc', provider: { bedrock: { region: 'us-east-1', model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' } }, hostOverride: `127.0.0.1:${upstream.port}` }, { ...KEYS, ...ROUTES }),
      aiRoute('/bn', { name: 'bn', provider: { bedrock: { region: 'us-east-1' } }, hostOverride: `127.0.0.1:${upstream.port}` }, { ...KEYS, ...ROUTES }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('counts through /model/<id>/count-tokens, the Messages body as the InvokeModel body, signed; the answer in Anthropic terms', async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/bc`, apiKey: 'unused', maxRetries: 0 });
    const tools = [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }];
    const res = await anthropic.messages.countTokens({ model: 'claude-sonnet-4-5', system: 'Be brief.', tools, messages: [{ role: 'user', content: 'hello' }] });
    assert.deepEqual(res, { input_tokens: 42 });
    const got = upstream.received[upstream.received.length - 1]!;
    // CountTokens takes foundation-model ids: the inference profile's geography prefix is not part of it.
    assert.equal(got.url, `/model/${encodeURIComponent('anthropic.claude-sonnet-4-5-20250929-v1:0')}/count-tokens`);
    const wire = JSON.parse(got.body.toString()) as { input: { invokeModel: { body: string } } };
    assert.deepEqual(Object.keys(wire), ['input']);
    assert.deepEqual(JSON.parse(wire.input.invokeModel.body), {
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 1,
      system: 'Be brief.',
      tools,
      messages: [{ role: 'user', content: 'hello' }],
    });
    const check = verifySigV4({ method: got.method, url: got.url, headers: got.headers, body: got.body }, 'count-secret');
    assert.ok(check.ok, check.problem ?? `signature ${check.signature} is not ${check.expected}`);
    assert.equal(got.headers['anthropic-version'], undefined);
  });

  it("carries an Anthropic client's betas into the InvokeModel body (anthropic_beta), as Bedrock takes them", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/bc`, apiKey: 'unused', maxRetries: 0 });
    const res = await anthropic.beta.messages.countTokens({ model: 'claude-sonnet-4-5', betas: ['context-1m-2025-08-07'], messages: [{ role: 'user', content: 'hello' }] });
    assert.deepEqual(res, { input_tokens: 42 });
    const got = upstream.received[upstream.received.length - 1]!;
    const wire = JSON.parse(got.body.toString()) as { input: { invokeModel: { body: string } } };
    // The SDK adds `token-counting-2024-11-01`, Anthropic's own: not sent to Bedrock.
    assert.deepEqual(JSON.parse(wire.input.invokeModel.body), {
      anthropic_beta: ['context-1m-2025-08-07'],
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 1,
      messages: [{ role: 'user', content: 'hello' }],
    });
    assert.equal(got.headers['anthropic-beta'], undefined);
    // A body that named betas itself gets one merged list, not the member twice.
    const own = { input: { invokeModel: { body: JSON.stringify({ anthropic_version: 'v', anthropic_beta: ['effort-2025-11-24'], messages: [] }) } } };
    withCountBetas(own, ['effort-2025-11-24', 'context-1m-2025-08-07']);
    assert.deepEqual(JSON.parse(own.input.invokeModel.body), { anthropic_version: 'v', anthropic_beta: ['effort-2025-11-24', 'context-1m-2025-08-07'], messages: [] });
  });

  it('names a system-defined inference profile (id or ARN) by its foundation model; other ids and ARNs as they are', () => {
    assert.equal(countTokensModel('us.anthropic.claude-sonnet-4-5-20250929-v1:0'), 'anthropic.claude-sonnet-4-5-20250929-v1:0');
    assert.equal(countTokensModel('global.anthropic.claude-haiku-4-5-20251001-v1:0'), 'anthropic.claude-haiku-4-5-20251001-v1:0');
    assert.equal(countTokensModel('arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-3-haiku-20240307-v1:0'), 'anthropic.claude-3-haiku-20240307-v1:0');
    assert.equal(countTokensModel('anthropic.claude-3-haiku-20240307-v1:0'), 'anthropic.claude-3-haiku-20240307-v1:0');
    assert.equal(countTokensModel('meta.llama3-1-8b-instruct-v1:0'), 'meta.llama3-1-8b-instruct-v1:0', 'a provider named like a geography is kept');
    const app = 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3';
    assert.equal(countTokensModel(app), app);
  });

  it("a Bedrock refusal reaches the client as Anthropic's error (BadRequestError)", async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.base}/bn`, apiKey: 'unused', maxRetries: 0 });
    // A Nova model: Bedrock counts Claude models only, and refuses it.
    upstream.received.length = 0;
    await assert.rejects(anthropic.messages.countTokens({ model: 'amazon.nova-lite-v1:0', messages: [{ role: 'user', content: 'hello' }] }), (err) => {
      assert.ok(err instanceof Anthropic.BadRequestError, String(err));
      assert.match(err.message, /doesn't support counting tokens/);
      return true;
    });
    assert.equal(upstream.received.length, 1, 'Bedrock was asked');
  });
});
