import { compileUserRegex } from 'switchyard/sdk';
import type { CompileContext, Exchange, HeaderMap } from 'switchyard/sdk';
import { resolveServiceTarget } from '../../lib/envoy-grpc/service-target.ts';
import type { ServiceTargetConfig } from '../../lib/envoy-grpc/service-target.ts';
import { GUARD_TIMEOUT_MS, readJsonAnswer } from '../../lib/llm-guard/guard-http.ts';
import { guardVerdictCache } from '../../lib/llm-guard/verdict-cache.ts';
import type { GuardCacheConfig } from '../../lib/llm-guard/verdict-cache.ts';
import type { GuardInstance, GuardMessage, GuardVerdict } from '../../lib/llm/contract.ts';
import { isObj } from '../../lib/llm/json.ts';

export interface WebhookGuardConfig {
  target: Omit<ServiceTargetConfig, 'policies'>;
  forwardHeaderMatches?: { name: string; value: { exact?: string; regex?: string } }[];
  failureMode?: 'failClosed' | 'failOpen';
  cache?: GuardCacheConfig;
}

interface HeaderMatch {
  readonly name: string;
  readonly test: (value: string) => boolean;
}

/** `{role, content}` objects as the webhook sent them back; throws when one is not. */
function messagesOf(list: unknown[], what: string): GuardMessage[] {
  return list.map((m, i) => {
    if (!isObj(m) || typeof m.content !== 'string') throw new Error(`the webhook's ${what} ${i} has no string \`content\``);
    return { role: typeof m.role === 'string' ? m.role : 'user', content: m.content };
  });
}

/**
 * Read the webhook's answer (`{"action": ...}`), trying the actions in the protocol's order: mask (`body` holds
 * `messages` or `choices`), reject (`body` is a string and `status_code` an integer), pass (anything else).
 */
export function webhookVerdict(answer: unknown, phase: 'request' | 'response'): GuardVerdict {
  if (!isObj(answer) || !isObj(answer.action)) throw new Error('the webhook answered without an `action` object');
  const action = answer.action;
  const body = action.body;
  const reason = typeof action.reason === 'string' ? action.reason : undefined;
  if (isObj(body) && (Array.isArray(body.messages) || Array.isArray(body.choices))) {
    if (phase === 'request') {
      if (!Array.isArray(body.messages)) throw new Error('the webhook masked a request with `choices`; a request mask carries `messages`');
      return { action: 'mask', messages: messagesOf(body.messages, 'message') };
    }
    if (!Array.isArray(body.choices)) throw new Error('the webhook masked a response with `messages`; a response mask carries `choices`');
    return { action: 'mask', messages: messagesOf(body.choices.map((c) => (isObj(c) ? c.message : undefined)), 'choice') };
  }
  if (typeof body === 'string' && Number.isInteger(action.status_code)) {
    const status = action.status_code as number;
    // A status that is no final answer (a 1xx left the client waiting for one): the webhook still rejected, so the
    // entry's `rejection` status answers (with the webhook's body), under `failOpen` too.
    if (status < 200 || status > 599) return { action: 'reject', body, reason };
    return { action: 'reject', status, body, reason };
  }
  return { action: 'pass' };
}

/** Headers that describe the client's own request body or connection; the webhook call has its own. */
const NOT_FORWARDED = new Set(['content-length', 'content-type', 'content-encoding', 'transfer-encoding', 'host', 'connection', 'keep-alive', 'te', 'upgrade', 'expect']);

function compileHeaderMatches(config: WebhookGuardConfig, ctx: CompileContext): HeaderMatch[] {
  return (config.forwardHeaderMatches ?? []).map((m, i) => {
    const name = m.name.toLowerCase();
    if (NOT_FORWARDED.has(name)) ctx.fail(`\`${m.name}\` belongs to the client's own request and cannot be forwarded to the webhook`, ['forwardHeaderMatches', i, 'name']);
    if (m.value.exact !== undefined) {
      const exact = m.value.exact;
      return { name, test: (v: string) => v === exact };
    }
    const re = compileUserRegex(m.value.regex!, { whole: true });
    if (typeof re === 'string') return ctx.fail(re, ['forwardHeaderMatches', i, 'value', 'regex']);
    return { name, test: (v: string) => re.test(v) };
  });
}

/**
 * The `webhook` guard: the Gloo-style guardrail webhook protocol (BEHAVIOUR.md §2.9). Requests: `POST /request`
 * with `{"body":{"messages":[{role, content}, ...]}}`; responses: `POST /response` with
 * `{"body":{"choices":[{"message":{role, content}}, ...]}}`; `Content-Type: application/json`, and the client's
 * headers selected by `forwardHeaderMatches`. 10 s timeout. A failure throws (the `ai` policy answers 503) unless
 * `failureMode: failOpen`, which passes. The webhook reads the messages as it likes (in context), so they are never
 * split: `cache` (ADR 0188) remembers the pass of a whole list with the headers forwarded, which a retried or
 * repeated request hits. A pass by `failOpen` is no verdict and is not remembered.
 */
export async function compileWebhookGuard(config: WebhookGuardConfig, ctx: CompileContext): Promise<GuardInstance> {
  // The target's errors point below `target`.
  const { connection } = await resolveServiceTarget(config.target, ctx, { what: 'guardrail webhook', grpc: false }, ['target']);
  const target = connection.target;
  const matches = compileHeaderMatches(config, ctx);
  const failOpen = config.failureMode === 'failOpen';
  const logger = ctx.logger;
  const { cache: cacheConfig, ...identity } = config;
  const cache = guardVerdictCache(ctx, 'webhook', { ...identity, authority: connection.authority, secure: connection.secure }, cacheConfig);

  const forwarded = (ex: Exchange): HeaderMap => {
    const headers: HeaderMap = {};
    for (const m of matches) {
      const raw = ex.headers[m.name];
      if (raw === undefined) continue;
      const values = Array.isArray(raw) ? raw : [raw];
      if (!values.some((v) => m.test(v))) continue;
      const existing = headers[m.name];
      headers[m.name] = existing === undefined ? (values.length === 1 ? values[0] : [...values]) : [...(Array.isArray(existing) ? existing : [String(existing)]), ...values];
    }
    return headers;
  };

  const call = async (ex: Exchange, phase: 'request' | 'response', messages: readonly GuardMessage[], headers: HeaderMap): Promise<GuardVerdict> => {
    const payload =
      phase === 'request'
        ? { body: { messages: messages.map((m) => ({ role: m.role, content: m.content })) } }
        : { body: { choices: messages.map((m) => ({ message: { role: m.role, content: m.content } })) } };
    headers['content-type'] = 'application/json';
    const res = await target.request({
      method: 'POST',
      path: phase === 'request' ? '/request' : '/response',
      headers,
      body: JSON.stringify(payload),
      signal: ex.signal,
      timeoutMs: GUARD_TIMEOUT_MS,
    });
    return webhookVerdict(await readJsonAnswer(res, 'the guardrail webhook'), phase);
  };

  return {
    async check(ex, phase, messages) {
      const headers = forwarded(ex);
      // The webhook may decide by the headers forwarded (a user, a tenant): they are part of the key.
      const key = cache?.keyOfAll(phase, messages, JSON.stringify(headers));
      if (key !== undefined && cache!.lookup(phase, key)) return { action: 'pass' };
      try {
        const verdict = await call(ex, phase, messages, headers);
        if (key !== undefined && verdict.action === 'pass') cache!.passed([key]);
        return verdict;
      } catch (err) {
        if (!failOpen) throw err;
        logger.warn('guardrail webhook failed; failing open', { phase, error: (err as Error)?.message ?? String(err) });
        ex.logField(`llm.guard.${phase}`, 'failOpen');
        return { action: 'pass' };
      }
    },
  };
}
