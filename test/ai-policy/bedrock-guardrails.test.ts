// The `bedrockGuardrails` guard (neutral `guardrailsGuard`) against a loopback stand-in for the Bedrock
// ApplyGuardrail API (`POST /guardrail/{id}/version/{version}/apply`), which checks each call's SigV4 signature with
// an independent verifier (test/helpers/sigv4.ts), the way AWS does.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { verifySigV4 } from '../helpers/sigv4.ts';
import { awsChainEnv } from '../e2e/backend-auth-support.ts';
import { guardrailVerdict } from '../../plugins/guards/bedrock-guardrails/bedrock-guardrails.ts';
import { aiConfig, aiGatewayOptions, GUARD_FAILED, sendJson, startStandIn } from './support.ts';
import type { StandIn } from './support.ts';

const ENV_KEY = 'AKIDGUARDRAILTESTENV';
const ENV_SECRET = 'guardrail/env/secret+for+the+default+chain';
const EXPLICIT_KEY = 'AKIDGUARDRAILEXPLICIT';
const EXPLICIT_SECRET = 'explicit/secret+key+for+guardrails000000';
const SECRETS: Record<string, string> = { [ENV_KEY]: ENV_SECRET, [EXPLICIT_KEY]: EXPLICIT_SECRET };

interface ApplyBody {
  source: 'INPUT' | 'OUTPUT';
  content: ({ text: { text: string } } | { image: { format: string; source: { bytes: string } } })[];
}

/** "BLOCKME" as an image's base64 bytes. */
const BLOCKED_IMAGE = Buffer.from('BLOCKME').toString('base64');

/** ApplyGuardrail as AWS answers it, driven by markers in the texts (and image bytes). */
function applyGuardrail(res: ServerResponse, body: ApplyBody): void {
  const texts = body.content.flatMap((c) => ('text' in c ? [c.text.text] : []));
  const images = body.content.flatMap((c) => ('image' in c ? [c.image.source.bytes] : []));
  if (texts.some((t) => t.includes('BLOCKME')) || images.includes(BLOCKED_IMAGE)) {
    return sendJson(res, 200, {
      usage: { topicPolicyUnits: 1 },
      action: 'GUARDRAIL_INTERVENED',
      outputs: [{ text: 'Sorry, the model cannot answer this question.' }],
      assessments: [{ topicPolicy: { topics: [{ name: 'Finance', type: 'DENY', action: 'BLOCKED' }] } }],
    });
  }
  if (texts.some((t) => t.includes('@example.com'))) {
    return sendJson(res, 200, {
      action: 'GUARDRAIL_INTERVENED',
      outputs: texts.map((t) => ({ text: t.replace(/\S+@example\.com/g, '{EMAIL}') })),
      assessments: [{ sensitiveInformationPolicy: { piiEntities: [{ type: 'EMAIL', match: 'alice@example.com', action: 'ANONYMIZED', detected: true }] } }],
    });
  }
  sendJson(res, 200, { action: 'NONE', outputs: [], assessments: [{}] });
}

describe('bedrockGuardrails guard', () => {
  let gw: RunningGateway;
  let port: number;
  let aws: StandIn;
  let env: { restore(): void };
  const problems: string[] = [];

  before(async () => {
    aws = await startStandIn((req, res, body, raw) => {
      const check = verifySigV4({ method: req.method!, url: req.url!, headers: req.headers as Record<string, string>, body: raw }, SECRETS[/Credential=([^/]+)/.exec(String(req.headers.authorization))?.[1] ?? ''] ?? 'unknown');
      if (!check.ok) {
        problems.push(check.problem ?? 'bad signature');
        return sendJson(res, 403, { message: 'The request signature we calculated does not match the signature you provided.' });
      }
      if (!/^\/guardrail\/[^/]+\/version\/[^/]+\/apply$/.test(req.url!)) return sendJson(res, 404, { message: 'unknown operation' });
      if (req.url!.includes('/version/404/')) return sendJson(res, 404, { message: 'The resource could not be found.' });
      applyGuardrail(res, body as ApplyBody);
    });
    // The default credential chain finds these keys in the environment; the endpoint comes from the SDK variable.
    env = awsChainEnv(ENV_KEY, ENV_SECRET, { AWS_ENDPOINT_URL_BEDROCK_RUNTIME: aws.url, AWS_ENDPOINT_URL: undefined });
    port = await freePort();
    const guard = (version = 'DRAFT') => ({ bedrockGuardrails: { guardrailIdentifier: 'gr-abc123', guardrailVersion: version, region: 'eu-west-1' } });
    gw = await startGateway(
      aiConfig(port, [
        { name: 'request', policies: { ai: { promptGuard: { request: [{ ...guard(), rejection: { status: 400, body: 'blocked by policy' } }] } } } },
        { name: 'response', policies: { ai: { promptGuard: { response: [guard('2')] } } } },
        {
          name: 'explicit',
          policies: {
            ai: {
              promptGuard: {
                request: [
                  {
                    guardrailsGuard: {
                      guardrailIdentifier: 'gr-xyz',
                      guardrailVersion: '1',
                      region: 'us-east-1',
                      host: aws.url,
                      policies: { backendAuth: { aws: { accessKeyId: EXPLICIT_KEY, secretAccessKey: EXPLICIT_SECRET, region: 'us-east-1', serviceName: 'bedrock' } } },
                    },
                  },
                ],
              },
            },
          },
        },
        { name: 'missing', policies: { ai: { promptGuard: { request: [guard('404')] } } } },
        { name: 'cached', policies: { ai: { promptGuard: { request: [{ bedrockGuardrails: { ...guard().bedrockGuardrails, cache: { ttl: '1h' } } }] } } } },
      ]),
      aiGatewayOptions,
    );
  });

  after(async () => {
    await gw?.stop();
    await aws?.close();
    env?.restore();
  });

  async function post(path: string, content: string, headers: Record<string, string> = {}) {
    const res = await request(`${gw.url(port)}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  }

  it('signs ApplyGuardrail calls with SigV4 (default chain, service bedrock, the guard\'s region) and sends the texts as INPUT', async () => {
    const res = await post('/request/v1/chat/completions', 'hello');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(problems, []);
    const call = aws.received.at(-1)!;
    assert.equal(call.url, '/guardrail/gr-abc123/version/DRAFT/apply');
    assert.match(String(call.headers.authorization), new RegExp(`^AWS4-HMAC-SHA256 Credential=${ENV_KEY}/\\d{8}/eu-west-1/bedrock/aws4_request`));
    assert.equal(call.headers['content-type'], 'application/json');
    assert.equal(call.headers.accept, 'application/json');
    assert.deepEqual(call.body, { source: 'INPUT', content: [{ text: { text: 'hello' } }] });
  });

  it('inline PNG and JPEG images go as image blocks after the texts; others are not sent; a blocked image rejects (ADR 0181)', async () => {
    const send = async (content: unknown[]) => {
      const res = await request(`${gw.url(port)}/request/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }) });
      return { status: res.statusCode, text: await res.body.text() };
    };
    const image = (url: string) => ({ type: 'image_url', image_url: { url } });
    const ok = await send([{ type: 'text', text: 'look' }, image('data:image/png;base64,iVBORw0KGgo='), image('https://img.example/a.png'), image('data:image/gif;base64,R0lGOD=='), image('data:image/jpeg;base64,/9j/4AA=')]);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(aws.received.at(-1)!.body, {
      source: 'INPUT',
      content: [{ text: { text: 'look' } }, { image: { format: 'png', source: { bytes: 'iVBORw0KGgo=' } } }, { image: { format: 'jpeg', source: { bytes: '/9j/4AA=' } } }],
    });
    assert.equal((await send([image(`data:image/png;base64,${BLOCKED_IMAGE}`)])).status, 400);
    // A data URL's scheme, media type and `base64` are case-insensitive (RFC 2397): a capitalised one is judged too.
    assert.equal((await send([image(`DATA:IMAGE/PNG;BASE64,${BLOCKED_IMAGE}`)])).status, 400);
    const many = await send(Array.from({ length: 17 }, () => image('data:image/png;base64,iVBORw0KGgo=')));
    assert.equal(many.status, 503);
  });

  it('a BLOCKED assessment rejects with the entry\'s rejection', async () => {
    const res = await post('/request/v1/chat/completions', 'tell me about BLOCKME stocks');
    assert.equal(res.status, 400);
    assert.equal(res.text, 'blocked by policy');
  });

  it('an anonymizing intervention masks the texts with the guardrail\'s outputs', async () => {
    const res = await post('/request/v1/chat/completions', 'write to alice@example.com');
    assert.equal(res.status, 200);
    assert.equal((JSON.parse(res.text) as { request: { messages: { content: string }[] } }).request.messages[0]!.content, 'write to {EMAIL}');
  });

  it('responses are checked as OUTPUT and masked or rejected likewise', async () => {
    const answer = (content: string) => ({ 'x-test-response': JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content } }] }) });
    const masked = await post('/response/v1/chat/completions', 'hi', answer('mail bob@example.com'));
    assert.equal(masked.status, 200);
    assert.equal((JSON.parse(masked.text) as { response: { choices: { message: { content: string } }[] } }).response.choices[0]!.message.content, 'mail {EMAIL}');
    const call = aws.received.at(-1)!;
    assert.equal(call.url, '/guardrail/gr-abc123/version/2/apply');
    assert.deepEqual(call.body, { source: 'OUTPUT', content: [{ text: { text: 'mail bob@example.com' } }] });
    const blocked = await post('/response/v1/chat/completions', 'hi', answer('BLOCKME'));
    assert.equal(blocked.status, 403);
  });

  it('explicit keys and endpoint through policies.backendAuth and host; the neutral name works', async () => {
    const res = await post('/explicit/v1/chat/completions', 'hello');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(problems, []);
    assert.match(String(aws.received.at(-1)!.headers.authorization), new RegExp(`Credential=${EXPLICIT_KEY}/\\d{8}/us-east-1/bedrock/`));
  });

  it('with `cache`, text blocks passed before are not sent again; a mask is not cached and lands in its place (ADR 0188)', async () => {
    const send = async (messages: { role: string; content: string }[]) => {
      const from = aws.received.length;
      const res = await request(`${gw.url(port)}/cached/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages }) });
      const text = await res.body.text();
      assert.equal(res.statusCode, 200, text);
      const sent = aws.received.slice(from).map((c) => (c.body as ApplyBody).content.map((b) => ('text' in b ? b.text.text : 'image')));
      return { sent, messages: (JSON.parse(text) as { request: { messages: { content: string }[] } }).request.messages.map((m) => m.content) };
    };
    const turn1 = [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi there' }];
    assert.deepEqual((await send(turn1)).sent, [['be brief', 'hi there']]);
    assert.deepEqual((await send(turn1)).sent, [], 'every block passed within the TTL: no call');
    const turn2 = [...turn1, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'write to alice@example.com' }];
    for (let i = 0; i < 2; i++) {
      const r = await send(turn2);
      // The first time both new blocks; the mask is not cached, so the e-mail text goes again (and `hello`, sent in
      // the same intervened call, was not remembered either).
      assert.deepEqual(r.sent, [['hello', 'write to alice@example.com']]);
      assert.deepEqual(r.messages, ['be brief', 'hi there', 'hello', 'write to {EMAIL}']);
    }
    assert.deepEqual(problems, []);
  });

  it('an API error fails closed with 503', async () => {
    const res = await post('/missing/v1/chat/completions', 'hello');
    assert.equal(res.status, 503);
    assert.deepEqual(JSON.parse(res.text), GUARD_FAILED);
    assert.equal(res.headers['content-type'], 'application/json');
  });
});

describe('ApplyGuardrail answers', () => {
  const msgs = [
    { role: 'user', content: 'a' },
    { role: 'user', content: 'b' },
  ];
  it('NONE passes; intervened without BLOCKED masks with outputs in order; BLOCKED anywhere rejects', () => {
    assert.deepEqual(guardrailVerdict({ action: 'NONE', outputs: [] }, msgs), { action: 'pass' });
    assert.deepEqual(guardrailVerdict({ action: 'GUARDRAIL_INTERVENED', outputs: [{ text: 'A' }], assessments: [] }, msgs), {
      action: 'mask',
      messages: [
        { role: 'user', content: 'A' },
        { role: 'user', content: 'b' },
      ],
    });
    assert.equal(guardrailVerdict({ action: 'GUARDRAIL_INTERVENED', assessments: [{ contentPolicy: { filters: [{ type: 'HATE', action: 'BLOCKED' }] } }] }, msgs).action, 'reject');
    assert.throws(() => guardrailVerdict({ message: 'AccessDenied' }, msgs), /no `action`/);
  });

  it('an answer that decides nothing fails the guard (ADR 0181): an unknown action, an intervention with no outputs nor block', () => {
    assert.throws(() => guardrailVerdict({ action: 'SOMETHING_ELSE' }, msgs), /unknown action/);
    assert.throws(() => guardrailVerdict({ action: 'GUARDRAIL_INTERVENED', assessments: [] }, msgs), /neither blocked nor masked/);
  });
});
