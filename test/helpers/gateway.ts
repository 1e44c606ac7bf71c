import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createGateway, LogSink } from 'switchyard';
import type { Gateway } from 'switchyard';
import { fullPreset } from '../../plugins/presets/full.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { freePort } from './ports.ts';
import { testTempDir } from './temp-dir.ts';

export interface RunningGateway {
  readonly gateway: Gateway;
  /** Base URL of a bind port on 127.0.0.1. */
  url(port: number): string;
  readonly adminUrl: string;
  readonly statsUrl: string;
  readonly readinessUrl: string;
  /** Config file path (when started from a file). */
  readonly file: string;
  /** Every log line written so far. */
  readonly logs: string[];
  stop(): Promise<void>;
}

/**
 * Start an in-process gateway from a config object or YAML text, written to a temp file (so reload can be
 * tested). Admin, stats and readiness servers get free ports unless the config sets them.
 */
export async function startGateway(
  config: Record<string, unknown> | string,
  options: { preset?: readonly unknown[]; env?: NodeJS.ProcessEnv; watch?: boolean; knownKeys?: readonly string[] } = {},
): Promise<RunningGateway> {
  let text: string;
  if (typeof config === 'string') text = config;
  else {
    // Port 0: the OS picks, so admin servers never race other tests for a port; the helper reads them back.
    const staticBlock = { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', ...((config.config as object) ?? {}) };
    text = stringify({ ...config, config: staticBlock });
  }
  const dir = testTempDir('switchyard-test-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, text);
  const logs: string[] = [];
  const sink = new LogSink((chunk) => logs.push(...chunk.split('\n').filter(Boolean)));
  const gateway = createGateway(
    { preset: options.preset ?? fullPreset, knownKeys: options.knownKeys ?? FIRST_PARTY_KEYS, config: { file }, watch: options.watch ?? false, env: options.env ?? process.env },
    sink,
  );
  await gateway.start();
  const addr = (role: 'admin' | 'stats' | 'readiness'): string => {
    const a = gateway.admin.address(role);
    return a ? `http://127.0.0.1:${a.port}` : '';
  };
  return {
    gateway,
    url: (port) => `http://127.0.0.1:${port}`,
    adminUrl: addr('admin'),
    statsUrl: addr('stats'),
    readinessUrl: addr('readiness'),
    file,
    logs,
    stop: () => gateway.stop(),
  };
}

/** A gateway started by `startRoutesGateway`: its one bind port and that port's base URL. */
export interface RoutesGateway extends RunningGateway {
  readonly port: number;
  readonly base: string;
}

/** A gateway serving `routes` on one listener of one free port; `config` is the `config:` block. */
export async function startRoutesGateway(
  routes: readonly Record<string, unknown>[],
  options: { config?: Record<string, unknown>; preset?: readonly unknown[]; env?: NodeJS.ProcessEnv } = {},
): Promise<RoutesGateway> {
  const port = await freePort();
  const gw = await startGateway(oneListenerConfig(port, routes, options.config ? { config: options.config } : {}), { preset: options.preset, env: options.env });
  return { ...gw, port, base: `http://127.0.0.1:${port}` };
}

/** A gateway config of one bind on `port` with one listener serving `routes`; `extra` holds the other top-level keys. */
export function oneListenerConfig(port: number, routes: readonly Record<string, unknown>[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...extra, binds: [{ port, listeners: [{ routes }] }] };
}

/** A bind on `port` with one HTTPS listener serving `routes` with the certificate pair `tls` (PEM paths). */
export function httpsBind(port: number, tls: { readonly cert: string; readonly key: string }, routes: readonly Record<string, unknown>[]): Record<string, unknown> {
  return { port, listeners: [{ protocol: 'HTTPS', tls: { cert: tls.cert, key: tls.key }, routes }] };
}

/** A route named for the path prefix it matches (`/<name>`), with its own and its backend entry's policies. */
export interface NamedRoute {
  name: string;
  policies?: Record<string, unknown>;
  backendPolicies?: Record<string, unknown>;
}

/** Each route matches `/<name>` and goes to `backend(route)`, the backend entry carrying `backendPolicies`. */
export function namedRoutes<R extends NamedRoute>(routes: readonly R[], backend: (route: R) => Record<string, unknown>): Record<string, unknown>[] {
  return routes.map((r) => ({
    name: r.name,
    matches: [{ path: { pathPrefix: `/${r.name}` } }],
    ...(r.policies ? { policies: r.policies } : {}),
    backends: [{ ...backend(r), ...(r.backendPolicies ? { policies: r.backendPolicies } : {}) }],
  }));
}

/** A gateway's log lines that are JSON (`logging.format: json`), parsed. */
export function logRecords(gw: RunningGateway): Record<string, unknown>[] {
  return gw.logs.flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}
