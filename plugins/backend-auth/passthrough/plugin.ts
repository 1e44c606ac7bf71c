import { defineBackendAuth } from 'switchyard/sdk';
import { ORIGINAL_AUTHORIZATION } from '../../lib/backend-auth/contract.ts';
import type { BackendAuthInstance } from '../../lib/backend-auth/contract.ts';
import schema from './schema.json' with { type: 'json' };

/**
 * `passthrough`: the upstream gets the `Authorization` header the client sent. Gateway auth policies strip an
 * accepted credential (DECIDED 6) and publish it as ORIGINAL_AUTHORIZATION first; with no such policy nothing was
 * stripped and the client's header is still on the request, so there is nothing to do.
 */
export default defineBackendAuth<Record<string, never>, BackendAuthInstance>({
  key: 'passthrough',
  description: "Forward the client's original `Authorization` header to the upstream.",
  schema,
  compile() {
    return {
      apply(ex, attempt) {
        const original = ex.get(ORIGINAL_AUTHORIZATION);
        if (original !== undefined) attempt.headers.authorization = original;
      },
    };
  },
});
