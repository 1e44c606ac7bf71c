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
   * route's backend can re-shape it for its clients (`BackendInstance.shapeError`). Absent on every other reply.
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

/** A gateway-made JSON reply with any body. */
export function jsonReply(status: number, value: unknown, headers: HeaderMap = {}): Reply {
  headers['content-type'] = 'application/json';
  return { status, headers, body: JSON.stringify(value), local: true };
}
