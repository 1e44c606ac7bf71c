import { withheldCredentials } from '../sdk/index.ts';
import type { PolicyInstance, WithheldCredentials } from '../sdk/index.ts';

/**
 * The request hook that removes credential headers (ADR 0015): built once per policy set at load from the
 * `credentialHeaders` its policies declare, and placed right after the last of those policies, so each of them
 * still reads the headers and no later phase (nor any upstream) sees them: each is set to `undefined`, which every
 * header consumer skips. The values go to `withheldCredentials`
 * for `backendAuth.passthrough`; a request without any of the headers allocates nothing.
 */
export function withholdCredentials(names: readonly string[]): PolicyInstance {
  return {
    onRequest(ex) {
      const headers = ex.headers;
      let withheld: Record<string, string | string[]> | undefined;
      for (let i = 0; i < names.length; i++) {
        const name = names[i]!;
        const value = headers[name];
        if (value === undefined) continue;
        (withheld ??= {})[name] = value;
        // Blanked, not deleted (as `blankHopByHop` does): a `delete` turns Node's header object into a dictionary,
        // which made every later header walk of the request slower (docs/perf.md "Virtual keys, session 10").
        // Every consumer skips undefined values; CEL's `request.headers` leaves them out (cel-expressions.ts).
        headers[name] = undefined;
      }
      // The first removal wins: a later set (a backend's) never overwrites what the client sent.
      if (withheld !== undefined && ex.get(withheldCredentials) === undefined) ex.set<WithheldCredentials>(withheldCredentials, withheld);
      return undefined;
    },
  };
}
