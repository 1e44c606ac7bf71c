// A metered realtime WebSocket session (ADR 0190, 0192): the provider's frames to the client are read as they pass
// (RFC 6455 section 5: headers parsed, messages put together from their fragments, bounded), and each usage they carry
// (OpenAI Realtime's `response.done`, Gemini Live's `usageMetadata`) is charged to the route's token limits and
// virtual keys, costs and metrics as it arrives. A limit used up ends the session: an `error` event where the API has
// one, then a Close frame (1008) with the refusal's message. The same reader reads the client's first Gemini Live
// message (masked frames) for the session's model.
import { Transform } from 'node:stream';
import type { Duplex, TransformCallback } from 'node:stream';
import { ErrorCode, GatewayError, llmTokenLimiters } from 'switchyard/sdk';
import type { Exchange, LlmTokenLimiter, Logger, Reply, UpstreamAttempt, UpstreamTarget } from 'switchyard/sdk';
import { LlmCall } from '../../lib/llm/telemetry.ts';
import type { PriceOf } from '../../lib/llm/telemetry.ts';
import type { LlmMetrics } from '../../lib/llm/llm-metrics.ts';
import { firstRefusal, MAX_MODEL_NAME, reserveTokens } from './request-parts.ts';
import { isObj } from '../../lib/llm/json.ts';
import type { LlmUsage } from '../../lib/llm/usage.ts';
import { GEMINI_LIVE, LIVE_SETUP } from './realtime-dialects.ts';
import type { RealtimeDialect } from './realtime-dialects.ts';

/**
 * Longest text message read for its usage: a `response.done` carries its output items (transcripts, tool calls), far
 * under it. A longer message (any event) is relayed unread, its bytes not kept.
 */
export const REALTIME_MESSAGE_LIMIT = 4 * 1024 * 1024;
/** A Close frame's reason: at most 123 bytes (a control frame's payload is at most 125, the code takes 2). */
const MAX_CLOSE_REASON = 123;
/** RFC 6455 section 7.4.1: the endpoint is terminating the connection because of a policy violation. */
const CLOSE_POLICY = 1008;
/** RFC 6455 section 7.4.1: an unexpected condition prevented the server from fulfilling the request. */
const CLOSE_INTERNAL = 1011;
/** RFC 6455 section 7.4.1: a protocol error (frames the gateway cannot read on a metered route). */
const CLOSE_PROTOCOL = 1002;

/** An unmasked (server-to-client) frame: FIN set, `opcode`, the payload's length in 7, 16 or 64 bits. */
function frame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, n]) : n < 65536 ? Buffer.from([0x80 | opcode, 126, n >> 8, n & 0xff]) : Buffer.alloc(10);
  if (n >= 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(n), 2);
  }
  return Buffer.concat([head, payload]);
}

/** A Close frame with `code` and as much of `reason` as fits, cut at a character boundary. */
function closeFrame(code: number, reason: string): Buffer {
  let text = reason;
  while (Buffer.byteLength(text) > MAX_CLOSE_REASON) text = text.slice(0, -1);
  const payload = Buffer.alloc(2 + Buffer.byteLength(text));
  payload.writeUInt16BE(code, 0);
  payload.write(text, 2);
  return frame(0x8, payload);
}

/** What a session's meter needs. */
export interface MeterParts {
  readonly ex: Exchange;
  readonly call: LlmCall;
  readonly limiters: readonly LlmTokenLimiter[];
  readonly dialect: RealtimeDialect;
  /** Ends the connection from the gateway (the kernel's `UpgradeRelay` close). */
  readonly close: (cause: string) => void;
  readonly log: Logger;
  /**
   * The frames are a client's (masked, RFC 6455 section 5.3), read for their first message only (Gemini Live's
   * `setup`); `close` is called once it has been read.
   */
  readonly masked?: boolean;
}

/**
 * The upstream-to-client bytes of one session, passed on as they come. Only at the end of a `response.done` whose
 * charge the store answers later (a shared store) are the bytes after it held until it answers.
 */
export class RealtimeMeter extends Transform {
  private readonly p: MeterParts;
  private readonly header = Buffer.alloc(14);
  private headerLength = 0;
  /** Payload bytes of the current frame still to come. */
  private remaining = 0;
  /** The current frame is a control frame (its payload is not part of the message). */
  private control = false;
  /** The message being read is parsed, within the limit: its payload parts so far (views of the chunks, not copies). */
  private parts: Buffer[] | undefined = undefined;
  /** A masked frame's key and how far into its payload the reader is. */
  private readonly mask = Buffer.alloc(4);
  private maskAt = 0;
  private maskedFrame = false;
  private size = 0;
  /** The last data frame (not a control frame) had FIN set: the next data frame starts a message. */
  private ended = true;
  /** The session's usage so far, as the call's telemetry takes it (cumulative). */
  private readonly total = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, audioInputTokens: 0, cachedAudioInputTokens: 0, audioOutputTokens: 0 };
  private gatewayClosed = false;
  private warned = false;

  constructor(p: MeterParts) {
    super();
    this.p = p;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.gatewayClosed) return done();
    this.readFrom(chunk, 0, done);
  }

  /** Read `chunk` from `at`, pushing it on; a charge answered later holds the rest until it settles. */
  private readFrom(chunk: Buffer, at: number, done: TransformCallback): void {
    let start = at;
    let i = at;
    const n = chunk.length;
    /** Where in this chunk the frame header being read began (-1: in an earlier chunk). */
    let headerAt = -1;
    while (i < n) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, n - i);
        if (!this.control && this.parts !== undefined) this.collect(this.unmasked(chunk.subarray(i, i + take)));
        else if (this.maskedFrame) this.maskAt += take;
        this.remaining -= take;
        i += take;
        if (this.remaining > 0 || this.control || !this.ended) continue;
      } else {
        if (this.headerLength === 0) headerAt = i;
        this.header[this.headerLength++] = chunk[i++]!;
        const size = this.headerSize();
        if (size === -1 || this.headerLength < size) continue;
        if (!this.frameHeader()) {
          // The client gets the frames before this one, not its header.
          if (headerAt > start) this.push(chunk.subarray(start, headerAt));
          this.endSession(CLOSE_PROTOCOL, 'protocol_error', 'the provider sent WebSocket frames the gateway cannot read for usage');
          return done();
        }
        if (this.remaining > 0 || this.control || !this.ended) continue;
      }
      // A data message ended here.
      const charged = this.messageEnded();
      if (charged === undefined) continue;
      this.push(chunk.subarray(start, i));
      start = i;
      if (!(charged instanceof Promise)) {
        this.endSession(CLOSE_POLICY, charged.error?.type ?? 'rate_limited', charged.error?.message ?? 'limit exceeded');
        return done();
      }
      const resume = i;
      charged.then(
        (refused) => {
          if (refused) {
            this.endSession(CLOSE_POLICY, refused.error?.type ?? 'rate_limited', refused.error?.message ?? 'limit exceeded');
            return done();
          }
          this.readFrom(chunk, resume, done);
        },
        (err: unknown) => {
          // The limit could not be checked (its store failed): the session ends, as a request would be refused.
          this.p.log.error('realtime session usage could not be charged; closing the session', { error: (err as Error)?.message ?? String(err) });
          this.endSession(CLOSE_INTERNAL, 'internal_error', 'the gateway could not charge the session its usage');
          done();
        },
      );
      return;
    }
    if (start < n) this.push(start === 0 ? chunk : chunk.subarray(start));
    done();
  }

  /** A masked frame's payload part, unmasked (a copy); an unmasked frame's part as it is. */
  private unmasked(part: Buffer): Buffer {
    if (!this.maskedFrame) return part;
    const out = Buffer.allocUnsafe(part.length);
    for (let k = 0; k < part.length; k++) out[k] = part[k]! ^ this.mask[(this.maskAt + k) & 3]!;
    this.maskAt += part.length;
    return out;
  }

  /** Bytes the header in hand needs in all; -1 while its second byte has not arrived. */
  private headerSize(): number {
    if (this.headerLength < 2) return -1;
    const b1 = this.header[1]!;
    const len7 = b1 & 0x7f;
    return 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + (b1 & 0x80 ? 4 : 0);
  }

  /**
   * A complete header; false when the frames cannot be read: reserved bits set (an extension the gateway did not
   * offer, such as compression), a masked frame from a server (never) or an unmasked one from a client (always
   * masked), a reserved opcode, a long control frame.
   */
  private frameHeader(): boolean {
    const h = this.header;
    this.headerLength = 0;
    const opcode = h[0]! & 0x0f;
    this.maskedFrame = (h[1]! & 0x80) !== 0;
    if ((h[0]! & 0x70) !== 0 || this.maskedFrame !== (this.p.masked === true)) return false;
    const len7 = h[1]! & 0x7f;
    const length = len7 === 126 ? h.readUInt16BE(2) : len7 === 127 ? h.readUInt32BE(2) * 2 ** 32 + h.readUInt32BE(6) : len7;
    if (this.maskedFrame) {
      const at = len7 === 126 ? 4 : len7 === 127 ? 10 : 2;
      h.copy(this.mask, 0, at, at + 4);
      this.maskAt = 0;
    }
    this.remaining = length;
    this.control = opcode >= 0x8;
    if (this.control) return opcode <= 0xa && length <= 125;
    if (opcode > 2) return false;
    const fin = (h[0]! & 0x80) !== 0;
    if (opcode !== 0) {
      // A new message: text is read, binary only where the API sends its events so (Gemini Live).
      this.parts = opcode === 1 || this.p.dialect.binary ? [] : undefined;
      this.size = 0;
    }
    this.ended = fin;
    return true;
  }

  private collect(part: Buffer): void {
    this.size += part.length;
    if (this.size > REALTIME_MESSAGE_LIMIT) {
      this.parts = undefined;
      if (!this.warned) {
        this.warned = true;
        this.p.log.warn('realtime event larger than the limit relayed unread for usage', { limit: REALTIME_MESSAGE_LIMIT });
      }
      return;
    }
    this.parts!.push(part);
  }

  /** A message ended: its usage is charged (the answer: a refusal, or one to wait for); else nothing. */
  private messageEnded(): Reply | Promise<Reply | undefined> | undefined {
    const parts = this.parts;
    this.parts = undefined;
    // The rest of the chunk that held a client's first message is still framed, not read.
    if (this.p.masked && this.gatewayClosed) return undefined;
    if (this.p.masked) {
      // The client's first message ended (read, or too long to be): nothing more of the client's is read.
      this.gatewayClosed = true;
      this.p.close('read');
    }
    if (parts === undefined || parts.length === 0) return undefined;
    const text = parts.length === 1 ? parts[0]! : Buffer.concat(parts, this.size);
    const dialect = this.p.dialect;
    if (!dialect.markers.some((marker) => text.indexOf(marker) !== -1)) return undefined;
    let event: unknown;
    try {
      event = JSON.parse(text.toString('utf8'));
    } catch {
      return undefined;
    }
    if (!isObj(event)) return undefined;
    const usage = dialect.read(event, this.p.call);
    // Usage that cannot be priced or attributed ends the session only where limits must see it; elsewhere it passes
    // unread, as Live sessions did before they were metered.
    if (typeof usage === 'string') return this.p.limiters.length === 0 ? undefined : ({ status: 403, headers: {}, body: null, error: { type: 'permission_denied', message: usage } } as Reply);
    return usage === undefined ? undefined : this.charge(usage);
  }

  /** One response's usage: added to the session's telemetry (tokens, cost, metrics), then charged to each limiter. */
  private charge(usage: LlmUsage): Reply | Promise<Reply | undefined> | undefined {
    const t = this.total;
    t.inputTokens += usage.inputTokens ?? 0;
    t.outputTokens += usage.outputTokens ?? 0;
    t.cachedInputTokens += usage.cachedInputTokens ?? 0;
    t.reasoningTokens += usage.reasoningTokens ?? 0;
    t.audioInputTokens += usage.audioInputTokens ?? 0;
    t.cachedAudioInputTokens += usage.cachedAudioInputTokens ?? 0;
    t.audioOutputTokens += usage.audioOutputTokens ?? 0;
    const call = this.p.call;
    const before = call.cost ?? 0;
    call.addUsage({ ...t });
    const cost = call.cost === undefined ? undefined : call.cost - before;
    const charged = { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0 };
    // A limiter's throw becomes a rejection (never an exception out of the pipe): the session then ends.
    const refused = firstRefusal(this.p.limiters, 0, (limiter) => limiter.charge?.(this.p.ex, charged, cost));
    if (cost !== undefined || !this.p.dialect.priceRequired || this.p.limiters.length === 0) return refused;
    // Its tokens charged, an unpriced session may not go on where a USD budget would not see it (ADR 0192).
    const unpriced = { status: 403, headers: {}, body: null, error: { type: 'permission_denied', message: `the session's model \`${call.responseModel ?? 'unknown'}\` has no price, and this route has token limits or virtual keys: give it one in ai.costs` } } as Reply;
    return refused instanceof Promise ? refused.then((r) => r ?? unpriced) : (refused ?? unpriced);
  }

  /** The gateway ends the session: an `error` event (where the API has one), a Close frame, then the connection. */
  endSession(code: number, type: string, message: string): void {
    if (this.gatewayClosed) return;
    this.gatewayClosed = true;
    if (this.p.dialect.errorEvent) {
      const event = { type: 'error', event_id: null, error: { type, code: type, message, param: null, event_id: null } };
      this.push(frame(0x1, Buffer.from(JSON.stringify(event))));
    }
    this.push(closeFrame(code, message));
    this.push(null);
    this.p.close(code === CLOSE_POLICY ? 'llm_limit' : code === CLOSE_PROTOCOL ? 'unreadable_frames' : 'llm_charge_failed');
  }
}

/** What a metered upgrade needs of its `ai` backend. */
export interface RealtimeParts {
  readonly provider: { readonly kind: string };
  readonly upstream: UpstreamTarget;
  readonly metrics: LlmMetrics;
  readonly priceOf: PriceOf;
  readonly log: Logger;
}

/**
 * Paths that hand the client a session it then holds with the provider directly, past the gateway: OpenAI's ephemeral
 * keys (`client_secrets`, the older `sessions`, `transcription_sessions`) and WebRTC calls (`calls`).
 */
const DIRECT_SESSION = /\/realtime\/(?:client_secrets|sessions|transcription_sessions|calls)$/;

/**
 * On a route with token limits or virtual keys, what the gateway cannot meter is refused (ADR 0190): a request for a
 * direct session (`upgrade` false), or a WebSocket upgrade that is not a metered realtime session. Undefined when
 * it may pass.
 */
export function unmeterable(ex: Exchange, upgrade: boolean): GatewayError | undefined {
  if (ex.get(llmTokenLimiters) === undefined) return undefined;
  if (upgrade) return new GatewayError(403, 'permission_denied', "this WebSocket API's usage cannot be metered, and this route has token limits or virtual keys: use a route without them", ErrorCode.badRequest);
  if (!DIRECT_SESSION.test(ex.path)) return undefined;
  return new GatewayError(403, 'permission_denied', 'this request makes a realtime session held outside the gateway, where the route\'s token limits and virtual keys cannot see its usage: use a WebSocket session through the gateway', ErrorCode.badRequest);
}

/** The session's model as the URL names it: OpenAI's `model`, Azure's `deployment` (bounded, as a body's model). */
function sessionModel(query: string): string | undefined {
  const params = new URLSearchParams(query);
  const model = params.get('model') ?? params.get('deployment') ?? undefined;
  return model !== undefined && model.length > 0 && model.length <= MAX_MODEL_NAME ? model : undefined;
}

/**
 * A realtime session through the gateway (ADR 0190): the route's limits checked first as a request's would be (a
 * used-up budget or bucket, a key not allowed the model: the handshake is refused with their status), nothing
 * reserved; compression not offered to the provider (its frames must be readable); then relayed with a meter.
 */
export async function meteredUpgrade(p: RealtimeParts, dialect: RealtimeDialect, ex: Exchange, socket: Duplex, head: Buffer, onAttempt: ((attempt: UpstreamAttempt) => void | Promise<void>) | undefined): Promise<void> {
  // Gemini Live names its model in the client's first message, not the URL.
  const model = dialect === GEMINI_LIVE ? undefined : sessionModel(ex.query);
  const price = model === undefined ? undefined : p.priceOf(model);
  const refused = await reserveTokens(ex, undefined, { provider: p.provider.kind, model, maxOutputTokens: 0, price: price && { input: price.input, output: price.output } }, 0);
  if (refused) throw new GatewayError(refused.status, refused.error?.type ?? 'rate_limited', refused.error?.message ?? 'limit exceeded', ErrorCode.badRequest, stringHeaders(refused));
  delete ex.headers['sec-websocket-extensions'];
  const call = new LlmCall(ex, p.provider.kind, model, true, p.metrics, 'chat', p.priceOf);
  // `session.created` (or Live's `setup`) names the model the session runs (a dated one for an alias): its price, when
  // the catalog has one.
  call.priceByResponseModel = true;
  const limiters = ex.get(llmTokenLimiters) ?? [];
  let switched = false;
  socket.once('close', () => (switched ? call.finish() : call.unread(0)));
  p.upstream.upgrade(ex, socket, head, onAttempt, (close, early) => {
    switched = true;
    // The provider took the session for the URL's model: a metrics label from now on, as an answered call's is.
    call.accepted();
    if (dialect === GEMINI_LIVE) readLiveSetup(ex, call, socket, head, early, p.log);
    return new RealtimeMeter({ ex, call, limiters, dialect, close, log: p.log });
  });
}

/**
 * Reads the client's frames until its first message (Live's `setup`) for the model; they go up unchanged (the reader
 * only listens). It reads what the upstream gets, in its order: `head`, then what the client sent before the switch
 * (RFC 6455 forbids it, but the kernel replays it), then the socket. Read from the switch on only, a client could
 * split a frame so the reader parses a cheaper model than the provider runs.
 */
function readLiveSetup(ex: Exchange, call: LlmCall, socket: Duplex, head: Buffer, early: readonly Buffer[], log: Logger): void {
  const onData = (chunk: Buffer): void => void reader.write(chunk);
  const reader = new RealtimeMeter({ ex, call, limiters: [], dialect: LIVE_SETUP, masked: true, close: () => socket.off('data', onData), log });
  reader.resume();
  if (head.length) reader.write(head);
  for (const chunk of early) reader.write(chunk);
  socket.on('data', onData);
}

/** A refusal's headers (Retry-After, the rate-limit headers) as the handshake's answer carries them. */
function stringHeaders(reply: Reply): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(reply.headers)) if (typeof v === 'string' && name !== 'content-type' && name !== 'content-length') out[name] = v;
  return out;
}
