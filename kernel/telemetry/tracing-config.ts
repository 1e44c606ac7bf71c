/** `config.tracing` (BEHAVIOUR.md §2.1 `config.tracing`, §6.3), resolved. Restart only. */

/** The block as written. */
export interface RawTracing {
  otlpEndpoint: string;
  otlpProtocol?: 'grpc' | 'http';
  path?: string;
  headers?: Record<string, string>;
  randomSampling?: boolean | number;
  clientSampling?: boolean | number;
  serviceName?: string;
  resourceAttributes?: Record<string, string | number | boolean>;
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
}

const ratio = (v: boolean | number | undefined, fallback: number): number => (v === undefined ? fallback : v === true ? 1 : v === false ? 0 : v);

export function resolveTracing(raw: RawTracing | undefined): TracingConfig | null {
  if (!raw) return null;
  const protocol = raw.otlpProtocol ?? 'grpc';
  const endpoint = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw.otlpEndpoint) ? raw.otlpEndpoint : `http://${raw.otlpEndpoint}`;
  const url = protocol === 'http' ? endpoint.replace(/\/+$/, '') + (raw.path ?? '/v1/traces') : endpoint;
  return {
    url,
    protocol,
    headers: raw.headers ?? {},
    randomRatio: ratio(raw.randomSampling, 0),
    clientRatio: ratio(raw.clientSampling, 1),
    resource: { 'service.name': raw.serviceName ?? 'switchyard', ...raw.resourceAttributes },
  };
}
