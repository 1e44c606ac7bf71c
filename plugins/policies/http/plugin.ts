import { definePolicy } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };

interface HttpConfig {
  version: 'HTTP/1.1' | 'HTTP/2.0';
}

/**
 * `http`: the HTTP version spoken to the upstream (the reference's backend `http.version`; ADR 0151). No hooks: it
 * offers the `http2` facet, which `host` and `service` backends turn into their connection pool's protocol.
 */
export default definePolicy<HttpConfig>({
  key: 'http',
  description: 'The HTTP version spoken to the upstream: `HTTP/2.0` for h2c (cleartext HTTP/2, gRPC) or h2 over TLS.',
  schema,
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'upstream',
  order: 11,
  compile(config, ctx) {
    const http2 = config.version === 'HTTP/2.0';
    return {
      facets: { http2 },
      // Only backends that forward HTTP themselves (host, service, named) have a pool to speak HTTP/2 on.
      ...(http2
        ? {
            requiresBackendProtocol: {
              protocol: 'http',
              message: '`http.version: HTTP/2.0` applies to `host`, `service` and named backends only; MCP and `ai` backends choose their own protocol',
              path: [...ctx.path, 'version'],
            },
          }
        : {}),
    };
  },
});
