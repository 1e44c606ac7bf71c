import { readCappedText } from 'switchyard/sdk';
import type { CompileContext, Exchange, PolicySet, UpstreamResponse } from 'switchyard/sdk';

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
 * Parse an endpoint override: `http(s)://host[:port]` or `host:port` (plain HTTP). Returns the origin or an error
 * message.
 */
export function parseOrigin(value: string): string | { error: string } {
  const text = value.trim().replace(/\/+$/, '');
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return { error: `\`${value}\` is not an address (write \`https://host[:port]\` or \`host:port\`)` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { error: `unsupported scheme \`${url.protocol.slice(0, -1)}\` (use http or https)` };
  if (url.pathname !== '/' || url.search || url.hash || url.username) return { error: `\`${value}\` must be an origin only: no path, query or credentials` };
  return url.origin;
}

/**
 * Compile the guard's `policies` (at `['policies']`) and build its connection to `origin`. `defaultAuth` (a
 * `backendAuth` value such as `{ aws: {…} }`) applies when `policies` sets no `backendAuth`. Policies other than
 * `backendAuth` and `backendTLS` are config errors.
 */
export async function guardConnection(
  ctx: CompileContext,
  origin: string,
  policies: Record<string, unknown> | undefined,
  defaultAuth: Record<string, unknown> | undefined,
  what: string,
): Promise<GuardConnection> {
  const written = Object.keys(policies ?? {});
  let set: PolicySet = await ctx.compilePolicies('backendPolicies', policies, ['policies']);
  // The kernel renamed aliases to their keys in place, in the same order.
  Object.keys(policies ?? {}).forEach((key, i) => {
    if (!CONNECTION_POLICIES.includes(key)) {
      ctx.fail(`\`${written[i] ?? key}\` does not apply to the connection to ${what}; only \`backendAuth\` and \`backendTLS\` do`, ['policies', written[i] ?? key]);
    }
  });
  if (!set.has('backendAuth') && defaultAuth) {
    const implicit = await ctx.compilePolicies('backendPolicies', { backendAuth: defaultAuth }, ['policies']);
    set = implicit.layer(set);
  }
  const target = ctx.http.target({ origin, tls: set.facets.tls, authority: 'target' });
  return {
    async postJson(ex, path, body, service) {
      const res = await target.request({
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        signal: ex.signal,
        timeoutMs: GUARD_TIMEOUT_MS,
        onAttempt: set.attemptHook(ex),
      });
      return readJsonAnswer(res, service);
    },
  };
}

/** Read a guard service's answer as JSON. Throws (a guard failure) on a non-2xx status or a body that is not JSON. */
export async function readJsonAnswer(res: UpstreamResponse, what: string): Promise<unknown> {
  const text = await readCappedText(res.body, MAX_ANSWER_BYTES, { tooLarge: (n) => new Error(`${what} answered with more than ${n} bytes`) });
  if (res.status < 200 || res.status > 299) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 200)}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what} answered with a body that is not JSON`);
  }
}
