import { defineBackend, parseUpstreamAddress } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };

/** `host`: reverse-proxy to one HTTP(S) upstream over a pooled connection set. */
export default defineBackend<string>({
  key: 'host',
  description: 'Forward to a plain HTTP(S) upstream (`host:port` or `http(s)://host[:port]`).',
  schema,
  named: true,
  compile(value, ctx) {
    const tls = ctx.policies.facets.tls;
    // BEHAVIOUR.md DECIDED 12: without a scheme, TLS only when backendTLS applies; 80 or 443 without a port.
    const target = parseUpstreamAddress(value, { tls: tls !== undefined, pathHint: 'a `host` backend takes no path; use `urlRewrite` to change the path' });
    if ('message' in target) return ctx.fail(target.message);
    const upstream = ctx.http.target({ origin: target.origin, tls, http2: ctx.policies.facets.http2 });
    return {
      protocol: 'http',
      label: value,
      target: upstream,
      // handle is the target's forward and nothing more: the kernel may forward straight into the response.
      forwardsToTarget: true,
      handle: (ex) => upstream.forward(ex),
      upgrade: (ex, socket, head) => upstream.upgrade(ex, socket, head),
    };
  },
});
