import { withheldCredentials } from '../sdk/index.ts';
import type { PolicyInstance, WithheldCredentials } from '../sdk/index.ts';

/**
 * The request hook that removes credential headers (ADR 0015): built once per policy set at load from the
 * `credentialHeaders` its policies declare, and placed right after the last of those policies, so each of them
 * still reads the headers and no later phase (nor any upstream) sees them. The values go to `withheldCredentials`
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
        delete headers[name];
      }
      // The first removal wins: a later set (a backend's) never overwrites what the client sent.
      if (withheld !== undefined && ex.get(withheldCredentials) === undefined) ex.set<WithheldCredentials>(withheldCredentials, withheld);
      return undefined;
    },
  };
}
