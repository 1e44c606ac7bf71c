import { Readable } from 'node:stream';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { bodyBytes, defineAttribute, jsonErrorReply, readCapped, readUpTo, tap, tapCapped } from 'switchyard/sdk';
import type { CompileContext, Exchange, PluginSpans, PolicyInstance, Reply } from 'switchyard/sdk';
import { AgentCardError, rewriteAgentCardBody, rewriteCardIfAny } from './agent-card.ts';
import { a2aRequestAttribute } from './attribute.ts';
import type { A2aRequest } from './attribute.ts';
import type { CardRequest } from './agent-card.ts';
import { agentCardBase, isEventStream, isJsonType, jsonRpcCall, restMethod } from './classify.ts';
import { CallMetrics, noteOutcome } from './metrics.ts';
import { logResponseInfo, parseResponseInfo } from './response-info.ts';
import type { ResponseInfo } from './response-info.ts';
import { AgentNames, endCallSpan, spanResponse, startCallSpan } from './span.ts';
import type { A2aCall } from './span.ts';
import { SseTail } from './sse-tail.ts';
import { DEFAULT_MAX_STREAMS_PER_CLIENT, StreamLimit } from './stream-limit.ts';

/** `a2a: {}`, or with `maxStreamsPerClient` (schema.json). */
export interface A2aConfig {
  readonly maxStreamsPerClient?: number;
}

/** Request bodies read to find the JSON-RPC method, and response bodies read for the log (BEHAVIOUR.md §8.3). */
const BODY_LIMIT = 2 * 1024 * 1024;

function cardRequest(ex: Exchange): CardRequest {
  const url = ex.originalUrl;
  const q = url.indexOf('?');
  // The origin follows the forwarding-header trust model (config.trustedProxies), computed by the kernel.
  return { origin: ex.externalOrigin, clientPath: q === -1 ? url : url.slice(0, q), upstreamPath: ex.path };
}

function tooLarge(): Error {
  return new AgentCardError(`processing failed: agent card exceeds ${BODY_LIMIT} bytes`);
}

/** The decoder of a `Content-Encoding` the agent may apply anyway (the card request asks for `identity`). */
function decoderOf(value: string): ((body: Buffer, options: { maxOutputLength: number }) => Buffer) | undefined {
  if (value === 'gzip' || value === 'x-gzip') return gunzipSync;
  if (value === 'deflate') return inflateSync;
  if (value === 'br') return brotliDecompressSync;
  return undefined;
}

/** The card's bytes without their `Content-Encoding`; throws AgentCardError with the reply message. */
function decodeCard(encoding: unknown, body: Buffer): Buffer {
  const value = typeof encoding === 'string' ? encoding.trim().toLowerCase() : '';
  if (value === '' || value === 'identity') return body;
  const name = value.slice(0, 32);
  const decode = decoderOf(value);
  if (decode === undefined) throw new AgentCardError(`processing failed: agent card Content-Encoding not supported (${name})`);
  try {
    return decode(body, { maxOutputLength: BODY_LIMIT });
  } catch (err) {
    // zlib stops at maxOutputLength with ERR_BUFFER_TOO_LARGE: the card decodes to more than the cap.
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
    throw new AgentCardError(`processing failed: agent card could not be decoded (${name})`);
  }
}

/**
 * A call's JSON answer as text for the log: decoded when the agent compressed it (fetch-based clients ask for gzip),
 * at most 2 MiB of it; undefined when it does not decode (nothing is logged, the answer passes as it came).
 */
function answerText(encoding: unknown, body: Buffer): string | undefined {
  try {
    return decodeCard(encoding, body).toString('utf8');
  } catch {
    return undefined;
  }
}

/** Logs what a call's SSE answer said so far, if its end has not (run by the log hook). */
const unsettledStreamAttribute = defineAttribute<() => void>('a2a.stream');

/** The methods that answer with an agent card, the extended one (v1.0 and v0.3 names): rewritten like a card. */
const EXTENDED_CARD_METHODS: ReadonlySet<string> = new Set(['GetExtendedAgentCard', 'agent/getAuthenticatedExtendedCard']);

/** The access-log fields and span attributes of what an answer says. */
function logAnswer(ex: Exchange, info: ResponseInfo): void {
  logResponseInfo(info, (name, value) => ex.logField(name, value));
  spanResponse(ex, info);
  noteOutcome(ex, info);
}

/** The reply's body is now `body`, not the agent's bytes: their length, coding and validator go. */
function replaceBody(reply: Reply, body: string | Buffer): void {
  delete reply.headers['content-length'];
  delete reply.headers['content-encoding'];
  delete reply.headers.etag;
  reply.body = body;
}

/**
 * Replace the card in the reply with the rewritten one. A card that cannot be rewritten becomes the 503 of
 * BEHAVIOUR.md §4.5. `call`: the card answers an extended-card call, as a JSON-RPC `result` when the call was a
 * POST; what the answer says is logged like any call's.
 */
function rewriteCardReply(ex: Exchange, reply: Reply, names: AgentNames, call = false): void | Promise<void> {
  const request = cardRequest(ex);
  const base = agentCardBase(request.clientPath);
  const apply = (bytes: Buffer): void => {
    const plain = decodeCard(reply.headers['content-encoding'], bytes);
    const seen = (card: Record<string, unknown>): void => {
      if (base !== undefined) names.remember(base, card.name);
    };
    const rewritten = rewriteAgentCardBody(plain, request, seen, call && ex.method === 'POST');
    // Undefined: a JSON-RPC error answer, passed on as the agent sent it (decoded).
    replaceBody(reply, rewritten ?? plain);
    const info = call ? parseResponseInfo(rewritten ?? plain.toString('utf8'), true) : undefined;
    if (info) logAnswer(ex, info);
  };
  // The reply waits for the whole card (2 MiB).
  const body = reply.body;
  const unreadable = 'processing failed: agent card could not be read';
  if (body instanceof Readable) return readCapped(body, BODY_LIMIT, { tooLarge }).then(apply).catch((err: unknown) => fail(reply, err, unreadable));
  try {
    apply(bodyBytes(body));
  } catch (err) {
    fail(reply, err, unreadable);
  }
}

/**
 * A JSON answer to a call the gateway could not name (a body it could not read as JSON, or too large to read),
 * which an agent with another parser may still have taken for an extended-card call: read up to 2 MiB, and a card
 * in it is rewritten; any other answer, and one too large to look at, passes byte for byte.
 */
function inspectUnnamedReply(ex: Exchange, reply: Reply): void | Promise<void> {
  const look = (bytes: Buffer): void => {
    let plain: Buffer | undefined;
    try {
      plain = decodeCard(reply.headers['content-encoding'], bytes);
    } catch {
      // Not decodable here: no card the gateway could rewrite, so none a client could read either.
      plain = undefined;
    }
    const rewritten = plain && rewriteCardIfAny(plain, cardRequest(ex));
    if (rewritten === undefined) reply.body = bytes;
    else replaceBody(reply, rewritten);
    const info = plain && parseResponseInfo(rewritten ?? plain.toString('utf8'), true);
    if (info) logAnswer(ex, info);
  };
  const body = reply.body;
  const unreadable = 'processing failed: agent answer could not be read';
  if (body instanceof Readable) {
    return readUpTo(body, BODY_LIMIT)
      .then((got) => (got instanceof Readable ? void (reply.body = got) : look(got)))
      .catch((err: unknown) => fail(reply, err, unreadable));
  }
  try {
    look(bodyBytes(body));
  } catch (err) {
    fail(reply, err, unreadable);
  }
}

/** Turn the reply into the 503 `processing failed` error. */
function fail(reply: Reply, err: unknown, unreadable: string): void {
  // Any other error is the agent's stream failing (a reset, a cut body): its message names a socket, not the card.
  const message = err instanceof AgentCardError ? err.message : unreadable;
  const failed = jsonErrorReply(503, 'processing_failed', message);
  reply.status = failed.status;
  reply.body = failed.body;
  for (const name of Object.keys(reply.headers)) delete reply.headers[name];
  Object.assign(reply.headers, failed.headers);
}

/** Read the outcome of a call's reply for the access log as it passes, without holding back a stream. */
function inspectCallReply(ex: Exchange, reply: Reply): void {
  const body = reply.body;
  const ok = reply.status >= 200 && reply.status < 300;
  const log = (info: ResponseInfo): void => logAnswer(ex, info);
  const contentType = reply.headers['content-type'];
  if (isEventStream(contentType) && body instanceof Readable) {
    const tail = new SseTail<ResponseInfo>((data) => parseResponseInfo(data, ok));
    let settled = false;
    const settle = (ended: boolean): void => {
      if (settled) return;
      settled = true;
      // A cut stream's unfinished last event says nothing: only the events that arrived whole count.
      if (ended) tail.end();
      // The outcome of the last event; the task state of the last event that carried one.
      const last = tail.last();
      if (!last) return;
      const withState = tail.lastWithState();
      log({ ...last, taskState: last.taskState ?? withState?.taskState, contextId: last.contextId ?? withState?.contextId, taskId: last.taskId ?? withState?.taskId });
    };
    // A stream cut short (the client left, the agent stalled or failed) never ends: the log hook settles it.
    ex.set(unsettledStreamAttribute, () => settle(false));
    reply.body = tap(body, { chunk: (chunk) => tail.push(chunk), end: () => settle(true) });
    return;
  }
  if (!isJsonType(contentType)) return;
  if (body instanceof Readable) {
    // Too large to inspect: what was kept is let go as the cap is passed.
    reply.body = tapCapped(body, BODY_LIMIT, (whole) => {
      const text = whole && answerText(reply.headers['content-encoding'], whole);
      const info = text && parseResponseInfo(text, ok);
      if (info) log(info);
    });
    return;
  }
  if (body === null || body === undefined) return;
  const text = typeof body === 'string' ? body : answerText(reply.headers['content-encoding'], bodyBytes(body));
  const info = text && parseResponseInfo(text, ok);
  if (info) log(info);
}

/**
 * A card request: the path sent upstream or the one the client asked for is a card path. A route may map the
 * well-known path onto wherever its agent serves the card (`urlRewrite` `full`); that answer is the card too.
 */
function isCardPath(ex: Exchange): boolean {
  return agentCardBase(ex.path) !== undefined || agentCardBase(clientPath(ex)) !== undefined;
}

/** Classify a request whose body is not needed: an agent card, a REST call, or other. */
function classifyByUrl(ex: Exchange): A2aRequest {
  const method = ex.method;
  if ((method === 'GET' || method === 'HEAD') && isCardPath(ex)) return { kind: 'card', responded: false };
  const rest = restMethod(method, ex.path);
  if (rest) return { kind: 'call', method: rest, responded: false };
  return method === 'POST' ? { kind: 'call', method: 'unknown', responded: false } : { kind: 'other', responded: false };
}

/** A JSON POST: the JSON-RPC call of its body, else the REST method of its path. */
async function classifyJsonPost(ex: Exchange): Promise<A2aCall> {
  // A body over the limit, sized or chunked, streams through whole rather than failing the call (ADR 0142).
  const body = await ex.peekBody(BODY_LIMIT);
  return (body && jsonRpcCall(body)) || { method: restMethod('POST', ex.path) ?? 'unknown' };
}

/** The path the client called, without the query (agent cards are looked up by it). */
function clientPath(ex: Exchange): string {
  const url = ex.originalUrl;
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** A call's span, when the gateway traces; `unknown` calls (a POST that names no method) get none. */
function traceCall(spans: PluginSpans | undefined, names: AgentNames, ex: Exchange, call: A2aCall): void {
  if (spans === undefined || !spans.enabled || call.method === 'unknown') return;
  startCallSpan(spans, ex, call, names.lookup(clientPath(ex)));
}

function record(ex: Exchange, request: A2aRequest): void {
  ex.set(a2aRequestAttribute, request);
  // The protocol label of logs and metrics (BEHAVIOUR.md §6.1); the backend's `http` does not replace it.
  ex.protocol = 'a2a';
  if (request.method !== undefined) ex.logField('a2a.method', request.method);
  if (request.kind === 'card' || EXTENDED_CARD_METHODS.has(request.method ?? '')) {
    // The card is rewritten as JSON text: ask the agent for all of it (a range of its bytes names no range of the
    // rewritten card; the client gets the whole card, as RFC 9110 lets a server ignore Range), uncompressed.
    ex.headers['accept-encoding'] = 'identity';
    delete ex.headers.range;
    delete ex.headers['if-range'];
  }
}

/** Compile `a2a: {}`. */
export function compileA2a(config: A2aConfig, ctx: CompileContext): PolicyInstance {
  const spans = ctx.spans;
  const metrics = new CallMetrics(ctx);
  const names = new AgentNames();
  const max = config.maxStreamsPerClient ?? DEFAULT_MAX_STREAMS_PER_CLIENT;
  // Kept across reloads that leave this route's bound as it is: streams opened before a reload are released into the
  // same count, so a reload does not give each client `max` more (ADR 0182).
  const streams = ctx.resources.get(`a2a:streams:${ctx.stateKey ?? JSON.stringify(ctx.path)}:${max}`, () => new StreamLimit(max));
  return {
    onRequest(ex) {
      if (ex.get(a2aRequestAttribute)) return undefined;
      // Only a JSON POST needs its body; everything else is decided without waiting.
      if (ex.method === 'POST' && isJsonType(ex.headers['content-type'])) {
        // An A2A call from the start: one whose body cannot be read (the client gone, logged as it leaves, before the
        // read fails) is logged and counted as one, of method `unknown`.
        record(ex, { kind: 'call', method: 'unknown', responded: false });
        return classifyJsonPost(ex).then((call) => {
          record(ex, { kind: 'call', method: call.method, responded: false });
          const refused = streams.admit(ex, call.method);
          if (refused) return refused;
          traceCall(spans, names, ex, call);
          return undefined;
        });
      }
      const request = classifyByUrl(ex);
      record(ex, request);
      if (request.kind !== 'call') return undefined;
      const refused = streams.admit(ex, request.method);
      if (refused) return refused;
      traceCall(spans, names, ex, { method: request.method! });
      return undefined;
    },
    onResponse(ex, reply) {
      const request = ex.get(a2aRequestAttribute);
      if (!request || request.responded || reply.local) return;
      request.responded = true;
      if (request.kind === 'card') {
        if (reply.status < 200 || reply.status >= 300 || !isCardPath(ex)) return undefined;
        if (ex.method === 'GET') return rewriteCardReply(ex, reply, names);
        // HEAD: the agent's length and validator are those of its own card, not of the rewritten one a GET gets.
        delete reply.headers['content-length'];
        delete reply.headers['content-encoding'];
        delete reply.headers.etag;
      } else if (request.kind === 'call') {
        const contentType = reply.headers['content-type'];
        if (reply.status >= 200 && reply.status < 300 && !isEventStream(contentType)) {
          if (EXTENDED_CARD_METHODS.has(request.method ?? '')) return rewriteCardReply(ex, reply, names, true);
          // A declared length past the cap is too large to look at: it streams, watched as any call's answer.
          const declared = Number(reply.headers['content-length'] ?? NaN);
          if (request.method === 'unknown' && isJsonType(contentType) && !(declared > BODY_LIMIT)) return inspectUnnamedReply(ex, reply);
        }
        inspectCallReply(ex, reply);
      }
      return undefined;
    },
    onLog(ex, status) {
      streams.release(ex);
      ex.get(unsettledStreamAttribute)?.();
      endCallSpan(ex, status);
      const request = ex.get(a2aRequestAttribute);
      if (request?.kind === 'call') metrics.record(ex, request.method ?? 'unknown', status);
    },
  };
}
