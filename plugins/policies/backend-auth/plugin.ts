import { definePolicy } from 'switchyard/sdk';
import type { PolicyInstance } from 'switchyard/sdk';
import { backendAuthFailure, bufferBodyForSigning } from '../../lib/backend-auth/contract.ts';
import { backendAuthSlot } from '../../lib/slots/backend-auth.ts';
import schema from './schema.json' with { type: 'json' };

/**
 * `backendAuth`: credentials from the gateway to the upstream. The value is one variant of the `backendAuth` slot;
 * its instance runs per upstream attempt (upstream phase), so every retry gets a fresh credential or signature,
 * computed after the request policies changed the request.
 */
export default definePolicy<Record<string, unknown>>({
  key: 'backendAuth',
  description: 'Authenticate the gateway to the upstream: pass the client credential through, a static key, or a GCP, AWS (SigV4) or Azure credential.',
  schema,
  slots: [backendAuthSlot],
  attach: ['routePolicies', 'backendPolicies', 'mcpTargetPolicies'],
  phase: 'upstream',
  order: 20,
  async compile(config, ctx) {
    const { instance } = await ctx.compileVariant(backendAuthSlot, config, []);
    const policy: PolicyInstance = {
      onUpstream(ex, attempt) {
        let result: void | Promise<void>;
        try {
          result = instance.apply(ex, attempt);
        } catch (err) {
          throw backendAuthFailure(err);
        }
        if (result) {
          return result.catch((err: unknown) => {
            throw backendAuthFailure(err);
          });
        }
      },
    };
    if (instance.needsBody) {
      // A signing variant hashes the body: read it before the backend forwards (the kernel then sends the buffer,
      // which also lets retries replay it). Runs in this policy's phase, after every request-mutating policy.
      policy.onRequest = (ex) => bufferBodyForSigning(ex)?.then(() => undefined);
    }
    return policy;
  },
});
