// `passthrough` (and `realtime` over plain HTTP) requests: sent to the provider untouched but for headers and
// credentials; an answer in an API the path names is read on the way for its usage (ADR 0164, 0171).
import { jsonErrorReply, llmTokenLimiters } from 'switchyard/sdk';
import type { Exchange, Logger, PluginSpans, Reply, UpstreamAttempt, UpstreamTarget } from 'switchyard/sdk';
import type { LlmProviderInstance, LlmRouteType, LlmWireFormat } from '../../lib/llm/contract.ts';
import { LlmCall } from '../../lib/llm/telemetry.ts';
import type { PriceOf } from '../../lib/llm/telemetry.ts';
import { isObj } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';
import type { LlmMetrics } from '../../lib/llm/llm-metrics.ts';
import { translationBetween } from '../../lib/llm/formats/index.ts';
import { answerReply } from './answer.ts';
import { MAX_MODEL_NAME, passthroughHeaders, REQUEST_LIMIT, reserveTokens, withUsageOption } from './request-parts.ts';
import { isStreamAnswer, mayCarryUsage, passthroughAnswerFormat, passthroughPathCall } from './passthrough-answer.ts';
import { unmeterable } from './realtime-meter.ts';
import { REQUEST_ATTRIBUTE_MEMBERS } from '../../lib/llm/request-attributes.ts';
import { pickTopLevel } from '../../lib/llm/top-level.ts';
import { asksForSse } from '../../lib/llm/gemini/json-array.ts';

/** The body members a passthrough span reads beside the sampling settings. */
const SPAN_MEMBERS: readonly string[] = Object.freeze([...REQUEST_ATTRIBUTE_MEMBERS, 'model', 'stream']);

/** What a passthrough request needs of its `ai` backend. */
export interface PassthroughParts {
  readonly provider: LlmProviderInstance;
  readonly spans: PluginSpans | undefined;
  /** The client's Cookie is left out (no requestHeaderModifier sets one; ADR 0195). */
  readonly withholdCookie: boolean;
  readonly upstream: UpstreamTarget;
  readonly metrics: LlmMetrics;
  readonly priceOf: PriceOf;
  /** The provider's default signer signs the body: it is read before forwarding. */
  readonly signerNeedsBody: boolean;
  onAttempt(ex: Exchange, format: LlmWireFormat | undefined): ((attempt: UpstreamAttempt) => void | Promise<void>) | undefined;
  readonly log: Logger;
}

export function passthroughHandler(p: PassthroughParts): (ex: Exchange, route: LlmRouteType) => Promise<Reply> {
  const { provider, upstream, metrics, priceOf, onAttempt } = p;
  return async (ex, route) => {
    // A session held with the provider directly would spend past the route's limits and keys (ADR 0190).
    const direct = unmeterable(ex, false);
    if (direct) return jsonErrorReply(direct.status, direct.type, direct.message);
    // The body is not read here: token limits get no prompt estimate. They settle on the answer's usage when it is in
    // an API's shape the path names (ADR 0164), else on what was reserved.
    const refused = await reserveTokens(ex, undefined, { provider: provider.kind, model: undefined, maxOutputTokens: undefined, price: undefined });
    if (refused) return refused;
    const format = passthroughHeaders(provider, ex, p.withholdCookie);
    const answer = route === 'passthrough' ? passthroughAnswerFormat(provider, ex.path, format) : undefined;
    // An answer read for its usage is counted on /metrics as other calls are, by the model that answered (ADR 0171).
    // It has a GenAI span when the path names an API (ADR 0180).
    const call = new LlmCall(ex, provider.kind, undefined, false, answer === undefined ? undefined : metrics, answer?.operation, priceOf, answer === undefined ? undefined : p.spans, true);
    if (p.signerNeedsBody && !ex.body) await ex.bufferBody(REQUEST_LIMIT);
    if (call.outcome) await describeRequest(ex, call);
    if (answer === undefined) return upstream.forward(ex, onAttempt(ex, format));
    // Read for its usage: asked for uncompressed, as translated routes' answers are.
    ex.headers['accept-encoding'] = 'identity';
    // Gemini's JSON-array stream cannot be read element by element: the provider is asked for events and the client
    // given the array it asked for, as on a translated route (ADR 0153, 0190).
    const jsonArray = answer.name === 'geminiNative' && ex.path.endsWith(':streamGenerateContent') && !asksForSse(ex.query);
    if (jsonArray) ex.query = withSse(ex.query);
    // A Chat Completions stream on a route with token limits or keys settles on its usage: asked for, and the chunk
    // the client did not ask for taken out (ADR 0190). Without limits the body stays as the client sent it.
    const omitUsageChunk = answer.name === 'completions' && ex.method === 'POST' && ex.get(llmTokenLimiters) !== undefined && (await askForUsage(ex));
    const reply = await upstream.forward(ex, onAttempt(ex, format)).catch((err: unknown) => {
      call.fail(err);
      throw err;
    });
    if (!mayCarryUsage(reply)) {
      call.unread(reply.status);
      return reply;
    }
    const translation = translationBetween(answer, answer)!;
    const stream = isStreamAnswer(reply);
    if (stream) call.answerStreams();
    return answerReply(ex, reply, { client: route, clientFormat: answer, wire: answer.name, wireFormat: answer, model: '', stream, translation, omitUsageChunk, jsonArray, call, policy: undefined }, p.log);
  };
}

/**
 * A traced passthrough call's span told what its request says (ADR 0180): the model its path names, else its body's;
 * its sampling settings. The body is looked at only for a recorded span and only up to the request limit (a longer
 * one is streamed on unread, as untraced); it is not parsed, its top-level members are picked.
 */
async function describeRequest(ex: Exchange, call: LlmCall): Promise<void> {
  const path = passthroughPathCall(ex.path);
  const raw = ex.body ?? (ex.method === 'POST' ? await ex.peekBody(REQUEST_LIMIT) : undefined);
  let body: Obj | undefined;
  try {
    body = raw !== undefined && raw.length > 0 ? pickTopLevel(raw, SPAN_MEMBERS) : undefined;
  } catch {
    // Not JSON where a member was picked: the provider answers it; the span says what the path does.
  }
  const named = path.model ?? (typeof body?.model === 'string' ? body.model : undefined);
  const model = named !== undefined && named.length > 0 && named.length <= MAX_MODEL_NAME ? named : undefined;
  call.passthroughRequest(model, path.stream ?? (body !== undefined ? body.stream === true : undefined), body);
}

/** The query with `alt=sse` in place of the client's `alt` (its other parameters kept in order). */
function withSse(query: string): string {
  const params = new URLSearchParams(query);
  params.set('alt', 'sse');
  return `?${params.toString()}`;
}

/**
 * A streamed Chat Completions request whose client did not ask for usage, made to ask for it (the bytes spliced when
 * it set no `stream_options`, else the body written again); true when changed. A body not read as JSON (encoded,
 * longer than the request limit, not an object) is left as it is.
 */
async function askForUsage(ex: Exchange): Promise<boolean> {
  const encoding = ex.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return false;
  const raw = ex.body ?? (await ex.peekBody(REQUEST_LIMIT));
  if (raw === undefined) return false;
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return false;
  }
  if (!isObj(body) || body.stream !== true) return false;
  const own = body.stream_options;
  if (isObj(own) && own.include_usage === true) return false;
  ex.setBody(own === undefined ? withUsageOption(raw) : Buffer.from(JSON.stringify({ ...body, stream_options: { ...(isObj(own) ? own : {}), include_usage: true } })));
  return true;
}
