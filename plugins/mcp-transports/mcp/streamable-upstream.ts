import type { Readable } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { readCappedText } from 'switchyard/sdk';
import type { UpstreamResponse, UpstreamTarget } from 'switchyard/sdk';
import { McpDeadlineError } from '../../lib/mcp/deadlines.ts';
import type { McpDeadlines } from '../../lib/mcp/deadlines.ts';
import { MAX_TARGET_MESSAGE, MAX_TARGET_MESSAGE_BYTES, McpProtocolViolation } from '../../lib/mcp/upstream-contract.ts';
import type { FlowGate, McpConnectOptions, McpUpstream } from '../../lib/mcp/upstream-contract.ts';
import { discard, ERROR_EXCERPT, excerpt, mediaType, NO_DEADLINES, redirectNote, StreamableEndpoint, StreamableHttpError, statusText } from './endpoint.ts';
import { DEFAULT_RECONNECT, Reconnects } from './reconnect.ts';
import type { ReconnectOptions } from './reconnect.ts';
import { answers, readSseMessages } from './sse-messages.ts';
import type { RpcId, SseMessageSink, StreamOutcome } from './sse-messages.ts';

export { DEFAULT_RECONNECT, StreamableHttpError };
export type { ReconnectOptions };

/** How long ending the upstream session (DELETE) may take when the connection closes. */
const DELETE_TIMEOUT_MS = 5000;
/** A GET stream open this long before it dropped counts as a success when deciding to give up reopening it. */
const GET_STREAM_HELD_MS = 5000;
/** JSON-RPC internal error: the answer the target's stream could not deliver. */
const INTERNAL_ERROR = -32603;

type Json = Record<string, unknown>;

const bodyTimedOut = (err: Error | undefined): boolean => (err as { code?: unknown } | undefined)?.code === 'UND_ERR_BODY_TIMEOUT';

/**
 * One client session's connection to a streamable-HTTP target (MCP 2024-11-05 ... 2025-11-25), written directly on the
 * gateway's upstream pool (no WHATWG fetch, web streams or schema validation on the way: the backend reads the
 * JSON-RPC messages itself). Every message is its own POST; a request is answered with JSON or an SSE stream (its
 * related messages, then the answer). The session id comes with the `initialize` answer; the GET stream for
 * server-initiated messages opens after `notifications/initialized` (or at once when resuming a session) and is
 * reopened with `Last-Event-ID` when it drops. A POST stream that drops after an event id is resumed the same way.
 * The HTTP side (headers, redirects, deadlines) is endpoint.ts; reading SSE bodies sse-messages.ts; the reconnect
 * backoff reconnect.ts.
 */
export class StreamableUpstream implements McpUpstream {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  flowGate?: (id: RpcId) => FlowGate | undefined;
  private readonly endpoint: StreamableEndpoint;
  private readonly reconnects: Reconnects;
  private readonly label: string;
  private readonly resuming: boolean;
  /** What the SSE reader hands messages, errors and the server's `retry:` to. */
  private readonly sink: SseMessageSink;
  private closed = false;
  /** The GET stream is open, being opened or waiting to reopen. */
  private getActive = false;
  private getBody: Readable | undefined;
  /** Where the GET stream resumes from. */
  private getLastEventId: string | undefined;
  /** Response streams of requests still waiting for their answer, by request id (to end them on cancellation). */
  private readonly streams = new Map<RpcId, Readable>();
  /** Aborts of requests still waiting for their response headers, by request id (cancellation, the deadline). */
  private readonly calls = new Map<RpcId, AbortController>();
  /** Requests whose answers are no longer wanted (cancelled): their streams end without an error answer. */
  private cancelled: Set<RpcId> | undefined;

  constructor(target: UpstreamTarget, path: string, options: McpConnectOptions, reconnect: ReconnectOptions = DEFAULT_RECONNECT, deadlines: McpDeadlines = NO_DEADLINES) {
    this.endpoint = new StreamableEndpoint(target, path, options, deadlines);
    this.reconnects = new Reconnects(reconnect, (err) => this.onerror?.(err));
    this.label = options.label ?? 'the target';
    this.resuming = options.resumeSessionId !== undefined;
    this.sink = {
      deliver: (value) => this.deliver(value),
      onerror: (err) => this.onerror?.(err),
      retry: (ms) => {
        this.reconnects.serverRetryMs = ms;
      },
    };
  }

  get sessionId(): string | undefined {
    return this.endpoint.session;
  }

  setProtocolVersion(version: string): void {
    this.endpoint.setProtocolVersion(version);
  }

  async start(): Promise<void> {
    // A resumed session skips `initialize`, so the GET stream is opened here. 404 (or a 400 about the session, as
    // SDK-based servers answer) means the upstream session is gone: the caller starts a new one. Anything else
    // (409: another replica still holds the session's one GET stream) leaves the session usable for requests.
    if (!this.resuming) return;
    this.getActive = true;
    try {
      await this.openGet(0);
    } catch (err) {
      this.getActive = false;
      const code = (err as { code?: unknown }).code;
      if (code === 404 || (code === 400 && /session/i.test((err as Error).message))) throw err;
      this.onerror?.(err as Error);
    }
  }

  async send(message: JSONRPCMessage, options?: { readonly clientRequestId?: string }): Promise<void> {
    if (this.closed) throw new Error('the connection to the target is closed');
    const m = message as { id?: RpcId; method?: string; params?: Json };
    // Cancelled (by the client, or the gateway's deadline): stop waiting at once, even before the target hears of it.
    if (m.method === 'notifications/cancelled') this.endCancelled(m.params?.requestId);
    const call = m.method !== undefined && m.id !== undefined ? new AbortController() : undefined;
    if (call) this.calls.set(m.id!, call);
    const endpoint = this.endpoint;
    try {
      const shared = endpoint.postHeaderMap;
      // The id of the client request this message serves (ADR 0025), not the one that opened the connection.
      const headers = options?.clientRequestId === undefined ? shared : { ...shared, 'x-request-id': options.clientRequestId };
      const body = JSON.stringify(message);
      const signal = call ? AbortSignal.any([endpoint.abort.signal, call.signal]) : undefined;
      let res = await endpoint.request('POST', headers, body, undefined, endpoint.path, true, signal);
      if (res.status >= 300 && res.status < 400) res = await endpoint.follow(res, 'POST', headers, body);
      endpoint.takeSession(res);
      const status = res.status;
      if (status < 200 || status >= 300) {
        throw new StreamableHttpError(status, `Error POSTing to endpoint (${statusText(status)}${redirectNote(res)}): ${await excerpt(res.body)}`);
      }
      if (status === 202 || m.method === undefined || m.id === undefined) {
        discard(res.body);
        if (m.method === 'notifications/initialized') this.startGet();
        return;
      }
      if (this.closed) return discard(res.body, true);
      const type = mediaType(res.headers);
      if (type === 'text/event-stream') return this.readPostStream(res.body, m.id);
      if (type === 'application/json') {
        const answer = await this.readJson(res);
        this.deliver(answer);
        // A JSON body is the whole answer to this request: one without it (another id, `id: null`) would leave the
        // request waiting past every deadline (its answer's headers had come), holding a place of the session's.
        if (!answers(answer, m.id!)) {
          // The target's bytes go to the log only: an error message reaches the client (and its model) as it is.
          this.onerror?.(new McpProtocolViolation(`the target's JSON answer carried no response with id ${JSON.stringify(m.id)}: ${JSON.stringify(answer)?.slice(0, ERROR_EXCERPT)}`));
          this.unanswered(m.id!, 'its JSON answer carried no response with that id');
        }
        return;
      }
      discard(res.body, true);
      throw new StreamableHttpError(-1, `Unexpected content type: ${res.headers['content-type'] ?? '(none)'}`);
    } catch (err) {
      this.onerror?.(err as Error);
      throw err;
    } finally {
      // Until here the call's abort reaches its answer's body too: a JSON answer a target drips under the idle
      // deadline is let go when the request is cancelled, not read until the session closes (ADR 0168).
      if (call && this.calls.get(m.id!) === call) this.calls.delete(m.id!);
    }
  }

  /** A JSON answer's body, parsed. */
  private async readJson(res: UpstreamResponse): Promise<unknown> {
    let text: string;
    try {
      text = await readCappedText(res.body, MAX_TARGET_MESSAGE_BYTES, { tooLarge: () => new Error(`its answer is larger than ${MAX_TARGET_MESSAGE}, the most a target may send in one message`) });
    } catch (err) {
      const d = this.endpoint.deadlines;
      if (bodyTimedOut(err as Error)) throw new McpDeadlineError('idle', d.idleMs, d.idleSource);
      throw err;
    }
    try {
      return JSON.parse(text);
    } catch {
      this.onerror?.(new McpProtocolViolation(`the target answered with a body that is not JSON: ${text.slice(0, ERROR_EXCERPT)}`));
      throw new Error('the target answered with a body that is not JSON');
    }
  }

  /** A message (or a batch) from the target, to the backend. Not validated beyond being JSON-RPC objects. */
  private deliver(value: unknown): void {
    if (this.closed) return;
    if (Array.isArray(value)) {
      for (const v of value) this.deliver(v);
      return;
    }
    if (typeof value !== 'object' || value === null || (value as Json).jsonrpc !== '2.0') {
      this.onerror?.(new McpProtocolViolation(`the target sent something that is not a JSON-RPC 2.0 message: ${JSON.stringify(value)?.slice(0, ERROR_EXCERPT)}`));
      return;
    }
    try {
      this.onmessage?.(value as JSONRPCMessage);
    } catch (err) {
      this.onerror?.(err as Error);
    }
  }

  /** A request's SSE answer; `resumedFrom` and `failures` when it is a resumption of an earlier one. */
  private readPostStream(body: Readable, id: RpcId, resumedFrom?: string, failures = 0): void {
    this.streams.set(id, body);
    const gate = this.flowGate?.(id);
    readSseMessages(body, id, this.sink, (outcome) => {
      if (this.streams.get(id) === body) this.streams.delete(id);
      if (this.closed || outcome.answered) return;
      if (this.cancelled?.delete(id)) return;
      if (bodyTimedOut(outcome.error)) {
        // Quiet past the idle deadline: not resumed (the target is stuck, not the connection), answered with an error.
        const d = this.endpoint.deadlines;
        const message = `${this.label} ${new McpDeadlineError('idle', d.idleMs, d.idleSource).message} while answering a request`;
        return this.deliver({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message } });
      }
      if (outcome.error) this.onerror?.(new Error(`SSE stream disconnected: ${outcome.error.message}`));
      // Resumable (it gave an event id): ask for the rest with GET + Last-Event-ID, as the SDK client does.
      const lastEventId = outcome.lastEventId ?? resumedFrom;
      if (lastEventId !== undefined) this.resumePost(id, lastEventId, outcome.progress ? 0 : failures + 1);
      else this.streamEnded(id, outcome.error?.message ?? 'the stream ended');
    }, gate);
  }

  private resumePost(id: RpcId, lastEventId: string, failures: number): void {
    if (failures >= this.reconnects.options.maxRetries) return this.streamEnded(id, `could not resume it after ${failures} attempts`);
    this.reconnects.later(this.reconnects.delay(failures), async () => {
      let res: UpstreamResponse | undefined;
      try {
        res = await this.endpoint.get(lastEventId, true);
      } catch (err) {
        this.onerror?.(new Error(`Failed to resume an SSE stream: ${(err as Error).message}`));
        return this.resumePost(id, lastEventId, failures + 1);
      }
      if (!res) return this.streamEnded(id, 'the target has no GET stream to resume it on');
      if (this.closed) return discard(res.body, true);
      this.readPostStream(res.body, id, lastEventId, failures);
    });
  }

  /** The request's stream ended without its answer and cannot be resumed: answer it with an error rather than never. */
  private unanswered(id: RpcId, reason: string): void {
    if (this.closed) return;
    // Made here, not by the target: named as the gateway's own errors name it (the label), as the idle deadline's is.
    this.deliver({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message: `${this.label} did not answer the request (${reason})` } });
  }

  /** A request's stream ended without its answer and cannot be resumed. */
  private streamEnded(id: RpcId, reason: string): void {
    if (this.closed) return;
    this.deliver({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message: `${this.label}: its response stream ended before the answer (${reason})` } });
  }

  /**
   * `notifications/cancelled` went out: the target will not answer (2025 revisions), so the request's response stream
   * would stay open for nothing.
   */
  private endCancelled(requestId: unknown): void {
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const call = this.calls.get(requestId);
    if (call) {
      this.calls.delete(requestId);
      call.abort(new Error('cancelled'));
    }
    const body = this.streams.get(requestId);
    if (!body) return;
    this.streams.delete(requestId);
    (this.cancelled ??= new Set()).add(requestId);
    body.destroy();
  }

  private startGet(): void {
    if (this.getActive || this.closed) return;
    this.getActive = true;
    this.openGet(0).catch((err: Error) => {
      this.getActive = false;
      this.onerror?.(err);
    });
  }

  /** Open (or reopen) the GET stream; throws what refused it. */
  private async openGet(failures: number): Promise<void> {
    const res = await this.endpoint.get(this.getLastEventId);
    if (!res) {
      this.getActive = false;
      return;
    }
    if (this.closed) return discard(res.body, true);
    this.getBody = res.body;
    const opened = Date.now();
    readSseMessages(res.body, undefined, this.sink, (outcome: StreamOutcome) => {
      if (this.getBody === res.body) this.getBody = undefined;
      if (outcome.lastEventId !== undefined) this.getLastEventId = outcome.lastEventId;
      if (this.closed) return;
      if (outcome.error) this.onerror?.(new Error(`SSE stream disconnected: ${outcome.error.message}`));
      // A stream that brought something, or stayed open a while (an idle one cut by an intermediary), was not a
      // failed attempt: only streams that end at once count towards giving up.
      this.reopenGet(outcome.progress || Date.now() - opened >= GET_STREAM_HELD_MS ? 0 : failures + 1);
    });
  }

  private reopenGet(failures: number): void {
    if (failures >= this.reconnects.options.maxRetries) {
      this.getActive = false;
      this.onerror?.(new Error(`gave up reopening the target's GET stream after ${failures} attempts`));
      return;
    }
    this.reconnects.later(this.reconnects.delay(failures), () =>
      this.openGet(failures).catch((err: Error) => {
        this.onerror?.(new Error(`Failed to reconnect SSE stream: ${err.message}`));
        if ((err as { code?: unknown }).code === 404) {
          // The upstream session is gone: the next request finds out and starts a new one.
          this.getActive = false;
          return;
        }
        this.reopenGet(failures + 1);
      }),
    );
  }

  /** Stop everything: reconnect timers, the GET stream, requests in flight. */
  private shutdown(): boolean {
    if (this.closed) return false;
    this.closed = true;
    this.reconnects.stop();
    this.endpoint.abort.abort(new Error('the connection to the target closed'));
    this.calls.clear();
    this.getBody?.destroy();
    this.getBody = undefined;
    for (const body of this.streams.values()) body.destroy();
    this.streams.clear();
    return true;
  }

  /** End the upstream session (DELETE, when there is one) and close. */
  async close(): Promise<void> {
    const endpoint = this.endpoint;
    const session = endpoint.session;
    if (!this.shutdown()) return;
    if (session !== undefined) {
      try {
        const headers = endpoint.headers(undefined, false);
        let res = await endpoint.request('DELETE', headers, undefined, DELETE_TIMEOUT_MS);
        if (res.status >= 300 && res.status < 400) res = await endpoint.follow(res, 'DELETE', headers, undefined, DELETE_TIMEOUT_MS);
        discard(res.body);
        // 405: the server does not let clients end sessions (allowed by the spec).
        if ((res.status < 200 || res.status >= 300) && res.status !== 405) {
          this.onerror?.(new StreamableHttpError(res.status, `Failed to terminate session (${statusText(res.status)})`));
        } else endpoint.session = undefined;
      } catch (err) {
        this.onerror?.(err as Error);
      }
    }
    this.onclose?.();
  }

  /** Close without ending the upstream session, so another gateway replica can resume it. */
  async detach(): Promise<void> {
    if (this.shutdown()) this.onclose?.();
  }
}
