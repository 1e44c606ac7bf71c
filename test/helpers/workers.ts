// Plumbing shared by the `config.workers` tests: the probe plugin that tags answers with the serving worker, and a
// request on a fresh connection (so SO_REUSEPORT may hand it to either worker).
import { request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

/** The test plugin that adds `x-worker: <thread id>` to answers (test/e2e/fixtures/worker-probe-plugin.ts). */
export const WORKER_PROBE = fileURLToPath(new URL('../e2e/fixtures/worker-probe-plugin.ts', import.meta.url));

export interface FreshAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The `x-worker` header ('undefined' when absent). */
  worker: string;
}

/** One request on its own connection (`connection: close`, no agent), a POST of `body` if given; rejects on a socket error. */
export function getFresh(url: string, headers: Record<string, string> = {}, body?: string): Promise<FreshAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false, method: body === undefined ? 'GET' : 'POST', headers: { connection: 'close', ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, worker: String(res.headers['x-worker']) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A config of two workers (with the probe plugin, no admin servers, no access log) serving `binds`, as YAML. */
export function twoWorkersYaml(binds: unknown[]): string {
  return stringify({
    config: { workers: 2, plugins: [WORKER_PROBE], adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off', logging: { accessLog: false } },
    binds,
  });
}
