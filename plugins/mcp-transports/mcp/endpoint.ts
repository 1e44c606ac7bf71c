import { setMaxListeners } from 'node:events';
import { STATUS_CODES } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { destroyBody, discardBody } from 'switchyard/sdk';
import type { AttemptHook, HeaderMap, UpstreamResponse, UpstreamTarget } from 'switchyard/sdk';
import { McpDeadlineError, isUpstreamTimeout } from '../../lib/mcp/deadlines.ts';
import type { McpDeadlines } from '../../lib/mcp/deadlines.ts';
import { McpProtocolViolation } from '../../lib/mcp/upstream-contract.ts';
import type { McpConnectOptions } from '../../lib/mcp/upstream-contract.ts';

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

/** Characters of an error response's body kept in the error message. */
export const ERROR_EXCERPT = 512;
/**
 * Longest session id taken from a target (MCP: visible ASCII, a UUID, a JWT or a hash). It goes into the gateway's own
 * sealed session id, which clients must be able to send back: a target's 12,000-character id made that header too
 * long for clients, and every target of the backend unusable (ADR 0134).
 */
export const MAX_TARGET_SESSION_ID = 1024;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;

/** No deadlines (unit tests, contexts built outside a config load). */
export const NO_DEADLINES: McpDeadlines = { responseMs: 0, responseSource: '', idleMs: 0, idleSource: '' };

export function mediaType(headers: IncomingHttpHeaders): string {
  const value = headers['content-type'];
  if (!value) return '';
  const semi = value.indexOf(';');
  return (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
}

export function statusText(status: number): string {
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
export function redirectNote(res: UpstreamResponse): string {
  const location = res.headers.location;
  return res.status >= 300 && res.status < 400 && location ? `, redirect to ${location} not followed` : '';
}

/**
 * Let a body go: destroyed when it is a stream; else read to its end when it is short (the connection is reused) and
 * cut past the SDK's limit (a target's endless answer to a notification was read until the session closed).
 */
export function discard(body: Readable, destroy = false): void {
  if (destroy) destroyBody(body);
  else discardBody(body);
}

/**
 * How long an error answer's body is read for its excerpt: a GET has no idle deadline, and a body that never ended held
 * the GET stream's opening (never retried) until the session closed (ADR 0168).
 */
export const ERROR_EXCERPT_MS = 5000;

/** The start of a (short, error) body, as text, what came of it within ERROR_EXCERPT_MS; the rest is dropped. */
export function excerpt(body: Readable): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    let done = false;
    const timer = setTimeout(() => {
      finish();
      body.destroy();
    }, ERROR_EXCERPT_MS);
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(text.length > ERROR_EXCERPT ? `${text.slice(0, ERROR_EXCERPT)}\u2026` : text);
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

/**
 * A streamable-HTTP endpoint as one connection's HTTP client: its path (moved by a permanent redirect), the session
 * id and protocol version every request carries with the client's headers, one abort signal for all its requests,
 * the deadlines, and same-origin redirects followed. Every request runs the connection's `onAttempt` hook
 * (backendAuth). What the requests mean (JSON-RPC, SSE streams) is streamable-upstream.ts's.
 */
export class StreamableEndpoint {
  readonly target: UpstreamTarget;
  readonly deadlines: McpDeadlines;
  /** The endpoint's path and query (moved by a permanent redirect). */
  path: string;
  /** The upstream session's id: from the `initialize` answer, or the one being resumed. */
  session: string | undefined;
  private version: string | undefined;
  private readonly onAttempt: AttemptHook | undefined;
  private readonly extra: Readonly<Record<string, string>> | undefined;
  /** The headers of every POST, rebuilt when the session id or the protocol version changes (the pool copies them). */
  private postHeaders: HeaderMap | undefined;
  /** Aborts every request of the connection (close). */
  readonly abort = new AbortController();

  constructor(target: UpstreamTarget, path: string, options: McpConnectOptions, deadlines: McpDeadlines) {
    this.target = target;
    this.path = path;
    this.deadlines = deadlines;
    this.onAttempt = options.onAttempt;
    this.extra = options.headers;
    this.session = options.resumeSessionId;
    // One signal shared by every request in flight (50 concurrent calls are 50 listeners): no leak warning.
    setMaxListeners(0, this.abort.signal);
  }

  setProtocolVersion(version: string): void {
    this.version = version;
    this.postHeaders = undefined;
  }

  /** The session id the target gave in an answer's headers, when it is a new one; one that is not valid fails. */
  takeSession(res: UpstreamResponse): void {
    const sid = res.headers['mcp-session-id'];
    if (typeof sid === 'string' && sid !== '' && sid !== this.session) {
      const why = sid.length > MAX_TARGET_SESSION_ID ? `is ${sid.length} characters long (at most ${MAX_TARGET_SESSION_ID})` : /^[\x21-\x7e]+$/.test(sid) ? undefined : 'has characters other than visible ASCII';
      if (why !== undefined) {
        res.body.destroy();
        throw new McpProtocolViolation(`the target's session id ${why}`);
      }
      this.session = sid;
      this.postHeaders = undefined;
    }
  }

  /** The headers of a POST of a JSON-RPC message. */
  get postHeaderMap(): HeaderMap {
    return (this.postHeaders ??= this.headers('application/json, text/event-stream', true));
  }

  headers(accept: string | undefined, post: boolean): HeaderMap {
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
  async request(method: string, headers: HeaderMap, body?: string, timeoutMs?: number, path = this.path, idle = true, signal?: AbortSignal): Promise<UpstreamResponse> {
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
  async follow(res: UpstreamResponse, method: string, headers: HeaderMap, body?: string, timeoutMs?: number, idle = method !== 'GET'): Promise<UpstreamResponse> {
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

  /** GET on the endpoint for an SSE stream; undefined when the server offers none (405). */
  async get(lastEventId: string | undefined, idle = false): Promise<UpstreamResponse | undefined> {
    const headers = this.headers('text/event-stream', false);
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    let res = await this.request('GET', headers, undefined, undefined, this.path, idle);
    if (res.status >= 300 && res.status < 400) res = await this.follow(res, 'GET', headers, undefined, undefined, idle);
    if (res.status >= 200 && res.status < 300) return res;
    const text = await excerpt(res.body);
    if (res.status === 405) return undefined;
    throw new StreamableHttpError(res.status, `Failed to open SSE stream (${statusText(res.status)}${redirectNote(res)}): ${text}`);
  }
}
