import type { Readable } from 'node:stream';

/** Header map used on replies: lower-case names. */
export type HeaderMap = Record<string, string | string[] | number | undefined>;

/**
 * A response on its way to the client: from the upstream, from a backend plugin, or made by the gateway
 * (a `LocalReply`). Response hooks may change `status` and `headers` before they are written.
 */
export interface Reply {
  status: number;
  headers: HeaderMap;
  /** A stream is piped as it arrives; bytes or a string are written at once; null/undefined is an empty body. */
  body?: Readable | Uint8Array | string | null;
  /** True when the gateway made this reply itself (errors, redirects, direct responses, rejections). */
  readonly local: boolean;
  /**
   * Set on a gateway-made error reply (`jsonErrorReply`, a thrown `GatewayError`): what the JSON body says, so the
   * route's backend can re-shape it for its clients (`BackendInstance.shapeError`); also on a denial relayed from a
   * service the gateway asked (`relayedErrorReply`). Absent on every other reply.
   */
  readonly error?: LocalError;
}

/** The `type` and `message` of a gateway-made error reply. */
export interface LocalError {
  readonly type: string;
  readonly message: string;
}

/** Build a gateway-made reply. */
export function localReply(status: number, body?: string | Uint8Array | null, headers: HeaderMap = {}): Reply {
  return { status, headers, body: body ?? null, local: true };
}

/**
 * A gateway-made JSON error reply: `{"error":{"type","message"}}` (BEHAVIOUR.md DECIDED 4). On a route whose backend
 * has `shapeError` (an LLM API) the kernel lets the backend re-shape it before the response hooks run.
 */
export function jsonErrorReply(status: number, type: string, message: string, headers: HeaderMap = {}): Reply {
  headers['content-type'] = 'application/json';
  return { status, headers, body: JSON.stringify({ error: { type, message } }), local: true, error: { type, message } };
}

/** Longest message `relayedErrorReply` takes from a relayed body. */
const MAX_RELAYED_MESSAGE = 1024;

/**
 * A denial answered by a service the gateway asked (an external authorization service, a rate-limit service's body),
 * passed on as it came: status, headers and body unchanged. It is tagged like a gateway-made error, so on a route
 * whose backend has `shapeError` (an LLM API) the client gets its API's error shape, with the status and headers
 * kept and as message the service's text (a JSON body's `message`, `error.message`, `error` or `error_description`,
 * else the body, up to 1 KiB), or `fallback` when there is none (empty, binary or content-encoded).
 */
export function relayedErrorReply(status: number, body: Uint8Array | string, headers: HeaderMap, type: string, fallback: string): Reply {
  return { status, headers, body, local: true, error: { type, message: relayedMessage(body, headers, fallback) } };
}

function relayedMessage(body: Uint8Array | string, headers: HeaderMap, fallback: string): string {
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && String(encoding).toLowerCase() !== 'identity') return fallback;
  let text: string;
  try {
    text = typeof body === 'string' ? body : new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return fallback;
  }
  text = text.trim();
  if (text === '') return fallback;
  if (text.startsWith('{')) {
    try {
      const v = JSON.parse(text) as Record<string, unknown>;
      const e = v.error;
      const found = [v.message, typeof e === 'object' && e !== null ? (e as Record<string, unknown>).message : e, v.error_description].find((m) => typeof m === 'string' && m !== '');
      return found !== undefined ? clip(found as string) : fallback;
    } catch {
      // not JSON after all: the text itself
    }
  }
  return clip(text);
}

function clip(text: string): string {
  return text.length > MAX_RELAYED_MESSAGE ? `${text.slice(0, MAX_RELAYED_MESSAGE)}\u2026` : text;
}

/** A gateway-made JSON reply with any body. */
export function jsonReply(status: number, value: unknown, headers: HeaderMap = {}): Reply {
  headers['content-type'] = 'application/json';
  return { status, headers, body: JSON.stringify(value), local: true };
}

/** Replies marked by `declineReply`. */
const DECLINED = new WeakSet<Reply>();

/**
 * Mark a backend's gateway-made refusal of a request this backend cannot carry while another backend of the route
 * might (an `ai` backend whose provider has no equivalent of a field the request asks for), made before any upstream
 * was called. Under default failover (ADR 0039) the route's next backend is tried instead, and the client gets an
 * earlier backend's failure, or this refusal when no backend could serve the request (ADR 0150). Returns `reply`.
 */
export function declineReply(reply: Reply): Reply {
  DECLINED.add(reply);
  return reply;
}

/** Whether `reply` was marked by `declineReply`. */
export function isDeclinedReply(reply: Reply): boolean {
  return DECLINED.has(reply);
}
