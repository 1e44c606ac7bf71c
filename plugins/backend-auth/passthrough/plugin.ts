import { withheldCredentials } from 'switchyard/sdk';
import { defineBackendAuth } from '../../lib/slots/backend-auth.ts';
import schema from './schema.json' with { type: 'json' };

/**
 * `passthrough`: the upstream gets the `Authorization` header the client sent. The kernel removes the credential
 * headers a route's auth policies read (DECIDED 6, ADR 0015) and keeps them as `withheldCredentials`; this puts
 * `Authorization` back. With no such policy nothing was removed and the client's header is still on the request.
 * Other credential headers (`x-api-key`) stay withheld: passthrough forwards `Authorization` only.
 */
export default defineBackendAuth<Record<string, never>>({
  key: 'passthrough',
  description: "Forward the client's original `Authorization` header to the upstream.",
  schema,
  compile() {
    return {
      apply(ex, attempt) {
        // Withheld by an auth policy, else as the client sent it (an MCP backend of several targets does not pass
        // it on by itself: ADR 0128).
        const original = ex.get(withheldCredentials)?.authorization ?? ex.headers.authorization;
        if (typeof original === 'string') attempt.headers.authorization = original;
      },
    };
  },
});
