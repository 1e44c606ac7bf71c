import { readCappedText } from 'switchyard/sdk';
import type { CompileContext, Exchange, UpstreamResponse } from 'switchyard/sdk';

/**
 * The connection of a guard that calls a cloud service (`openAIModeration`, `bedrockGuardrails`,
 * `googleModelArmor`): the endpoint, the guard's `policies` (backend connection policies: `backendAuth` for the
 * credential, `backendTLS`) and the credential used when `policies` has no `backendAuth`.
 */
export interface GuardConnection {
  /** `POST path` with a JSON body on behalf of `ex` (its signal, `backendAuth`, the guard timeout); the JSON answer. */
  postJson(ex: Exchange, path: string, body: unknown, service: string): Promise<unknown>;
}

/** Policies that mean something on a guard's connection. */
const CONNECTION_POLICIES = ['backendAuth', 'backendTLS'];

/** How long a guard service may take (BEHAVIOUR.md §2.9: 10 s, as for webhooks). */
export const GUARD_TIMEOUT_MS = 10_000;

/** Largest guard service answer read into memory. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * Connect to the guard's endpoint: `host` (an origin in the one address form, `https://...` for the services' own
 * endpoints) with the guard's `policies` (at `['policies']`; only `backendAuth` and `backendTLS` apply).
 * `defaultAuth` (a `backendAuth` value such as `{ aws: {...} }`) applies when `policies` sets no `backendAuth`.
 */
export async function guardConnection(
  ctx: CompileContext,
  host: string,
  policies: Record<string, unknown> | undefined,
  defaultAuth: Record<string, unknown> | undefined,
  what: string,
): Promise<GuardConnection> {
  const connection = await ctx.connect({
    host,
    policies,
    what,
    allow: CONNECTION_POLICIES,
    defaults: defaultAuth ? { backendAuth: defaultAuth } : undefined,
    authority: 'target',
  });
  return {
    async postJson(ex, path, body, service) {
      const res = await connection.request(
        {
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify(body),
          timeoutMs: GUARD_TIMEOUT_MS,
        },
        ex,
      );
      return readJsonAnswer(res, service);
    },
  };
}

/**
 * The message of a guard service's error answer, for the log: a JSON body's `message`, `error.message`, `error` or
 * `detail` string, cut to 200 characters; nothing else of the body, which may echo the prompt (a schema error listing
 * its input), and the prompt is not logged (ADR 0159).
 */
function errorMessage(text: string): string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return '';
  }
  if (typeof v !== 'object' || v === null) return '';
  const o = v as Record<string, unknown>;
  const e = o.error;
  const found = [o.message, typeof e === 'object' && e !== null ? (e as Record<string, unknown>).message : e, o.detail].find((m) => typeof m === 'string' && m !== '');
  return typeof found === 'string' ? `: ${found.slice(0, 200)}` : '';
}

/** Read a guard service's answer as JSON. Throws (a guard failure) on a non-2xx status or a body that is not JSON. */
export async function readJsonAnswer(res: UpstreamResponse, what: string): Promise<unknown> {
  const text = await readCappedText(res.body, MAX_ANSWER_BYTES, { tooLarge: (n) => new Error(`${what} answered with more than ${n} bytes`) });
  if (res.status < 200 || res.status > 299) throw new Error(`${what} answered ${res.status}${errorMessage(text)}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what} answered with a body that is not JSON`);
  }
}
