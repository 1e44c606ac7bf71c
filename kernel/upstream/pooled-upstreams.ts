import type { HttpUpstreams, ResourceCache, UpstreamTarget, UpstreamTargetOptions } from '../sdk/index.ts';
import type { UpstreamMetrics } from '../telemetry/upstream-metrics.ts';
import type { TracingHolder } from '../telemetry/tracing.ts';
import { tlsConnector } from './tls-options.ts';
import { ConnectGuard } from './connect-guard.ts';
import { LazyPool, undiciClient } from './undici-core.ts';
import { parseOrigin } from './origin.ts';
import { PooledTarget } from './pooled-target.ts';
import { H1Pool } from './h1-pool.ts';
import { boundH2Answers } from './h2-answer-bounds.ts';

/** Upstream targets over pools kept in the generational resource cache (so reloads keep warm connections). */
export class PooledUpstreams implements HttpUpstreams {
  private readonly resources: ResourceCache;
  private readonly metrics: UpstreamMetrics | undefined;
  private readonly traces: TracingHolder | undefined;
  constructor(resources: ResourceCache, metrics?: UpstreamMetrics, traces?: TracingHolder) {
    this.resources = resources;
    this.metrics = metrics;
    this.traces = traces;
  }

  target(options: UpstreamTargetOptions): UpstreamTarget {
    const parsed = parseOrigin(options.origin);
    const http2 = options.http2 === true;
    const key = `pool:${parsed.href}:${parsed.secure ? JSON.stringify(options.tls ?? {}) : ''}${http2 ? ':h2' : ''}`;
    const pool = this.resources.get(
      key,
      () =>
        new LazyPool(() => {
          // TLS: SNI and the verified name are pinned to the backend (or `hostname`), never the request's Host.
          const { Pool: UndiciPool, buildConnector } = undiciClient();
          // h2c (ADR 0151): undici's connector marks a cleartext socket as h2: its client speaks HTTP/2 with prior
          // knowledge. undici 7's types leave `useH2c` out of the connector's options; its code reads it.
          const cleartext = { useH2c: http2 } as Parameters<typeof buildConnector>[0];
          const allowH2 = http2 || (options.tls?.alpn?.includes('h2') ?? false);
          if (allowH2) boundH2Answers();
          const guard = new ConnectGuard(parsed.secure ? tlsConnector(options.tls, parsed.host, http2) : buildConnector(cleartext));
          const created = new UndiciPool(parsed.href, {
            connect: guard.connect,
            allowH2,
            // No pool-wide deadlines: forwarded requests carry their route's (ADR 0019); plugin-made calls set their own.
            headersTimeout: 0,
            bodyTimeout: 0,
            keepAliveTimeout: 30_000,
          });
          guard.watch(created);
          return created;
        }),
      // Let in-flight calls finish, but do not let a stuck one (a slow mirror, say) hold shutdown.
      (lazy) => {
        const p = lazy.created;
        if (p === undefined) return undefined;
        return Promise.race([p.close(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]).then(() => p.destroy()).catch(() => undefined);
      },
    );
    // A TLS or h2 origin is always served by undici: made now, so that its first request does not load undici (ADR 0079).
    if (parsed.secure || http2) pool.get();
    // Cleartext HTTP/1.1 origins: the direct forward's lean HTTP/1.1 client (ADR 0073), beside undici's pool for the rest.
    const h1 =
      parsed.secure || http2
        ? null
        : this.resources.get(
            `h1:${parsed.href}`,
            () => new H1Pool(parsed.host, parsed.port),
            (p) => Promise.race([p.close(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]).then(() => p.destroy()),
          );
    return new PooledTarget(options, pool, this.metrics, this.traces, h1);
  }
}
