// A backend's `shapeError` as the reply writer calls it (ADR 0166): one that throws or leaves the reply unwritable
// is logged naming its plugin (ADR 0144), and the client gets the gateway's error reply as it was before shaping.
import type { BackendInstance, Exchange, Logger, Reply } from '../sdk/index.ts';
import { ownerOf } from './plugin-owner.ts';
import { replyProblem } from './reply-check.ts';

/** Re-shapes a gateway-made error reply in place; never throws. */
export type ErrorShaper = (ex: Exchange, reply: Reply) => void;

/**
 * `instance.shapeError`, guarded. Its contract says it must not throw, yet a half-done shaping (a status or header set,
 * then a throw) or a body it cannot write (an object) reached the client, the latter ending the process in the
 * writer. What it changed is put back on a failure: status, headers and body, the error body the gateway made.
 */
export function errorShaper(instance: BackendInstance, logger: Logger): ErrorShaper {
  const shape = instance.shapeError!;
  const owner = ownerOf(instance);
  return (ex, reply) => {
    const { status, body } = reply;
    const headers = { ...reply.headers };
    let failure: unknown;
    try {
      shape.call(instance, ex, reply);
      const problem = replyProblem(reply);
      if (problem === undefined) return;
      failure = new TypeError(`error shaping left ${problem}`);
    } catch (err) {
      failure = err;
    }
    reply.status = status;
    reply.headers = headers;
    reply.body = body;
    logger.error('error shaping failed', { route: ex.route.key, ...owner, error: failure as Error });
  };
}
