import type { ServerResponse } from 'node:http';
import type { AdminEndpoints } from './admin-servers.ts';

/** Whether the gateway takes traffic, and if not, what it waits for (`binds 8080`, `config`, `shutting down`). */
export interface Readiness {
  readonly ready: boolean;
  readonly pending: string;
}

/**
 * What the admin-side endpoints show: one gateway process answers for itself, a supervisor of workers
 * (kernel/boot/supervisor.ts) for all of them (readiness of every worker, metrics summed, one config).
 */
export interface AdminSource {
  readiness(): Readiness | Promise<Readiness>;
  /** The Prometheus text of `/metrics`. */
  metrics(): string | Promise<string>;
  /** The body of `/config_dump` (secrets already redacted). */
  configDump(): unknown;
}

function answer<T>(res: ServerResponse, value: T | Promise<T>, write: (v: T) => void): void {
  if (!(value instanceof Promise)) return write(value);
  value.then(write, (err: unknown) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`internal error: ${(err as Error)?.message ?? String(err)}\n`);
  });
}

/** `/healthz/ready`, `/metrics` and `/config_dump` over a source (BEHAVIOUR.md DECIDED 16). */
export function gatewayEndpoints(source: AdminSource): AdminEndpoints {
  return {
    readiness: {
      '/healthz/ready': (_req, res) =>
        answer(res, source.readiness(), (r) => {
          if (r.ready) res.writeHead(200, { 'content-type': 'text/plain' }).end('ready\n');
          else res.writeHead(503, { 'content-type': 'text/plain' }).end(`not ready, pending: ${r.pending}\n`);
        }),
    },
    stats: {
      '/metrics': (_req, res) => answer(res, source.metrics(), (text) => res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text)),
    },
    admin: {
      '/config_dump': (_req, res) =>
        answer(res, source.configDump() as unknown, (dump) => res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(dump, null, 2)}\n`)),
    },
  };
}
