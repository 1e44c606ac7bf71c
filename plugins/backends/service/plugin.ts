import { defineBackend, serviceAuthority } from 'switchyard/sdk';
import type { ServiceRef } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };

/**
 * `service`: a reference to a platform service (SPEC §2.5). Switchyard runs without a control plane, so the
 * reference resolves by DNS to `<hostname>:<port>` (the service's cluster DNS name) and is forwarded like `host`.
 */
export default defineBackend<ServiceRef>({
  key: 'service',
  description: 'Forward to a platform service by reference (`{name: {namespace, hostname} | "ns/hostname", port}`), resolved by DNS.',
  schema,
  compile(value, ctx) {
    const address = serviceAuthority(value);
    // serviceAuthority names fields from the `service` key; this context already sits at it.
    if (typeof address !== 'string') return ctx.fail(address.message, address.sub.slice(1));
    const tls = ctx.policies.facets.tls;
    const upstream = ctx.http.target({ origin: `${tls ? 'https' : 'http'}://${address}`, tls, http2: ctx.policies.facets.http2, authority: 'target' });
    return {
      protocol: 'http',
      target: upstream,
      // handle is the target's forward and nothing more: the kernel may forward straight into the response.
      forwardsToTarget: true,
      handle: (ex) => upstream.forward(ex),
      upgrade: (ex, socket, head) => upstream.upgrade(ex, socket, head),
    };
  },
});
