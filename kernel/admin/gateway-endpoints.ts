import type { ServerResponse } from 'node:http';
import type { AdminEndpoints, UiHandler } from './admin-servers.ts';
import type { AdminUiConfig } from '../compile/snapshot.ts';
import type { PositionedIssue } from '../config/format-issues.ts';
import { PROMETHEUS_TEXT } from '../telemetry/metrics.ts';

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
  /** `config.adminUi` of the live config (absent: served on loopback only, without credentials). */
  adminUi?(): AdminUiConfig | undefined;
  /** Check a config text as a reload would (parse, schema, compile), without serving it: the admin UI's validator. */
  validate?(text: string): Promise<ValidationResult>;
  /** Receive every finished request's access-log fields until the returned function is called (the UI's live tail). */
  tail?(listener: TailListener): () => void;
}

/** What the live tail hands the source: while `full` (its batch is), requests only count themselves in `dropped`. */
export interface TailListener {
  readonly full: boolean;
  dropped: number;
  push(fields: Record<string, unknown>): void;
}

/** One positioned problem of a config check (`file:line:col`, config path, code, message, code frame). */
export type ValidationIssue = Omit<PositionedIssue, 'frame'> & { readonly frame?: string };

/**
 * A config check: ok, or every problem positioned; `warnings` lists what the check left out (a file, store or URL
 * the admin UI's validator does not touch: `SWY_ERR_CONFIG_UNCHECKED`) and the plugins' load warnings
 * (`SWY_WARN_CONFIG`), ADR 0131.
 */
export type ValidationResult = ({ ok: true } | { ok: false; errors: readonly ValidationIssue[]; error: string }) & {
  warnings?: readonly ValidationIssue[];
  /** Problems of each kind left out of the answer beyond the first MAX_SHOWN_ISSUES (present only then). */
  more?: { errors: number; warnings: number };
};

/**
 * Problems of each kind a validation answers with. A 1 MiB paste can hold some 25,000 (a misspelled policy per
 * route), which answered 23 MB with their code frames, twice over in `error`; nobody reads past the first ones.
 */
export const MAX_SHOWN_ISSUES = 100;

/**
 * The answer to a config check over its positioned `errors` and `warnings`, each kind cut to MAX_SHOWN_ISSUES;
 * `render` writes one issue as the CLI and reload logs do, for `error`. `uncounted`: errors the check found past
 * those it handed over; `uncountedWarnings` likewise.
 */
export function validationResult<I extends ValidationIssue>(errors: readonly I[], warnings: readonly I[], render: (issue: I) => string, uncounted = 0, uncountedWarnings = 0): ValidationResult {
  const more = { errors: Math.max(0, errors.length - MAX_SHOWN_ISSUES) + uncounted, warnings: Math.max(0, warnings.length - MAX_SHOWN_ISSUES) + uncountedWarnings };
  const shown = { errors: errors.slice(0, MAX_SHOWN_ISSUES), warnings: warnings.slice(0, MAX_SHOWN_ISSUES) };
  const extra = { ...(shown.warnings.length ? { warnings: shown.warnings } : {}), ...(more.errors || more.warnings ? { more } : {}) };
  if (errors.length === 0) return { ok: true, ...extra };
  const omitted = more.errors ? `\n\n... ${more.errors.toLocaleString('en')} more problems not shown` : '';
  return { ok: false, errors: shown.errors, error: shown.errors.map(render).join('\n\n') + omitted, ...extra };
}

/** `/ui`: the admin UI's module loads on its first request only (idle RSS of a gateway nobody browses unchanged). */
function lazyUi(source: AdminSource): UiHandler {
  let loaded: Promise<UiHandler> | undefined;
  return (req, res, bound) => {
    loaded ??= import('./ui/ui-server.ts').then((m) => m.uiHandler(source));
    loaded.then(
      (handle) => handle(req, res, bound),
      (err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`admin UI failed to load: ${(err as Error)?.message ?? String(err)}\n`);
      },
    );
  };
}

function answer<T>(res: ServerResponse, value: T | Promise<T>, write: (v: T) => void): void {
  if (!(value instanceof Promise)) return write(value);
  value.then(write, (err: unknown) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`internal error: ${(err as Error)?.message ?? String(err)}\n`);
  });
}

/** `/healthz/ready`, `/healthz/live`, `/metrics` and `/config_dump` over a source (BEHAVIOUR.md DECIDED 16). */
export function gatewayEndpoints(source: AdminSource): AdminEndpoints {
  return {
    readiness: {
      // Liveness: the main loop answers. Nothing a restart cannot fix (a held port, a restarting worker) fails it (ADR 0197).
      '/healthz/live': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('live\n'),
      '/healthz/ready': (_req, res) =>
        answer(res, source.readiness(), (r) => {
          if (r.ready) res.writeHead(200, { 'content-type': 'text/plain' }).end('ready\n');
          else res.writeHead(503, { 'content-type': 'text/plain' }).end(`not ready, pending: ${r.pending}\n`);
        }),
    },
    stats: {
      '/metrics': (_req, res) => answer(res, source.metrics(), (text) => res.writeHead(200, { 'content-type': PROMETHEUS_TEXT }).end(text)),
    },
    admin: {
      '/config_dump': (_req, res) =>
        answer(res, source.configDump() as unknown, (dump) => res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(dump, null, 2)}\n`)),
    },
    ui: lazyUi(source),
    adminUi: () => source.adminUi?.(),
  };
}
