// Shared wiring of the LLM tests: the preset with the `ai` backend and its providers, aimock (a real LLM mock
// speaking every provider's API) in-process on a loopback port, a gateway in front, and the access-log records.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LLMock } from '@copilotkit/aimock';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { definePolicy, localReply } from 'switchyard/sdk';
import type { Exchange } from 'switchyard/sdk';
import { fullPresetWith } from '../helpers/preset.ts';
import aiBackend from '../../plugins/backends/ai/plugin.ts';
import openAI from '../../plugins/llm-providers/openai/plugin.ts';
import anthropic from '../../plugins/llm-providers/anthropic/plugin.ts';
import azureOpenAI from '../../plugins/llm-providers/azure-openai/plugin.ts';
import gemini from '../../plugins/llm-providers/gemini/plugin.ts';
import vertex from '../../plugins/llm-providers/vertex/plugin.ts';
import bedrock from '../../plugins/llm-providers/bedrock/plugin.ts';
import { AI_POLICY } from '../../plugins/lib/llm/contract.ts';
import type { AiPolicyRuntime, LlmRouteType } from '../../plugins/lib/llm/contract.ts';
import { logRecords, startRoutesGateway } from '../helpers/gateway.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import type { RoutesGateway, RunningGateway } from '../helpers/gateway.ts';

/** The LLM plugins: the lines plugins/presets/full.ts is to gain. */
export const llmPlugins = [aiBackend, openAI, anthropic, azureOpenAI, gemini, vertex, bedrock] as const;

interface StubAiConfig {
  routes?: Record<string, LlmRouteType>;
  /** Request guard: reject a request whose last user message contains this word. */
  rejectWord?: string;
  /** Response guard: reject a response whose text contains this word. */
  rejectResponseWord?: string;
  /** applyRequest: set these fields on the client body. */
  overrides?: Record<string, unknown>;
  /** Published as the runtime's `promptCaching`. */
  promptCaching?: { cacheSystem: boolean; cacheMessages: boolean; cacheTools: boolean; minTokens: number; cacheMessageOffset: number };
}

function lastUserText(body: Record<string, unknown>): string {
  const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
}

/**
 * A stand-in for the `ai` policy (plugins/policies/ai, built separately): it provides an `AI_POLICY` runtime the way
 * the contract says, so the backend's side of the contract (route types, applyRequest, request and response guards)
 * is tested on its own. Records what the backend handed it.
 */
export const seen: { applied: { format: LlmRouteType; body: Record<string, unknown> }[]; guardedResponses: { format: LlmRouteType; body: Record<string, unknown> }[] } = {
  applied: [],
  guardedResponses: [],
};

export const stubAiPolicy = definePolicy<StubAiConfig>({
  key: 'testAi',
  description: 'Test stand-in for the ai policy: route types, one override, word guards.',
  schema: {
    type: 'object',
    description: 'Test policy.',
    properties: {
      routes: { type: 'object', additionalProperties: { type: 'string' }, description: 'Path suffix to route type.' },
      rejectWord: { type: 'string', description: 'Reject requests containing it.' },
      rejectResponseWord: { type: 'string', description: 'Reject responses containing it.' },
      overrides: { type: 'object', description: 'Fields set on the body.' },
      promptCaching: { type: 'object', description: 'Prompt caching settings.' },
    },
    additionalProperties: false,
  },
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'mutate',
  order: 5,
  compile(config) {
    const entries = Object.entries(config.routes ?? {}).sort((a, b) => b[0].length - a[0].length);
    const runtime: AiPolicyRuntime = {
      routeType(path: string) {
        for (const [suffix, type] of entries) if (suffix !== '*' && path.endsWith(suffix)) return type;
        return config.routes?.['*'];
      },
      applyRequest(_ex: Exchange, format, body) {
        seen.applied.push({ format, body: structuredClone(body) });
        if (config.overrides) Object.assign(body, config.overrides);
      },
      async guardRequest(_ex: Exchange, _format, body) {
        if (config.rejectWord && lastUserText(body).includes(config.rejectWord)) return localReply(403, 'rejected by request guard');
        return undefined;
      },
      async guardResponse(_ex: Exchange, format, body) {
        seen.guardedResponses.push({ format, body: structuredClone(body) });
        if (config.rejectResponseWord && JSON.stringify(body).includes(config.rejectResponseWord)) return localReply(403, 'rejected by response guard');
        return undefined;
      },
      hasResponseGuards: config.rejectResponseWord !== undefined,
      promptCaching: config.promptCaching,
    };
    return { provides: [AI_POLICY.of(runtime)] };
  },
});

export const aiPreset = fullPresetWith(...llmPlugins, stubAiPolicy);

export interface JournalEntry {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown> | null;
  response: { status: number };
}

export interface Mock {
  readonly llmock: LLMock;
  readonly url: string;
  /** `host:port`, for `ai.hostOverride`. */
  readonly hostPort: string;
  /** Requests the mock received, oldest first (through its HTTP journal, as a client would read it). */
  journal(): Promise<JournalEntry[]>;
  last(): Promise<JournalEntry>;
  stop(): Promise<void>;
}

/** The fixtures of REAL-PEERS.md §5 plus token usage, so usage numbers can be checked end to end. */
export const FIXTURES = [
  { match: { userMessage: 'hello' }, response: { content: 'Hello from the mock!', usage: { prompt_tokens: 11, completion_tokens: 5, input_tokens: 11, output_tokens: 5 } } },
  { match: { userMessage: 'weather' }, response: { toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }], usage: { prompt_tokens: 20, completion_tokens: 7, input_tokens: 20, output_tokens: 7 } } },
  { match: { userMessage: 'boom' }, response: { error: { message: 'rate limited', type: 'rate_limit_error' }, status: 429 } },
  { match: { userMessage: 'swap' }, response: { content: 'answered by another model', model: 'gpt-4o-2024-08-06' } },
  { match: { inputText: 'hello', endpoint: 'embedding' }, response: { embedding: [0.25, 0.5, 0.75] } },
  { match: {}, response: { content: 'default reply' } },
];

export async function startMock(fixtures: unknown[] = FIXTURES): Promise<Mock> {
  const llmock = new LLMock({ port: 0, host: '127.0.0.1' });
  llmock.addFixtures(fixtures as Parameters<LLMock['addFixtures']>[0]);
  const url = await llmock.start();
  const journal = async (): Promise<JournalEntry[]> => {
    const res = await fetch(`${url}/__aimock/journal?limit=1000`);
    const entries = (await res.json()) as JournalEntry[];
    return entries;
  };
  return {
    llmock,
    url,
    hostPort: new URL(url).host,
    journal,
    last: async () => {
      const all = await journal();
      if (all.length === 0) throw new Error('the mock received no request');
      return all[all.length - 1]!;
    },
    stop: () => llmock.stop(),
  };
}

export type AiGateway = RoutesGateway;

/** A gateway with the given routes on one listener, JSON logs. */
export function startAiGateway(routes: Record<string, unknown>[], env?: NodeJS.ProcessEnv): Promise<AiGateway> {
  return startRoutesGateway(routes, { config: { logging: { format: 'json', level: 'info' }, drainTimeout: '200ms' }, preset: aiPreset, env });
}

/** A suite's mock provider, the recorder in front of it and a gateway whose `ai` backends reach it by `hostOverride`. */
export interface RecordedAi {
  readonly mock: Mock;
  readonly rec: Recorder;
  readonly gw: AiGateway;
}

/**
 * Start the mock, its recorder and a gateway serving `routes(rec.hostPort)` before the suite's tests, stop them after
 * (node:test hooks of the enclosing `describe`). The fields are set once `before` ran.
 */
export function recordedAi(routes: (hostPort: string) => Record<string, unknown>[]): RecordedAi {
  const t = {} as { mock: Mock; rec: Recorder; gw: AiGateway };
  before(async () => {
    t.mock = await startMock();
    t.rec = await startRecorder(t.mock.url);
    t.gw = await startAiGateway(routes(t.rec.hostPort));
  });
  after(async () => {
    await t.gw?.stop();
    await t.rec?.close();
    await t.mock?.stop();
  });
  return t;
}

/** A stand-in provider whose answer each test sets, the gateway in front of it. */
export interface ScriptedAi {
  readonly upstream: TestUpstream;
  readonly gw: AiGateway;
  /** The provider answers `status` (200) with `body` as `contentType` from now on. */
  answer(contentType: string, body: string | Buffer, status?: number): void;
}

/**
 * A loopback stand-in provider that answers what the test last told it (aimock cannot script exact event sequences)
 * and a gateway serving `routes(hostPort)` in front, started and stopped by the enclosing `describe`'s hooks.
 */
export function scriptedAi(routes: (hostPort: string) => Record<string, unknown>[]): ScriptedAi {
  let reply: { contentType: string; body: string | Buffer; status: number } = { contentType: 'application/json', body: '{}', status: 200 };
  const t = {
    answer(contentType: string, body: string | Buffer, status = 200) {
      reply = { contentType, body, status };
    },
  } as { upstream: TestUpstream; gw: AiGateway; answer: ScriptedAi['answer'] };
  before(async () => {
    t.upstream = await startUpstream((_req, res) => {
      res.writeHead(reply.status, { 'content-type': reply.contentType });
      res.end(reply.body);
    });
    t.gw = await startAiGateway(routes(`127.0.0.1:${t.upstream.port}`));
  });
  after(async () => {
    await t.gw?.stop();
    await t.upstream?.close();
  });
  return t;
}

/** The real SDK clients on `<base()><prefix>`, never retrying (a retry would hide the answer under test). */
export function sdkClients(base: () => string, defaultKey: string): {
  openai: (prefix: string, apiKey?: string, extra?: Partial<ConstructorParameters<typeof OpenAI>[0]>) => OpenAI;
  anthropic: (prefix: string, apiKey?: string, extra?: Partial<ConstructorParameters<typeof Anthropic>[0]>) => Anthropic;
} {
  return {
    openai: (prefix, apiKey = defaultKey, extra = {}) => new OpenAI({ baseURL: `${base()}${prefix}/v1`, apiKey, maxRetries: 0, ...extra }),
    anthropic: (prefix, apiKey = defaultKey, extra = {}) => new Anthropic({ baseURL: `${base()}${prefix}`, apiKey, maxRetries: 0, ...extra }),
  };
}

/** The error a call that must fail raised, checked to be a `type` (an SDK's typed error class). */
export async function rejection<T>(promise: Promise<unknown>, type: abstract new (...args: never[]) => T): Promise<T> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof type, `expected ${type.name}, got ${(err as Error).constructor.name}: ${(err as Error).message}`);
    return err;
  }
  assert.fail('the call succeeded');
}

/** A route on `/<prefix>` whose only backend is `ai: <ai>`, with optional route policies. */
export function aiRoute(prefix: string, ai: Record<string, unknown>, policies?: Record<string, unknown>): Record<string, unknown> {
  const route: Record<string, unknown> = { name: prefix.replace(/\W/g, '') || 'root', matches: [{ path: { pathPrefix: prefix } }], backends: [{ ai }] };
  if (policies) route.policies = policies;
  return route;
}

/** Logs as parsed JSON records. */
export { logRecords as records } from '../helpers/gateway.ts';

/** One request exactly as it reached the upstream (aimock's journal redacts keys and normalises Anthropic bodies). */
export interface Wire {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  json(): Record<string, unknown>;
}

export interface Recorder {
  readonly hostPort: string;
  readonly received: Wire[];
  last(): Wire;
  close(): Promise<void>;
}

/**
 * A recording hop in front of aimock: keeps each request's raw headers and body, then forwards it and streams the
 * answer back unchanged. Point `ai.hostOverride` at it to assert the exact wire request.
 */
export async function startRecorder(target: string): Promise<Recorder> {
  const to = new URL(target);
  const received: Wire[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body, json: () => JSON.parse(body.toString('utf8')) as Record<string, unknown> });
      const headers = { ...req.headers, host: to.host };
      const up = httpRequest({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers }, (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      });
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    hostPort: `127.0.0.1:${port}`,
    received,
    last: () => {
      const w = received[received.length - 1];
      if (!w) throw new Error('the recorder received no request');
      return w;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The access-log records of requests to `path`, waiting until there are at least `count`. */
export async function accessRecords(gw: RunningGateway, path: string, count = 1, ms = 5000): Promise<Record<string, unknown>[]> {
  const until = Date.now() + ms;
  for (;;) {
    const found = logRecords(gw).filter((r) => r.msg === 'request' && r['http.path'] === path);
    if (found.length >= count) return found;
    if (Date.now() > until) throw new Error(`expected ${count} access-log records for ${path}, found ${found.length}; last logs:\n${gw.logs.slice(-5).join('\n')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A provider stand-in that answers every request with `status` and an OpenAI-shaped error body (failover tests). */
export function startErrorProvider(status: number, headers: Record<string, string> = {}): Promise<TestUpstream> {
  return startUpstream((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ error: { message: `upstream ${status}`, type: 'server_error' } }));
  });
}

export { withEnv } from '../helpers/env.ts';
