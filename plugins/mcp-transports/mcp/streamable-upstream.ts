import { setMaxListeners } from 'node:events';
import { STATUS_CODES } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SseParser, readCappedText } from 'switchyard/sdk';
import type { AttemptHook, HeaderMap, UpstreamResponse, UpstreamTarget } from 'switchyard/sdk';
import { McpDeadlineError, isUpstreamTimeout } from '../../lib/mcp/deadlines.ts';
import type { McpDeadlines } from '../../lib/mcp/deadlines.ts';
import type { McpConnectOptions, McpUpstream } from '../../lib/mcp/upstream-contract.ts';

/**
 * An HTTP error of the target, as the SDK's `StreamableHTTPError`: a numeric `code` (the HTTP status; -1 for an
 * unexpected content type) and the status and body in the message. The backend reads 404, and a 400 whose message
 * mentions the session, as "the upstream session is gone" (target-conn.ts).
 */
export class StreamableHttpError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(`Streamable HTTP error: ${message}`);
    this.name = 'StreamableHttpError';
    this.code = code;
  }
}

/** How the GET stream (and a POST stream that can be resumed) is reopened after it drops. */
export interface ReconnectOptions {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly growFactor: number;
  /** Consecutive attempts that bring nothing before giving up. */
  readonly maxRetries: number;
}

/** The SDK client's delays (1 s, growing by 1.5 to 30 s), with a few more attempts than its 2. */
export const DEFAULT_RECONNECT: ReconnectOptions = { initialDelayMs: 1000, maxDelayMs: 30_000, growFactor: 1.5, maxRetries: 5 };

/** Characters of an error response's body kept in the error message. */
const ERROR_EXCERPT = 512;
/** Bytes of a JSON response body read at most. */
const MAX_JSON_BODY = 32 * 1024 * 1024;
/** Longest SSE event read from a target (its data plus an unfinished line), as large as a JSON answer may be. */
const MAX_SSE_EVENT = MAX_JSON_BODY;
/** How long ending the upstream session (DELETE) may take when the connection closes. */
const DELETE_TIMEOUT_MS = 5000;
const POST_ACCEPT = 'application/json, text/event-stream';
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** A GET stream open this long before it dropped counts as a success when deciding to give up reopening it. */
const GET_STREAM_HELD_MS = 5000;
const MAX_REDIRECTS = 5;
/** JSON-RPC internal error: the answer the target's stream could not deliver. */
const INTERNAL_ERROR = -32603;

type Json = Record<string, unknown>;
type RpcId = string | number;

interface StreamOutcome {
  /** The stream carried the answer it was waiting for (POST streams). */
  readonly answered: boolean;
  /** The stream brought something (a message or an event id): reconnect attempts start over. */
  readonly progress: boolean;
  readonly lastEventId: string | undefined;
  /** Why it ended, when it did not end cleanly. */
  readonly error: Error | undefined;
}

const noop = (): void => undefined;

/** No deadlines (unit tests, contexts built outside a config load). */
const NO_DEADLINES: McpDeadlines = { responseMs: 0, responseSource: '', idleMs: 0, idleSource: '' };

const bodyTimedOut = (err: Error | undefined): boolean => (err as { code?: unknown } | undefined)?.code === 'UND_ERR_BODY_TIMEOUT';

function mediaType(headers: IncomingHttpHeaders): string {
  const value = headers['content-type'];
  if (!value) return '';
  const semi = value.indexOf(';');
  return (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
}

function statusText(status: number): string {
  const text = STATUS_CODES[status];
  return text ? `HTTP ${status} ${text}` : `HTTP ${status}`;
}

/** Path and query of `location` resolved against `path` on `origin`, when it stays on that origin (no credentials). */
function sameOriginPath(origin: string, path: string, location: string | undefined): string | undefined {
  if (!location) return undefined;
  let from: URL;
  let to: URL;
  try {
    from = new URL(path, origin);
    to = new URL(location, from);
  } catch {
    return undefined;
  }
  if (to.origin !== from.origin || to.username || to.password) return undefined;
  return to.pathname + to.search;
}

/** Names the target of a redirect that was not followed. */
function redirectNote(res: UpstreamResponse): string {
  const location = res.headers.location;
  return res.status >= 300 && res.status < 400 && location ? `, redirect to ${location} not followed` : '';
}

/** Let a body go: drained when it is short (the connection is reused), destroyed when it is a stream. */
function discard(body: Readable, destroy = false): void {
  body.on('error', noop);
  if (destroy) body.destroy();
  else body.resume();
}

/** The start of a (short, error) body, as text; the rest is dropped. */
function excerpt(body: Readable): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      resolve(text.length > ERROR_EXCERPT ? `${text.slice(0, ERROR_EXCERPT)}…` : text);
    };
    body.setEncoding('utf8');
    body.on('data', (s: string) => {
      text += s;
      if (text.length > ERROR_EXCERPT) {
        finish();
        body.destroy();
      }
    });
    body.on('end', finish);
    body.on('error', finish);
    body.on('close', finish);
  });
}

/** A JSON-RPC answer (result or error) to request `id`. */
function answers(value: unknown, id: RpcId): boolean {
  if (Array.isArray(value)) return value.some((v) => answers(v, id));
  return typeof value === 'object' && value !== null && (value as Json).id === id && (value as Json).method === undefined;
}

/**
 * One client session's connection to a streamable-HTTP target (MCP 2024-11-05 … 2025-11-25), written directly on the
 * gateway's upstream pool (no WHATWG fetch, web streams or schema validation on the way: the backend reads the
 * JSON-RPC messages itself). Every message is its own POST; a request is answered with JSON or an SSE stream (its
 * related messages, then the answer). The session id comes with the `initialize` answer; the GET stream for
 * server-initiated messages opens after `notifications/initialized` (or at once when resuming a session) and is
 * reopened with `Last-Event-ID` when it drops. A POST stream that drops after an event id is resumed the same way.
 * Every HTTP request runs the connection's `onAttempt` hook (backendAuth) and carries the client's headers.
 */
export class StreamableUpstream implements McpUpstream {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  private readonly target: UpstreamTarget;
  /** The endpoint's path and query (moved by a permanent redirect). */
  private path: string;
  private readonly onAttempt: AttemptHook | undefined;
  private readonly extra: Readonly<Record<string, string>> | undefined;
  private readonly reconnect: ReconnectOptions;
  private readonly deadlines: McpDeadlines;
  private readonly label: string;
  private readonly resuming: boolean;
  private session: string | undefined;
  private version: string | undefined;
  /** The headers of every POST, rebuilt when the session id or the protocol version changes (the pool copies them). */
  private postHeaders: HeaderMap | undefined;
  /** Aborts every request of the connection (close). */
  private readonly abort = new AbortController();
  private closed = false;
  /** The GET stream is open, being opened or waiting to reopen. */
  private getActive = false;
  private getBody: Readable | undefined;
  /** Where the GET stream resumes from. */
  private getLastEventId: string | undefined;
  /** The server's `retry:` (ms), used instead of the backoff. */
  private serverRetryMs: number | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Response streams of requests still waiting for their answer, by request id (to end them on cancellation). */
  private readonly streams = new Map<RpcId, Readable>();
  /** Aborts of requests still waiting for their response headers, by request id (cancellation, the deadline). */
  private readonly calls = new Map<RpcId, AbortController>();
  /** Requests whose answers are no longer wanted (cancelled): their streams end without an error answer. */
  private cancelled: Set<RpcId> | undefined;

  constructor(target: UpstreamTarget, path: string, options: McpConnectOptions, reconnect: ReconnectOptions = DEFAULT_RECONNECT, deadlines: McpDeadlines = NO_DEADLINES) {
    this.target = target;
    this.deadlines = deadlines;
    this.label = options.label ?? 'the target';
    this.path = path;
    this.onAttempt = options.onAttempt;
    this.extra = options.headers;
    this.reconnect = reconnect;
    this.resuming = options.resumeSessionId !== undefined;
    this.session = options.resumeSessionId;
    // One signal shared by every request in flight (50 concurrent calls are 50 listeners): no leak warning.
    setMaxListeners(0, this.abort.signal);
  }

  get sessionId(): string | undefined {
    return this.session;
  }

  setProtocolVersion(version: string): void {
    this.version = version;
    this.postHeaders = undefined;
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

  private headers(accept: string | undefined, post: boolean): HeaderMap {
    const h: HeaderMap = this.extra ? { ...this.extra } : {};
    if (accept !== undefined) h.accept = accept;
    if (post) h['content-type'] = 'application/json';
    if (this.session !== undefined) h['mcp-session-id'] = this.session;
    if (this.version !== undefined) h['mcp-protocol-version'] = this.version;
    return h;
  }

  /**
   * One HTTP request. Deadlines (ADR 0019 for MCP targets): the response-start one on every request, the idle one on
   * answers to requests (`idle`), never on the standalone GET stream, which may rightly stay quiet for hours.
   */
  private async request(method: string, headers: HeaderMap, body?: string, timeoutMs?: number, path = this.path, idle = true, signal?: AbortSignal): Promise<UpstreamResponse> {
    const d = this.deadlines;
    try {
      return await this.target.request({
        method,
        path,
        headers,
        body,
        // DELETE is sent while closing, after the connection's signal aborted: it has its own deadline instead.
        signal: timeoutMs === undefined ? (signal ?? this.abort.signal) : undefined,
        timeoutMs,
        headersTimeoutMs: timeoutMs === undefined ? d.responseMs : undefined,
        idleTimeoutMs: idle ? d.idleMs : 0,
        onAttempt: this.onAttempt,
      });
    } catch (err) {
      if (timeoutMs === undefined && d.responseMs > 0 && isUpstreamTimeout(err)) throw new McpDeadlineError('response', d.responseMs, d.responseSource);
      throw err;
    }
  }

  /**
   * Follow a redirect that stays on the target's origin, as the SDK client does (a server mounted at `/mcp/` answers
   * `/mcp` with 307): 307 and 308 for any method, 301, 302 and 303 for GET, at most MAX_REDIRECTS. A permanent one
   * (301, 308) moves the endpoint for the connection's later requests. Anything else comes back as it is.
   */
  private async follow(res: UpstreamResponse, method: string, headers: HeaderMap, body?: string, timeoutMs?: number, idle = method !== 'GET'): Promise<UpstreamResponse> {
    let path = this.path;
    for (let hops = 0; hops < MAX_REDIRECTS; hops++) {
      const status = res.status;
      if (!REDIRECTS.has(status) || (status !== 307 && status !== 308 && method !== 'GET')) return res;
      const next = sameOriginPath(this.target.origin, path, res.headers.location);
      if (next === undefined) return res;
      discard(res.body);
      if (status === 301 || status === 308) this.path = next;
      path = next;
      res = await this.request(method, headers, body, timeoutMs, path, idle);
    }
    return res;
  }

  async send(message: JSONRPCMessage, options?: { readonly clientRequestId?: string }): Promise<void> {
    if (this.closed) throw new Error('the connection to the target is closed');
    const m = message as { id?: RpcId; method?: string; params?: Json };
    // Cancelled (by the client, or the gateway's deadline): stop waiting at once, even before the target hears of it.
    if (m.method === 'notifications/cancelled') this.endCancelled(m.params?.requestId);
    const call = m.method !== undefined && m.id !== undefined ? new AbortController() : undefined;
    if (call) this.calls.set(m.id!, call);
    try {
      const shared = (this.postHeaders ??= this.headers(POST_ACCEPT, true));
      // The id of the client request this message serves (ADR 0025), not the one that opened the connection.
      const headers = options?.clientRequestId === undefined ? shared : { ...shared, 'x-request-id': options.clientRequestId };
      const body = JSON.stringify(message);
      const signal = call ? AbortSignal.any([this.abort.signal, call.signal]) : undefined;
      let res = await this.request('POST', headers, body, undefined, this.path, true, signal);
      if (call) this.calls.delete(m.id!);
      if (res.status >= 300 && res.status < 400) res = await this.follow(res, 'POST', headers, body);
      const sid = res.headers['mcp-session-id'];
      if (typeof sid === 'string' && sid !== '' && sid !== this.session) {
        this.session = sid;
        this.postHeaders = undefined;
      }
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
        let text: string;
        try {
          text = await readCappedText(res.body, MAX_JSON_BODY);
        } catch (err) {
          if (bodyTimedOut(err as Error)) throw new McpDeadlineError('idle', this.deadlines.idleMs, this.deadlines.idleSource);
          throw err;
        }
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          throw new Error(`the target answered with a body that is not JSON: ${text.slice(0, ERROR_EXCERPT)}`);
        }
        this.deliver(value);
        return;
      }
      discard(res.body, true);
      throw new StreamableHttpError(-1, `Unexpected content type: ${res.headers['content-type'] ?? '(none)'}`);
    } catch (err) {
      if (call) this.calls.delete(m.id!);
      this.onerror?.(err as Error);
      throw err;
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
      this.onerror?.(new Error(`the target sent something that is not a JSON-RPC 2.0 message: ${JSON.stringify(value)?.slice(0, ERROR_EXCERPT)}`));
      return;
    }
    try {
      this.onmessage?.(value as JSONRPCMessage);
    } catch (err) {
      this.onerror?.(err as Error);
    }
  }

  /**
   * Read an SSE response body: each `message` event's data is a JSON-RPC message. `waitingFor` is the request a POST
   * stream answers. `done` runs once, when the body ends, fails or is destroyed.
   */
  private readSse(body: Readable, waitingFor: RpcId | undefined, done: (outcome: StreamOutcome) => void): void {
    let answered = false;
    let progress = false;
    let finished = false;
    const parser = new SseParser({
      onEvent: (event) => {
        progress = true;
        if (event.data === '' || (event.event || 'message') !== 'message') return;
        let value: unknown;
        try {
          value = JSON.parse(event.data);
        } catch {
          this.onerror?.(new Error(`the target sent an SSE event whose data is not JSON: ${event.data.slice(0, ERROR_EXCERPT)}`));
          return;
        }
        if (waitingFor !== undefined && !answered && answers(value, waitingFor)) answered = true;
        this.deliver(value);
      },
      onRetry: (ms) => {
        this.serverRetryMs = ms;
      },
      maxEventSize: MAX_SSE_EVENT,
    });
    const finish = (error: Error | undefined): void => {
      if (finished) return;
      finished = true;
      if (parser.lastEventId !== undefined) progress = true;
      done({ answered, progress, lastEventId: parser.lastEventId, error });
    };
    body.on('data', (chunk: Buffer) => {
      try {
        parser.push(chunk);
      } catch (err) {
        body.destroy(err as Error); // an event past MAX_SSE_EVENT
      }
    });
    body.on('end', () => {
      try {
        parser.end();
      } catch {
        // an unfinished oversized event: dropped
      }
      finish(undefined);
    });
    body.on('error', (err: Error) => finish(err));
    body.on('close', () => {
      if (!finished) finish(new Error('the connection closed'));
    });
  }

  /** A request's SSE answer; `resumedFrom` and `failures` when it is a resumption of an earlier one. */
  private readPostStream(body: Readable, id: RpcId, resumedFrom?: string, failures = 0): void {
    this.streams.set(id, body);
    this.readSse(body, id, (outcome) => {
      if (this.streams.get(id) === body) this.streams.delete(id);
      if (this.closed || outcome.answered) return;
      if (this.cancelled?.delete(id)) return;
      if (bodyTimedOut(outcome.error)) {
        // Quiet past the idle deadline: not resumed (the target is stuck, not the connection), answered with an error.
        const d = this.deadlines;
        const message = `${this.label} ${new McpDeadlineError('idle', d.idleMs, d.idleSource).message} while answering a request`;
        return this.deliver({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message } });
      }
      if (outcome.error) this.onerror?.(new Error(`SSE stream disconnected: ${outcome.error.message}`));
      // Resumable (it gave an event id): ask for the rest with GET + Last-Event-ID, as the SDK client does.
      const lastEventId = outcome.lastEventId ?? resumedFrom;
      if (lastEventId !== undefined) this.resumePost(id, lastEventId, outcome.progress ? 0 : failures + 1);
      else this.unanswered(id, outcome.error?.message ?? 'the stream ended');
    });
  }

  private resumePost(id: RpcId, lastEventId: string, failures: number): void {
    if (failures >= this.reconnect.maxRetries) return this.unanswered(id, `could not resume it after ${failures} attempts`);
    this.later(this.delay(failures), async () => {
      let res: UpstreamResponse | undefined;
      try {
        res = await this.get(lastEventId, true);
      } catch (err) {
        this.onerror?.(new Error(`Failed to resume an SSE stream: ${(err as Error).message}`));
        return this.resumePost(id, lastEventId, failures + 1);
      }
      if (!res) return this.unanswered(id, 'the target has no GET stream to resume it on');
      if (this.closed) return discard(res.body, true);
      this.readPostStream(res.body, id, lastEventId, failures);
    });
  }

  /** The request's stream ended without its answer and cannot be resumed: answer it with an error rather than never. */
  private unanswered(id: RpcId, reason: string): void {
    if (this.closed) return;
    this.deliver({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message: `the target's response stream ended before the answer (${reason})` } });
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

  /** GET on the endpoint for an SSE stream; undefined when the server offers none (405). */
  private async get(lastEventId: string | undefined, idle = false): Promise<UpstreamResponse | undefined> {
    const headers = this.headers('text/event-stream', false);
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    let res = await this.request('GET', headers, undefined, undefined, this.path, idle);
    if (res.status >= 300 && res.status < 400) res = await this.follow(res, 'GET', headers, undefined, undefined, idle);
    if (res.status >= 200 && res.status < 300) return res;
    const text = await excerpt(res.body);
    if (res.status === 405) return undefined;
    throw new StreamableHttpError(res.status, `Failed to open SSE stream (${statusText(res.status)}${redirectNote(res)}): ${text}`);
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
    const res = await this.get(this.getLastEventId);
    if (!res) {
      this.getActive = false;
      return;
    }
    if (this.closed) return discard(res.body, true);
    this.getBody = res.body;
    const opened = Date.now();
    this.readSse(res.body, undefined, (outcome) => {
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
    if (failures >= this.reconnect.maxRetries) {
      this.getActive = false;
      this.onerror?.(new Error(`gave up reopening the target's GET stream after ${failures} attempts`));
      return;
    }
    this.later(this.delay(failures), () =>
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

  private delay(failures: number): number {
    if (this.serverRetryMs !== undefined) return this.serverRetryMs;
    const r = this.reconnect;
    return Math.min(r.initialDelayMs * r.growFactor ** failures, r.maxDelayMs);
  }

  private later(ms: number, fn: () => void | Promise<void>): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.closed) return;
      try {
        fn()?.catch((err: Error) => this.onerror?.(err));
      } catch (err) {
        this.onerror?.(err as Error);
      }
    }, ms);
    this.timers.add(timer);
  }

  /** Stop everything: reconnect timers, the GET stream, requests in flight. */
  private shutdown(): boolean {
    if (this.closed) return false;
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.abort.abort(new Error('the connection to the target closed'));
    this.calls.clear();
    this.getBody?.destroy();
    this.getBody = undefined;
    for (const body of this.streams.values()) body.destroy();
    this.streams.clear();
    return true;
  }

  /** End the upstream session (DELETE, when there is one) and close. */
  async close(): Promise<void> {
    const session = this.session;
    if (!this.shutdown()) return;
    if (session !== undefined) {
      try {
        const headers = this.headers(undefined, false);
        let res = await this.request('DELETE', headers, undefined, DELETE_TIMEOUT_MS);
        if (res.status >= 300 && res.status < 400) res = await this.follow(res, 'DELETE', headers, undefined, DELETE_TIMEOUT_MS);
        discard(res.body);
        // 405: the server does not let clients end sessions (allowed by the spec).
        if ((res.status < 200 || res.status >= 300) && res.status !== 405) {
          this.onerror?.(new StreamableHttpError(res.status, `Failed to terminate session (${statusText(res.status)})`));
        } else this.session = undefined;
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
