// Shared by test/ai-policy/*.test.ts (not a test file itself): a third-party-style `ai` stand-in backend that calls
// the AiPolicyRuntime exactly as plugins/lib/llm/contract.ts describes, the preset with the `ai` policy and the
// guards, a fake CompileContext and Exchange for unit tests of the runtime, and small HTTP stand-in helpers.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { defineBackend, jsonReply } from 'switchyard/sdk';
import type { AttributeKey, CompileContext, ConfigPath, Exchange, Logger, VariantPlugin } from 'switchyard/sdk';
import { CelExpressions } from '../../kernel/expr/cel-expressions.ts';
import { EXCHANGE_ATTRIBUTES } from '../../kernel/exchange/kernel-exchange.ts';
import { AI_POLICY } from '../../plugins/lib/llm/contract.ts';
import type { LlmRouteType } from '../../plugins/lib/llm/contract.ts';
import aiPolicy from '../../plugins/policies/ai/plugin.ts';
import regexGuard from '../../plugins/guards/regex/plugin.ts';
import webhookGuard from '../../plugins/guards/webhook/plugin.ts';
import moderationGuard from '../../plugins/guards/openai-moderation/plugin.ts';
import bedrockGuard from '../../plugins/guards/bedrock-guardrails/plugin.ts';
import modelArmorGuard from '../../plugins/guards/google-model-armor/plugin.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { namedRoutes, oneListenerConfig } from '../helpers/gateway.ts';
import type { NamedRoute } from '../helpers/gateway.ts';
import { startUpstream } from '../helpers/upstream.ts';

/**
 * `testLlm`: what the real `ai` backend does with the runtime, and nothing else. It reads the JSON body, takes the
 * route type from `ai.routes` (default `completions`), calls `applyRequest` then `guardRequest`; a rejection is the
 * answer. Otherwise the "model" answers with the JSON of the `x-test-response` request header (a response body in
 * the client's format; default: a completions answer echoing the last message), run through `guardResponse` when
 * `hasResponseGuards`. The reply is `{format, request, response}`: what would have gone upstream and what the
 * client would get.
 */
export const testLlmBackend = defineBackend<Record<string, never>>({
  key: 'testLlm',
  description: 'Test stand-in for the `ai` backend: applies the `ai` policy runtime and echoes the result.',
  schema: { type: 'object', description: 'No settings.', properties: {}, additionalProperties: false },
  compile(_config, ctx) {
    // The `ai` policy hands its runtime over at compile time, as to the real backend.
    const runtime = ctx.policies.facet(AI_POLICY);
    return {
      protocol: 'llm',
      async handle(ex) {
        const body = JSON.parse((await ex.bufferBody()).toString('utf8') || '{}') as Record<string, unknown>;
        const format: LlmRouteType = runtime?.routeType(ex.path) ?? 'completions';
        if (runtime) {
          runtime.applyRequest(ex, format, body);
          const rejected = await runtime.guardRequest(ex, format, body);
          if (rejected) return rejected;
        }
        const header = ex.headers['x-test-response'];
        const response = typeof header === 'string' ? (JSON.parse(header) as Record<string, unknown>) : defaultResponse(body);
        if (runtime?.hasResponseGuards) {
          const rejected = await runtime.guardResponse(ex, format, response);
          if (rejected) return rejected;
        }
        return jsonReply(200, { format, request: body, response });
      },
    };
  },
});

function defaultResponse(body: Record<string, unknown>): Record<string, unknown> {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = messages[messages.length - 1] as { content?: unknown } | undefined;
  return { choices: [{ index: 0, message: { role: 'assistant', content: typeof last?.content === 'string' ? last.content : 'ok' } }] };
}

export const guardPlugins = [regexGuard, webhookGuard, moderationGuard, bedrockGuard, modelArmorGuard] as const;
export const aiPreset = fullPresetWith(aiPolicy, ...guardPlugins, testLlmBackend);
export const aiKnownKeys = [...FIRST_PARTY_KEYS, ...[aiPolicy, ...guardPlugins, testLlmBackend].flatMap((p) => [p.key, ...(p.aliases ?? [])])];
export const aiGatewayOptions = { preset: aiPreset, knownKeys: aiKnownKeys };

export type AiRouteSpec = NamedRoute;

/** One bind, one listener; route `x` matches `/x` and goes to the `testLlm` backend. */
export function aiConfig(port: number, routes: AiRouteSpec[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return oneListenerConfig(port, namedRoutes(routes, () => ({ testLlm: {} })), extra);
}

// --- unit-test doubles ------------------------------------------------------------------------------------------

const quietLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => quietLogger,
} as unknown as Logger;

/** A config error a fake context raised: the message and where. */
export class FakeConfigError extends Error {
  readonly at: ConfigPath;
  constructor(message: string, at: ConfigPath) {
    super(message);
    this.at = at;
  }
}

/**
 * A CompileContext good enough to compile the `ai` policy runtime and the `regex`/`webhook` guards without a
 * gateway: real CEL (declaring `llmRequest` and `jwt`), the guard plugins for `compileVariant`, no HTTP.
 */
export function fakeContext(path: ConfigPath = ['policies', 'ai'], warnings: string[] = []): CompileContext {
  const cel = new CelExpressions(['llmRequest', 'jwt']);
  const states = new Map<string, unknown>();
  const make = (at: ConfigPath): CompileContext => ({
    path: at,
    cwd: process.cwd(),
    logger: quietLogger,
    http: { target: () => assertNever('http') },
    resources: { get: (_k, create) => create() },
    sharedCell: (_k, initial) => {
      const values = new Float64Array(6);
      values.set(initial);
      return { values, lock() {}, unlock() {} };
    },
    sharedFetches: { fetch: async (_k, _want, load) => ({ value: await load(), at: Date.now() }) },
    hideInLog: () => {},
    sharedEvents: { others: false, subscribe: () => ({ post() {}, close() {} }) },
    processes: { spawn: () => assertNever('processes') },
    expr: cel.compilerAt(at),
    configSection: () => assertNever('configSection'),
    fail: (message, sub = []) => {
      throw new FakeConfigError(message, [...at, ...sub]);
    },
    warn: (message, sub = []) => {
      warnings.push(`${[...at, ...sub].join('.')}: ${message}`);
    },
    compileBackend: () => assertNever('compileBackend'),
    compileVariant: async <T>(slotRef: string | { name: string }, value: Record<string, unknown>, sub: ConfigPath) => {
      const slot = typeof slotRef === 'string' ? slotRef : slotRef.name;
      if (slot !== 'guard') return assertNever(`compileVariant(${slot})`);
      for (const plugin of guardPlugins as readonly VariantPlugin<unknown, unknown>[]) {
        const key = [plugin.key, ...(plugin.aliases ?? [])].find((k) => k in value);
        if (key) return { key: plugin.key, instance: (await plugin.compile(value[key], make([...at, ...sub, key]))) as T };
      }
      throw new FakeConfigError('no installed `guard` key found', [...at, ...sub]);
    },
    compilePolicies: () => assertNever('compilePolicies'),
    namedBackend: () => assertNever('namedBackend'),
    connect: () => assertNever('connect'),
    counter: () => ({ inc: () => undefined, child: () => ({ inc: () => undefined }), beforeScrape: () => () => undefined }),
    histogram: () => ({ observe: () => undefined, child: () => ({ observe: () => undefined }) }),
    loadState: <T>(key: string, create: () => T): T => (states.has(key) ? (states.get(key) as T) : (states.set(key, create()), states.get(key) as T)),
  });
  return make(path);
}

function assertNever(what: string): never {
  throw new Error(`the fake compile context does not support ${what}`);
}

/** What `fakeExchange` recorded. */
export interface FakeExchange extends Exchange {
  readonly logged: Record<string, string | number | boolean>;
}

/** An Exchange for unit tests: headers, attributes, log fields and what CEL reads. */
export function fakeExchange(init: { headers?: Record<string, string | string[]>; path?: string; attributes?: Record<string, unknown> } = {}): FakeExchange {
  const attrs = new Map<string, unknown>(Object.entries(init.attributes ?? {}));
  const logged: Record<string, string | number | boolean> = {};
  const ex = {
    method: 'POST',
    path: init.path ?? '/v1/chat/completions',
    query: '',
    authority: 'gateway.test',
    hostname: 'gateway.test',
    scheme: 'http',
    headers: { ...(init.headers ?? {}) },
    sourceAddress: '127.0.0.1',
    sourcePort: 40000,
    signal: new AbortController().signal,
    logged,
    // CEL reads attributes through the kernel's handle, as on a real exchange.
    [EXCHANGE_ATTRIBUTES]: () => attrs,
    get: <T>(key: AttributeKey<T>) => attrs.get((key as unknown as { name: string }).name) as T | undefined,
    set: <T>(key: AttributeKey<T>, value: T) => attrs.set((key as unknown as { name: string }).name, value),
    logField: (name: string, value: string | number | boolean) => {
      logged[name] = value;
    },
    queueResponseHeader: () => undefined,
  };
  return ex as unknown as FakeExchange;
}

// --- HTTP stand-ins ---------------------------------------------------------------------------------------------

export interface StandIn {
  readonly port: number;
  readonly url: string;
  /** Requests received: method, path, headers and parsed JSON body. */
  readonly received: { method: string; url: string; headers: IncomingMessage['headers']; body: unknown; raw: Buffer }[];
  close(): Promise<void>;
}

/** A loopback HTTP server (test/helpers/upstream.ts) whose handler gets the parsed JSON body. */
export async function startStandIn(handler: (req: IncomingMessage, res: ServerResponse, body: unknown, raw: Buffer) => void): Promise<StandIn> {
  const received: StandIn['received'] = [];
  const upstream = await startUpstream((req, res, raw) => {
    let body: unknown;
    try {
      body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
    } catch {
      body = raw.toString('utf8');
    }
    received.push({ method: req.method!, url: req.url!, headers: req.headers, body, raw });
    handler(req, res, body, raw);
  });
  return { port: upstream.port, url: upstream.url, received, close: () => upstream.close() };
}

/**
 * What a failing guard answers (fail-closed) on a route whose backend does not re-shape errors: the gateway's JSON
 * error (the `ai` backend re-shapes it for the client's API: test/ai/policy-errors.test.ts).
 */
export const GUARD_FAILED = { error: { type: 'prompt_guard_failed', message: 'failed to process LLM request: prompt guard failed' } };

/** Reply with JSON. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}
