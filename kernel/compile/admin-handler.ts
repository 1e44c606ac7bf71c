import { settleWithin } from '../sdk/index.ts';
import type { AdminResponse, AdminRouteHandler, Logger } from '../sdk/index.ts';
import type { PluginOwner } from './plugin-owner.ts';

/**
 * How long a plugin's admin endpoint may take to answer (ADR 0154). Below the supervisor's wait for a worker's
 * answer (worker-answers.ts), so the 504 and its log line come from the worker that knows the plugin.
 */
export const ADMIN_HANDLER_DEADLINE_MS = 30_000;

/**
 * Prefixes the admin address serves itself (admin/gateway-endpoints.ts, the UI): a plugin endpoint there would never
 * be reached (ADR 0154).
 */
export const ADMIN_OWN_PREFIXES: ReadonlySet<string> = new Set(['/config_dump', '/ui', '/metrics', '/healthz']);

class AdminHandlerTimeout extends Error {}

/** Throws unless `answer` is what the admin address can write: an HTTP status and a body JSON can carry. */
function checkAnswer(answer: unknown): AdminResponse {
  const status = (answer as { status?: unknown } | null | undefined)?.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) {
    throw new TypeError(`the handler returned ${status === undefined ? String(answer) : `status ${JSON.stringify(status)}`}, not { status, body } with a status from 200 to 599`);
  }
  // What the admin address (or a worker's reply to the supervisor) would fail to write after the handler returned.
  try {
    JSON.stringify((answer as AdminResponse).body);
  } catch (err) {
    throw new TypeError(`the handler returned a body JSON cannot carry: ${(err as Error).message}`);
  }
  return answer as AdminResponse;
}

/**
 * A plugin's admin endpoint handler as the admin address calls it (ADR 0154): one that throws answers 500 with no
 * more than "internal error" (its message may hold what the endpoint manages: keys, tokens), one that has not
 * answered within `ms` answers 504, one whose answer cannot be written 500; each is logged naming the plugin.
 */
export function boundedAdminHandler(prefix: string, handler: AdminRouteHandler, owner: PluginOwner | undefined, logger: Logger, ms = ADMIN_HANDLER_DEADLINE_MS): AdminRouteHandler {
  return async (req) => {
    try {
      return checkAnswer(await settleWithin(Promise.resolve().then(() => handler(req)), ms, () => new AdminHandlerTimeout()));
    } catch (err) {
      const at = { path: `${prefix}${req.subpath}`, method: req.method, ...owner };
      if (err instanceof AdminHandlerTimeout) {
        logger.error(`admin endpoint did not answer within ${ms}ms`, at);
        return { status: 504, body: { error: { message: `the endpoint did not answer within ${ms / 1000}s` } } };
      }
      logger.error('admin endpoint failed', { ...at, error: (err as Error)?.message ?? String(err), stack: (err as Error)?.stack });
      return { status: 500, body: { error: { message: 'internal error' } } };
    }
  };
}
