import { defineBackend } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };
import { parseHost } from './parse-host.ts';

/** `host`: reverse-proxy to one HTTP(S) upstream over a pooled connection set. */
export default defineBackend<string>({
  key: 'host',
  description: 'Forward to a plain HTTP(S) upstream (`host:port` or `http(s)://host[:port]`).',
  schema,
  named: true,
  compile(value, ctx) {
    const tls = ctx.policies.facets.tls;
    const target = parseHost(value, tls !== undefined);
    if (typeof target === 'string') return ctx.fail(target);
    const upstream = ctx.http.target({ origin: target.origin, tls });
    return {
      protocol: 'http',
      target: upstream,
      handle: (ex) => upstream.forward(ex),
      upgrade: (ex, socket, head) => upstream.upgrade(ex, socket, head),
    };
  },
});
