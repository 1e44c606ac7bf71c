// The provider's answer made the client's: errors in the client's shape, streams observed or translated, whole
// answers passed through (usage read on the way) or translated and guarded.
import { Readable } from 'node:stream';
import { GatewayError, pipeWithTeardown, readCapped, replyHeader, tapCapped } from 'switchyard/sdk';
import type { Exchange, Logger, Reply } from 'switchyard/sdk';
import type { AiPolicyRuntime, LlmRouteType, LlmWireFormat } from '../../lib/llm/contract.ts';
import { responseDecoder } from '../../lib/llm/body.ts';
import { clientErrorBody, googleRetryAfter, llmResponseError, parseUpstreamError } from '../../lib/llm/errors.ts';
import { isObj } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';
import { answerToObserve, observeEvent, observeResponse } from '../../lib/llm/observe.ts';
import { LlmResponseStream, observeBeside, serializerOf } from '../../lib/llm/stream.ts';
import type { LlmEvent } from '../../lib/llm/events.ts';
import type { LlmCall } from '../../lib/llm/telemetry.ts';
import type { Translation } from '../../lib/llm/formats/index.ts';
import type { LlmFormat } from '../../lib/llm/formats/format.ts';
import { isUsageChunk } from '../../lib/llm/formats/completions.ts';
import { guardStreamedReply } from './stream-guard.ts';
import { asJsonArray } from '../../lib/llm/gemini/json-array.ts';
import { streamErrorType } from '../../lib/llm/error-type.ts';

/** Largest non-streamed response translated or guarded (read whole); larger ones fail with 502. */
export const RESPONSE_LIMIT = 32 * 1024 * 1024;
/** Largest response copy kept to read usage from a passed-through body; beyond it usage is not logged. */
const USAGE_LIMIT = 8 * 1024 * 1024;
/** Largest passed-through answer read whole (with a Content-Length) instead of tapped as it streams by. */
const SMALL_ANSWER = 64 * 1024;
/** Largest upstream error body translated into the client's error shape. */
const ERROR_LIMIT = 1024 * 1024;
/** What an error body past ERROR_LIMIT, or one that could not be read, is translated as (its status kept). */
const UNREADABLE_ERROR = Buffer.from(JSON.stringify({ error: { message: "the provider's error answer was too large or could not be read" } }));

/** What one request is: the formats on both sides and how to translate between them. */
export interface LlmRequest {
  readonly client: LlmRouteType;
  readonly clientFormat: LlmFormat;
  readonly wire: LlmWireFormat;
  /** The wire format's module (the provider's own, else a built-in one). */
  readonly wireFormat: LlmFormat;
  readonly model: string;
  readonly stream: boolean;
  readonly translation: Translation;
  /** A Chat Completions stream whose client turned the usage chunk off (`stream_options`): translated, or asked for by a limit. */
  readonly omitUsageChunk: boolean;
  /** A Gemini client's stream without `alt=sse`: answered as Google's JSON array (`asJsonArray`). */
  readonly jsonArray: boolean;
  readonly call: LlmCall;
  readonly policy: AiPolicyRuntime | undefined;
}

/** The provider's answer in the client's terms (`respond`); a failure there is the call's, answered 502. */
export function answerReply(ex: Exchange, reply: Reply, request: LlmRequest, log: Logger): Reply | Promise<Reply> {
  const call = request.call;
  if (reply.status >= 400) call.fail(String(reply.status));
  else call.accepted();
  const failed = (err: unknown): Reply => {
    call.fail(err);
    if (reply.body instanceof Readable && !reply.body.destroyed) reply.body.destroy();
    if (err instanceof GatewayError) throw err;
    // A deadline, not a bad answer: 504, as the kernel answers a silent upstream (undici's text is no message).
    if ((err as { code?: unknown }).code === 'UND_ERR_BODY_TIMEOUT') {
      return llmResponseError(504, 'the provider went silent longer than the stream idle timeout');
    }
    log.warn('failed to process an LLM response', { error: (err as Error).message });
    return llmResponseError(502, (err as Error).message);
  };
  try {
    const out = respond(ex, reply, request);
    if (request.jsonArray) return out instanceof Promise ? out.then(asJsonArray, failed) : asJsonArray(out);
    return out instanceof Promise ? out.then(undefined, failed) : out;
  } catch (err) {
    return failed(err);
  }
}

/**
 * Turn the provider's answer into the client's: errors and bodies translated, streams translated chunk by chunk. Sync
 * when nothing has to be waited for (the usual answer: read whole and passed through), a promise otherwise.
 */
function respond(ex: Exchange, reply: Reply, req: LlmRequest): Reply | Promise<Reply> {
  // Headers read by name (`replyHeader`): an answer read whole keeps its raw list, written without an object made.
  const encoding = replyHeader(reply, 'content-encoding');
  // A compressed answer read whole is decoded as a stream, like a streamed one (rare: identity is asked for).
  if (Buffer.isBuffer(reply.body) && encoding !== undefined) reply.body = Readable.from([reply.body]);
  let decoded = false;
  if (reply.body instanceof Readable) {
    const decoder = responseDecoder(encoding as string | undefined);
    if (decoder) {
      decoded = true;
      reply.body = pipeWithTeardown(reply.body, decoder);
      const h = reply.headers;
      delete h['content-encoding'];
      delete h['content-length'];
    }
  }
  // Read whole by the target (a non-streamed call): the bytes themselves, no stream made for them.
  const whole = Buffer.isBuffer(reply.body) ? reply.body : undefined;
  const body = whole !== undefined ? undefined : reply.body instanceof Readable ? reply.body : Readable.from(reply.body ? [Buffer.from(reply.body)] : []);

  if (reply.status >= 400) {
    const clientFamily = req.clientFormat.family;
    const sameShape = clientFamily === req.wireFormat.family || (clientFamily !== 'openai' && clientFamily !== 'anthropic');
    const hinted = retryHinted(reply, req);
    if (sameShape && !hinted) return reply;
    const settle = (bytes: Buffer, readable: boolean): Reply => {
      if (hinted && readable) retryHintToHeader(reply, bytes);
      if (!sameShape) return clientError(reply, clientFamily as 'openai' | 'anthropic', readable ? bytes : UNREADABLE_ERROR);
      reply.body = bytes;
      delete reply.headers['transfer-encoding'];
      reply.headers['content-length'] = String(bytes.length);
      return reply;
    };
    // A body past the limit (or cut) loses its message, never its status: a 429 stays a 429 for the client's retries.
    if (whole !== undefined) return settle(whole, whole.length <= ERROR_LIMIT);
    return readCapped(body!, ERROR_LIMIT).then(
      (bytes) => settle(bytes, true),
      () => settle(UNREADABLE_ERROR, false),
    );
  }

  const contentType = String(replyHeader(reply, 'content-type') ?? '').toLowerCase();
  const source = contentType.includes('text/event-stream') ? 'sse' : contentType.includes('application/vnd.amazon.eventstream') ? 'eventstream' : undefined;
  if (req.stream && source) {
    // A usage chunk the client turned off (one a limit asked for) is taken out: the stream goes through a translator.
    const translator = req.translation.identity && !req.omitUsageChunk ? undefined : req.translation.stream(req.model);
    const captures = req.call.capturesContent;
    const wireFormat = req.wireFormat;
    const options = {
      source,
      onEvent: (e: LlmEvent) => {
        req.call.firstEvent();
        observeEvent(req.wireFormat, e, req.call);
        if (captures) req.call.recordEvent(req.wireFormat, e);
      },
      onEnd: () => req.call.finish(),
      // Capturing content, or a recorded span's finish reasons (ADR 0180), needs every event parsed, not only those carrying usage.
      observes: req.wireFormat.observes && !captures && req.call.outcome === undefined ? (event: string | undefined, data: string) => req.wireFormat.observes!(event, data, req.call) : undefined,
      onSkipped: () => req.call.firstEvent(),
      // The output relayed so far: what a stream cut before its usage is charged (ADR 0150).
      onData: wireFormat.outputBytes ? (data: string) => req.call.addOutputBytes(wireFormat.outputBytes!(data)) : undefined,
    } as const;
    const guarded = req.policy?.guardStreams === true && req.policy.hasResponseGuards;
    req.call.relayingStream();
    if (!translator) {
      // Passed through, the bytes are the upstream's, observed beside the pipe (no stream in between): its headers (a
      // Content-Length among them) stay as they came, the raw list written without a header object made (ADR 0081).
      reply.body = failWhenCut(observeBeside(body!, options), req.call, ex);
      // `promptGuard.streaming: Enabled`: held until it ends and guarded whole (stream-guard.ts), which parses every
      // event once; the observer beside it parses only those carrying usage.
      return guarded ? guardStreamedReply(ex, reply, req.client, req.policy!) : reply;
    }
    // Halted, the client got an error event (a held answer over its cap): the call failed.
    const onHalt = (): void => req.call.fail(new Error('the translated stream was halted'));
    const omit = req.omitUsageChunk ? isUsageChunk : undefined;
    const translated = new LlmResponseStream({ ...options, client: req.client, translator, onHalt, omit });
    reply.body = failWhenCut(pipeEndingInError(body!, translated, req, ex), req.call, ex);
    const h = reply.headers;
    delete h['content-length'];
    h['content-type'] = 'text/event-stream';
    h['cache-control'] = 'no-cache';
    if (guarded) return guardStreamedReply(ex, reply, req.client, req.policy!);
    return reply;
  }

  const guards = req.policy?.hasResponseGuards === true;
  // A stream asked for, a JSON body answered (a provider ignoring `stream`, a cached answer): the client still gets a
  // stream in its own format, carrying the whole answer. Another body of the client's own API passes as before.
  if (req.stream && req.clientFormat.answerEvents && (!req.translation.identity || contentType.includes('json'))) return translateWhole(ex, reply, req, whole, body, guards, true);
  // A small answer with a known length is read whole and sent as one buffer (its usage read on the way): cheaper
  // than a tapping stream in between, and the client would wait for the last byte of it anyway.
  if (req.translation.identity && !guards && whole !== undefined) return passWhole(reply, req, whole);
  // A decoded answer is read whole before its head goes out: a body that does not decode (a corrupt gzip) is then
  // a 502 the client can read, not 200 and a cut connection (ADR 0199). Compressed answers are rare (identity is asked for).
  if (req.translation.identity && !guards && decoded) return readCapped(body!, RESPONSE_LIMIT).then((bytes) => passWhole(reply, req, bytes));
  if (req.translation.identity && !guards && Number(replyHeader(reply, 'content-length')) <= SMALL_ANSWER) return readCapped(body!, SMALL_ANSWER).then((bytes) => passWhole(reply, req, bytes));
  if (req.translation.identity && !guards) {
    reply.body = tapCapped(body!, USAGE_LIMIT, (bytes) => {
      try {
        const parsed = bytes ? answerToObserve(req.wireFormat, bytes, req.call.capturesContent, req.call.outcome !== undefined) : undefined;
        if (parsed !== undefined) {
          observeResponse(req.wireFormat, parsed, req.call);
          if (req.call.capturesContent) req.call.recordOutput(req.wireFormat, parsed);
        }
      } catch {
        // Telemetry never fails a response: an answer too large to read for usage, or not JSON, still ends the call.
      }
      req.call.finish();
    });
    failWhenCut(reply.body, req.call, ex);
    return reply;
  }
  return translateWhole(ex, reply, req, whole, body, guards, false);
}

/**
 * An answer sent on as a stream that closes before its end fails the call, once (ADR 0135), by who cut it: the
 * provider (the body's error: `provider_disconnected`, `timeout`) or the client (the kernel destroys the body without
 * one when the client leaves: `cancelled`; or the route's deadline: `timeout`, the exchange's abort reason says which).
 * An answer that ended has finished the call before its body closes. A stream is first charged what it relayed where
 * its provider had not reported it yet (`cutShort`, ADR 0150).
 */
function failWhenCut<T extends Readable>(body: T, call: LlmCall, ex: Exchange): T {
  body.on('error', (err) => {
    call.cutShort();
    call.fail(err);
  });
  body.once('close', () => {
    if (call.ended) return;
    call.cutShort();
    // Read only now: the exchange's signal is made when first asked for (born aborted, with its reason, after the cut).
    const signal = ex.signal;
    call.fail(signal.aborted && signal.reason instanceof GatewayError ? signal.reason : new GatewayError(499, 'client_closed', 'the client went away before the answer ended'));
  });
  return body;
}

/**
 * The provider's stream piped into the client's translated one. When it fails (cut, silent past the idle timeout)
 * a Chat Completions or Messages client gets its API's error event and a clean end, as when the provider itself
 * reports an error mid-stream; the call is failed and charged as a cut one (ADR 0150, 0199). Others are cut.
 */
function pipeEndingInError(src: Readable, dst: LlmResponseStream, req: LlmRequest, ex: Exchange): LlmResponseStream {
  const family = req.client === 'completions' ? 'openai' : req.client === 'messages' ? 'anthropic' : undefined;
  src.on('error', (err) => {
    // The exchange was aborted (the route's deadline, the client left): that is what ends it, as before.
    if (ex.signal.aborted) return void dst.destroy(err);
    const timedOut = (err as { code?: unknown }).code === 'UND_ERR_BODY_TIMEOUT';
    const message = timedOut ? 'the provider went silent longer than the stream idle timeout' : 'the provider cut the stream before its end';
    const status = timedOut ? 504 : 502;
    const body = family === undefined ? undefined : clientErrorBody(family, status, { message });
    const last = body === undefined ? undefined : family === 'anthropic' ? `event: error\ndata: ${body}\n\n` : `data: ${body}\n\n`;
    if (last === undefined || !dst.endWith(last)) return void dst.destroy(err);
    req.call.cutShort();
    req.call.fail(err);
    ex.logField('error', `upstream stream failed: ${message}`);
  });
  dst.on('close', () => {
    if (!src.readableEnded && !src.destroyed) src.destroy();
  });
  src.pipe(dst);
  return dst;
}

/** A Google provider's 429/503 without `Retry-After`: its body's retry hint is looked for (Gemini sends no header). */
function retryHinted(reply: Reply, req: LlmRequest): boolean {
  return (reply.status === 429 || reply.status === 503) && req.call.provider.startsWith('gcp.') && replyHeader(reply, 'retry-after') === undefined;
}

/** The body's retry hint as `Retry-After`, for the client's SDK and for failover's cooldown (ADR 0149). */
function retryHintToHeader(reply: Reply, bytes: Buffer): void {
  const seconds = googleRetryAfter(bytes.toString('utf8'));
  if (seconds !== undefined) reply.headers['retry-after'] = String(seconds);
}

/** An upstream error in the client API's error shape. */
function clientError(reply: Reply, clientFamily: 'openai' | 'anthropic', bytes: Buffer): Reply {
  const h = reply.headers;
  reply.body = clientErrorBody(clientFamily, reply.status, parseUpstreamError(bytes.toString('utf8'), h));
  h['content-type'] = 'application/json';
  delete h['content-length'];
  delete h['transfer-encoding'];
  return reply;
}

/**
 * An error the provider answered with a success status: the client gets it as an error, with the error's `code` as
 * the status when it is one (4xx/5xx, OpenRouter's convention), an Anthropic error's status by its `type`
 * (`overloaded_error`: 529, so failover moves on as for the real 529), else 502; in the client's error shape.
 */
function errorInAnswer(reply: Reply, req: LlmRequest, error: Obj, bytes: Buffer): Reply {
  const code = error.code;
  const typed = req.wire === 'messages' ? Number(streamErrorType({ type: error.type })) : NaN;
  reply.status = typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599 ? code : Number.isInteger(typed) ? typed : 502;
  req.call.fail(String(reply.status));
  const family = req.clientFormat.family;
  if (family !== req.wireFormat.family && (family === 'openai' || family === 'anthropic')) return clientError(reply, family, bytes);
  const h = reply.headers;
  reply.body = bytes;
  h['content-type'] = 'application/json';
  delete h['content-length'];
  delete h['transfer-encoding'];
  return reply;
}

/** A complete answer passed through as it came: its usage and model read on the way (ADR 0060). */
function passWhole(reply: Reply, req: LlmRequest, bytes: Buffer): Reply {
  try {
    // As the tap in `respond`: beyond USAGE_LIMIT usage is not read.
    const parsed = bytes.length <= USAGE_LIMIT ? answerToObserve(req.wireFormat, bytes, req.call.capturesContent, req.call.outcome !== undefined) : undefined;
    if (parsed !== undefined) {
      observeResponse(req.wireFormat, parsed, req.call);
      if (req.call.capturesContent) req.call.recordOutput(req.wireFormat, parsed);
    }
  } catch {
    // Telemetry never fails a response.
  }
  req.call.finish();
  reply.body = bytes;
  return reply;
}

/**
 * A complete answer translated into the client's format and guarded: read whole, parsed, serialised again; as the
 * client format's stream events when the client asked for a stream (`asStream`).
 */
async function translateWhole(ex: Exchange, reply: Reply, req: LlmRequest, whole: Buffer | undefined, body: Readable | undefined, guards: boolean, asStream: boolean): Promise<Reply> {
  const h = reply.headers;
  let bytes: Buffer;
  try {
    bytes = whole ?? (await readCapped(body!, RESPONSE_LIMIT));
  } catch (err) {
    req.call.fail(err);
    if (err instanceof RangeError) return llmResponseError(502, 'response too large');
    throw err;
  }
  let parsed: unknown;
  let failure: string | undefined;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
    if (!isObj(parsed)) failure = 'the provider did not answer with a JSON object';
  } catch {
    failure = 'the provider did not answer with JSON';
  }
  if (failure !== undefined || !isObj(parsed)) {
    // Untranslated and unguarded, a body that is no JSON answer (a stream under another content type) goes on as it came.
    if (asStream && req.translation.identity && !guards) return passWhole(reply, req, bytes);
    failure ??= 'the provider did not answer with a JSON object';
    req.call.fail(new Error(failure));
    return llmResponseError(502, failure);
  }
  // An OpenAI-compatible provider's error in a 200 body (OpenRouter, once the model was picked) is no answer; nor is
  // Anthropic's error envelope (a proxy in front of Anthropic answering it with 200), which translated to an empty answer.
  if (req.wire === 'completions' && isObj(parsed.error) && !Array.isArray(parsed.choices)) return errorInAnswer(reply, req, parsed.error, bytes);
  if (req.wire === 'messages' && parsed.type === 'error' && isObj(parsed.error)) return errorInAnswer(reply, req, parsed.error, bytes);
  observeResponse(req.wireFormat, parsed, req.call);
  if (req.call.capturesContent) req.call.recordOutput(req.wireFormat, parsed);
  req.call.finish();
  const clientBody = req.translation.response(parsed, req.model);
  if (guards) {
    const rejected = await req.policy!.guardResponse(ex, req.client, clientBody);
    if (rejected) return rejected;
  }
  delete h['content-length'];
  delete h['transfer-encoding'];
  if (asStream) {
    const serialize = serializerOf(req.clientFormat);
    const events = req.clientFormat.answerEvents!(clientBody);
    reply.body = (req.omitUsageChunk ? events.filter((e) => !isUsageChunk(e)) : events).map(serialize).join('');
    h['content-type'] = 'text/event-stream';
    h['cache-control'] = 'no-cache';
    return reply;
  }
  reply.body = JSON.stringify(clientBody);
  h['content-type'] = 'application/json';
  return reply;
}
