/**
 * `config.tracing` (BEHAVIOUR.md §2.1 `config.tracing`, §6.3), resolved, with the OpenTelemetry environment variables
 * filling in what the block leaves out (ADR 0046). Restart only.
 */
import { isAbsolute, resolve } from 'node:path';
import { ConfigError, ErrorCode, FILE_SIZE_LIMITS, readSharedFile } from '../sdk/index.ts';
import type { ConnectionOptions } from 'node:tls';
import type { ConfigIssue, ConfigPath } from '../sdk/index.ts';
import { notCheckedIssue } from '../sdk/check-only.ts';
import { NO_FETCHES } from '../sdk/read-file.ts';
import type { SharedFetches } from '../sdk/shared.ts';
import { caBundleProblem } from '../sdk/ca-bundle.ts';

/** The block as written. */
export interface RawTracing {
  otlpEndpoint?: string;
  otlpProtocol?: 'grpc' | 'http';
  path?: string;
  headers?: Record<string, string>;
  randomSampling?: boolean | number;
  clientSampling?: boolean | number;
  serviceName?: string;
  resourceAttributes?: Record<string, string | number | boolean>;
  captureMessageContent?: boolean;
  tls?: RawTracingTls;
}

/** `tracing.tls`, named as `backendTLS` names them: PEM files of the CA bundle, client certificate and key. */
export interface RawTracingTls {
  root?: string;
  cert?: string;
  key?: string;
  hostname?: string;
  insecure?: boolean;
}

/** A PEM file to read at load: where it is named (a config field, or the environment variable). */
export interface TlsFile {
  readonly file: string;
  readonly path: ConfigPath;
  /** The environment variable that named it (its path is the process's working directory's). */
  readonly env?: string;
}

/** TLS to the collector (ADR 0132): the files, then (at load) their PEM text. */
export interface TracingTls {
  readonly root?: TlsFile;
  readonly cert?: TlsFile;
  readonly key?: TlsFile;
  readonly servername?: string;
  readonly insecure: boolean;
  /** The PEM text of `root`, `cert` and `key`, read at load (`loadTracingTls`). */
  readonly pem?: { readonly ca?: string; readonly cert?: string; readonly key?: string };
}

/** With defaults applied; the ratios are 0..1. */
export interface TracingConfig {
  /** The export URL: the endpoint, plus `path` for OTLP/HTTP. */
  readonly url: string;
  readonly protocol: 'grpc' | 'http';
  readonly headers: Readonly<Record<string, string>>;
  /** Ratio of requests without a trace that start one (`randomSampling`; default 0). */
  readonly randomRatio: number;
  /** Ratio of client-sampled requests that are traced (`clientSampling`; default 1). */
  readonly clientRatio: number;
  readonly resource: Readonly<Record<string, string | number | boolean>>;
  /** Prompt and completion content on GenAI spans (`captureMessageContent`; default off). */
  readonly captureMessageContent: boolean;
  /** TLS settings for an `https://` endpoint; absent: the system's CAs, no client certificate. */
  readonly tls?: TracingTls;
  /** Longest a finished span waits for its batch's export, in ms (OTEL_BSP_SCHEDULE_DELAY; default 1000). */
  readonly scheduleDelayMs: number;
}

const ratio = (v: boolean | number | undefined, fallback: number): number => (v === undefined ? fallback : v === true ? 1 : v === false ? 0 : v);

const envError = (name: string, field: string, message: string): ConfigError =>
  new ConfigError({ code: ErrorCode.configEnv, path: ['config', 'tracing', field], message: `the \`${name}\` environment variable ${message}` });

/** The first of `names` set to a non-empty value in `env`. */
function pick(env: NodeJS.ProcessEnv, ...names: string[]): [string, string] | undefined {
  for (const n of names) {
    const v = env[n]?.trim();
    if (v) return [n, v];
  }
  return undefined;
}

/** `k1=v1,k2=v2` (W3C baggage syntax, values percent-decoded), as OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS are written. */
function keyValues(name: string, field: string, text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of text.split(',')) {
    if (!item.trim()) continue;
    const eq = item.indexOf('=');
    const key = eq > 0 ? item.slice(0, eq).trim() : '';
    if (!key) throw envError(name, field, `must be \`key=value\` pairs separated by commas, got ${JSON.stringify(item.trim().slice(0, 40))}`);
    let value = item.slice(eq + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      // Not percent-encoded: taken as written.
    }
    out[key] = value;
  }
  return out;
}

/** OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: `grpc` or `http/protobuf` (`http/json` is not an exporter the gateway has). */
function envProtocol(env: NodeJS.ProcessEnv): 'grpc' | 'http' | undefined {
  const p = pick(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL');
  if (!p) return undefined;
  if (p[1] === 'grpc') return 'grpc';
  if (p[1] === 'http/protobuf') return 'http';
  throw envError(p[0], 'otlpProtocol', `must be \`grpc\` or \`http/protobuf\` (OTLP/JSON is not supported), got ${JSON.stringify(p[1].slice(0, 40))}`);
}

/** OTEL_TRACES_SAMPLER (+ `_ARG`) as the ratio of requests without a trace that start one. */
function envRandomRatio(env: NodeJS.ProcessEnv): number | undefined {
  const s = pick(env, 'OTEL_TRACES_SAMPLER');
  if (!s) return undefined;
  const sampler = s[1].toLowerCase();
  if (sampler === 'always_on' || sampler === 'parentbased_always_on') return 1;
  if (sampler === 'always_off' || sampler === 'parentbased_always_off') return 0;
  if (sampler === 'traceidratio' || sampler === 'parentbased_traceidratio') {
    const arg = pick(env, 'OTEL_TRACES_SAMPLER_ARG');
    if (!arg) return 1;
    const n = Number(arg[1]);
    if (!Number.isFinite(n) || n < 0 || n > 1) throw envError(arg[0], 'randomSampling', `must be a ratio from 0 to 1, got ${JSON.stringify(arg[1].slice(0, 40))}`);
    return n;
  }
  throw envError(s[0], 'randomSampling', `must be one of always_on, always_off, traceidratio and their parentbased_ forms, got ${JSON.stringify(s[1].slice(0, 40))}`);
}

/** OTEL_BSP_SCHEDULE_DELAY: whole milliseconds from 1 to 60000 (a minute of spans held is past any backend's use). */
function envScheduleDelay(env: NodeJS.ProcessEnv): number | undefined {
  const d = pick(env, 'OTEL_BSP_SCHEDULE_DELAY');
  if (!d) return undefined;
  const n = Number(d[1]);
  if (!/^\s*\d+\s*$/.test(d[1]) || n < 1 || n > 60_000) {
    // No config field of its own: the error points at the tracing block.
    throw new ConfigError({ code: ErrorCode.configEnv, path: ['config', 'tracing'], message: `the \`${d[0]}\` environment variable must be whole milliseconds from 1 to 60000, got ${JSON.stringify(d[1].slice(0, 40))}` });
  }
  return n;
}

/** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: `true`, `SPAN_ONLY`, `SPAN_AND_EVENT` turn it on. */
function envCapture(env: NodeJS.ProcessEnv): boolean | undefined {
  const c = pick(env, 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT');
  if (!c) return undefined;
  const v = c[1].toLowerCase();
  if (v === 'true' || v === 'span_only' || v === 'span_and_event') return true;
  if (v === 'false' || v === 'no_content' || v === 'event_only') return false;
  throw envError(c[0], 'captureMessageContent', `must be true, false, NO_CONTENT, SPAN_ONLY or SPAN_AND_EVENT, got ${JSON.stringify(c[1].slice(0, 40))}`);
}

/**
 * An endpoint with a user or password in it is refused, as every URL of the config is: the endpoint is shown in
 * `/config_dump` and in the log line of a failed export, where a credential in it would be in clear.
 */
function refuseCredentials(url: string, fromConfig: boolean): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return;
  }
  if (!parsed.username && !parsed.password) return;
  throw new ConfigError({
    code: ErrorCode.configInvalid,
    path: fromConfig ? ['config', 'tracing', 'otlpEndpoint'] : ['config', 'tracing'],
    message: `credentials in the trace endpoint's URL${fromConfig ? '' : ' (from OTEL_EXPORTER_OTLP_ENDPOINT)'} are not supported; send them as \`tracing.headers\` (\`authorization: Basic ...\`), whose values are kept secret`,
  });
}

/**
 * The tracing settings. The `tracing` block turns tracing on (the environment never does; `OTEL_SDK_DISABLED=true`
 * turns it off); each field it sets wins over the environment, and each field it leaves out is read from the
 * standard OpenTelemetry variable, then defaulted.
 */
export function resolveTracing(raw: RawTracing | undefined, env: NodeJS.ProcessEnv = process.env): TracingConfig | null {
  if (!raw) return null;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const protocol = raw.otlpProtocol ?? envProtocol(env) ?? 'grpc';
  let url: string;
  const withScheme = (e: string): string => (/^[a-z][a-z0-9+.-]*:\/\//i.test(e) ? e : `http://${e}`);
  if (raw.otlpEndpoint !== undefined) {
    const endpoint = withScheme(raw.otlpEndpoint);
    url = protocol === 'http' ? endpoint.replace(/\/+$/, '') + (raw.path ?? '/v1/traces') : endpoint;
  } else {
    // The traces endpoint is used as written; the generic one gets the signal's path (OTLP exporter spec).
    const traces = pick(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
    const generic = pick(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
    if (traces) url = withScheme(traces[1]);
    else if (generic) url = protocol === 'http' ? withScheme(generic[1]).replace(/\/+$/, '') + (raw.path ?? '/v1/traces') : withScheme(generic[1]);
    else {
      throw new ConfigError({
        code: ErrorCode.configInvalid,
        path: ['config', 'tracing'],
        message: '`tracing` needs `otlpEndpoint` (or the OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT environment variable)',
      });
    }
  }
  refuseCredentials(url, raw.otlpEndpoint !== undefined);
  const envHeaders = pick(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'OTEL_EXPORTER_OTLP_HEADERS');
  const headers = { ...(envHeaders ? keyValues(envHeaders[0], 'headers', envHeaders[1]) : {}), ...raw.headers };
  const envResource = pick(env, 'OTEL_RESOURCE_ATTRIBUTES');
  const envService = pick(env, 'OTEL_SERVICE_NAME');
  const resource: Record<string, string | number | boolean> = {
    'service.name': 'switchyard',
    ...(envResource ? keyValues(envResource[0], 'resourceAttributes', envResource[1]) : {}),
    ...(envService ? { 'service.name': envService[1] } : {}),
    ...raw.resourceAttributes,
    ...(raw.serviceName !== undefined ? { 'service.name': raw.serviceName } : {}),
  };
  const tls = resolveTls(raw.tls, url, env);
  return {
    url,
    protocol,
    headers,
    ...(tls ? { tls } : {}),
    randomRatio: raw.randomSampling !== undefined ? ratio(raw.randomSampling, 0) : (envRandomRatio(env) ?? 0),
    clientRatio: ratio(raw.clientSampling, 1),
    resource,
    captureMessageContent: raw.captureMessageContent ?? envCapture(env) ?? false,
    scheduleDelayMs: envScheduleDelay(env) ?? 1000,
  };
}

const tlsPath = (field: string): ConfigPath => ['config', 'tracing', 'tls', field];

/**
 * `tracing.tls`, each file it leaves out taken from the OTLP exporter's variables (OTEL_EXPORTER_OTLP_(TRACES_)
 * CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY). Only for an `https://` endpoint: the block with a cleartext one is
 * refused (it would say TLS where there is none); the variables, set for every exporter of a host, are then unused.
 */
function resolveTls(raw: RawTracingTls | undefined, url: string, env: NodeJS.ProcessEnv): TracingTls | undefined {
  const secure = url.toLowerCase().startsWith('https://');
  if (raw !== undefined && !secure) {
    throw new ConfigError({ code: ErrorCode.configInvalid, path: ['config', 'tracing', 'tls'], message: `\`tls\` applies to an \`https://\` trace endpoint; ${JSON.stringify(url)} is cleartext` });
  }
  if (!secure) return undefined;
  const file = (field: 'root' | 'cert' | 'key', ...names: string[]): TlsFile | undefined => {
    const given = raw?.[field];
    if (given !== undefined) return { file: given, path: tlsPath(field) };
    const named = pick(env, ...names);
    return named ? { file: resolve(named[1]), path: tlsPath(field), env: named[0] } : undefined;
  };
  const root = file('root', 'OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE', 'OTEL_EXPORTER_OTLP_CERTIFICATE');
  const cert = file('cert', 'OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE', 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE');
  const key = file('key', 'OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY', 'OTEL_EXPORTER_OTLP_CLIENT_KEY');
  if (cert && !key) throw new ConfigError({ code: ErrorCode.configInvalid, path: tlsPath('cert'), message: '`cert` needs `key` (the private key of the client certificate)' });
  if (key && !cert) throw new ConfigError({ code: ErrorCode.configInvalid, path: tlsPath('key'), message: '`key` needs `cert` (the client certificate it belongs to)' });
  const hostname = raw?.hostname?.trim();
  if (raw?.hostname !== undefined && (!hostname || /[\s/:]/.test(hostname))) {
    throw new ConfigError({ code: ErrorCode.configInvalid, path: tlsPath('hostname'), message: `\`${raw.hostname}\` is not a host name` });
  }
  if (!root && !cert && hostname === undefined && raw?.insecure !== true) return undefined;
  return { ...(root ? { root } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}), ...(hostname ? { servername: hostname } : {}), insecure: raw?.insecure === true };
}

/**
 * Read the PEM files of `tracing.tls` (bounded, never blocking: readSharedFile) and check them as `backendTLS`
 * does, so a wrong file fails the load (and `--validate-only`) rather than every export. `report` takes a problem at
 * its field; the result has no PEM text then. With {@link NO_FETCHES} (a paste, ADR 0131) no file is read or looked
 * at: each is reported as not checked.
 */
export async function loadTracingTls(cfg: TracingConfig | null, cwd: string, fetches: SharedFetches | undefined, report: (issue: ConfigIssue) => void): Promise<TracingConfig | null> {
  const tls = cfg?.tls;
  if (!cfg || !tls) return cfg;
  const issue = (path: ConfigPath, message: string): void => report({ code: ErrorCode.configInvalid, path, message });
  const read = async (f: TlsFile | undefined, label: string): Promise<string | undefined> => {
    if (!f) return undefined;
    if (fetches === NO_FETCHES) {
      report(notCheckedIssue(f.path, `the trace collector's ${label} file \`${f.file}\``));
      return undefined;
    }
    const full = isAbsolute(f.file) ? f.file : resolve(cwd, f.file);
    const from = f.env ? ` (from ${f.env})` : '';
    let text: string;
    try {
      text = await readSharedFile(fetches, full, FILE_SIZE_LIMITS.key);
    } catch (err) {
      issue(f.path, `cannot read the ${label} file \`${f.file}\`${from} (${full}): ${(err as Error).message}`);
      return undefined;
    }
    if (!/-----BEGIN [A-Z0-9 ]+-----/.test(text)) {
      issue(f.path, `the ${label} file \`${f.file}\`${from} holds no PEM block`);
      return undefined;
    }
    return text;
  };
  const [ca, cert, key] = await Promise.all([read(tls.root, 'CA bundle'), read(tls.cert, 'client certificate'), read(tls.key, 'private key')]);
  if ((tls.root && !ca) || (tls.cert && !cert) || (tls.key && !key)) return cfg;
  // Each block parsed: node:tls takes a bundle cut after its BEGIN line without a word, and trusts nothing then.
  const caProblem = ca === undefined ? undefined : caBundleProblem(ca);
  if (caProblem) {
    issue(tls.root!.path, `the CA bundle \`${tls.root!.file}\`${tls.root!.env ? ` (from ${tls.root!.env})` : ''} is not valid PEM: ${caProblem}`);
    return cfg;
  }
  // node:tls only when the trace endpoint has TLS settings.
  const { createSecureContext } = process.getBuiltinModule('node:tls');
  try {
    if (cert) createSecureContext({ cert, key });
  } catch (err) {
    issue(tls.key!.path, `the client certificate \`${tls.cert!.file}\` and key \`${tls.key!.file}\` are not a valid pair: ${(err as Error).message}`);
    return cfg;
  }
  return { ...cfg, tls: { ...tls, pem: { ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) } } };
}

/** Node TLS options for a connection to the collector (https.Agent, http2.connect). */
export function collectorTlsOptions(tls: TracingTls | undefined): ConnectionOptions {
  if (!tls) return {};
  return {
    ...tls.pem,
    // SNI and the certificate check both use `hostname` when set (node:tls checks against `servername`).
    ...(tls.servername ? { servername: tls.servername } : {}),
    rejectUnauthorized: !tls.insecure,
  };
}
