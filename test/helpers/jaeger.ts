// A real Jaeger (v2) for tracing tests: OTLP gRPC and HTTP receivers, in-memory storage and the query API, all on
// free loopback ports, from a config file written to a temp dir. `.ci/run` builds the binary (ADR 0037).
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir} from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stopChild } from './processes.ts';
import { freePort } from './ports.ts';
import { which } from './which.ts';
import { testTempDir } from './temp-dir.ts';

/** The jaeger binary (PATH, `$GOPATH/bin`, `~/go/bin`), or why the suite skips. */
export function locateJaeger(): { bin: string } | { skip: string } {
  const dirs = [join(homedir(), 'go', 'bin')];
  try {
    const go = which('go', ['/usr/local/go/bin']);
    if (go) dirs.unshift(join(execFileSync(go, ['env', 'GOPATH']).toString().trim(), 'bin'));
  } catch {
    // no Go: only PATH and ~/go/bin
  }
  const bin = process.env.JAEGER_BIN ?? which('jaeger', dirs);
  return bin ? { bin } : { skip: 'the jaeger binary is not installed (.ci/run builds github.com/jaegertracing/jaeger/cmd/jaeger with Go)' };
}

/** A span as Jaeger's query API returns it (`/api/traces`). */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  /** Microseconds since the epoch, and the span's length in microseconds. */
  startTime: number;
  duration: number;
  references: { refType: string; traceID: string; spanID: string }[];
  tags: { key: string; type: string; value: unknown }[];
  processID: string;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

export interface RunningJaeger {
  /** `http://127.0.0.1:<port>` (`https://` with TLS): OTLP/HTTP (`/v1/traces`). */
  readonly otlpHttp: string;
  /** `http://127.0.0.1:<port>` (`https://` with TLS): OTLP/gRPC. */
  readonly otlpGrpc: string;
  /** One trace by id (lower-case hex); undefined until Jaeger has stored it. */
  trace(traceId: string): Promise<JaegerTrace | undefined>;
  /**
   * Poll until the trace has at least `spans` spans, or until `spans` (a check) accepts it (exports are batched),
   * or fail after `ms`.
   */
  waitForTrace(traceId: string, spans: number | ((trace: JaegerTrace) => boolean), ms?: number): Promise<JaegerTrace>;
  /** Traces of a service (`/api/traces?service=`). */
  traces(service: string): Promise<JaegerTrace[]>;
  logs(): string;
  stop(): Promise<void>;
}

/** TLS on both OTLP receivers: the server's PEM certificate and key, and with `clientCa` a client certificate required. */
export interface JaegerTls {
  readonly cert: string;
  readonly key: string;
  readonly clientCa?: string;
}

export async function startJaeger(found: { bin: string }, tls?: JaegerTls): Promise<RunningJaeger> {
  const dir = testTempDir('switchyard-jaeger-');
  const [grpc, http, query, queryGrpc] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const receiverTls = tls
    ? `\n        tls:\n          cert_file: ${tls.cert}\n          key_file: ${tls.key}${tls.clientCa ? `\n          client_ca_file: ${tls.clientCa}` : ''}`
    : '';
  const config = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: []
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:${query}
    grpc:
      endpoint: 127.0.0.1:${queryGrpc}
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${grpc}${receiverTls}
      http:
        endpoint: 127.0.0.1:${http}${receiverTls}
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`;
  const file = join(dir, 'jaeger.yaml');
  writeFileSync(file, config);
  let output = '';
  const child: ChildProcess = spawn(found.bin, ['--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const base = `http://127.0.0.1:${query}`;
  const stop = async (): Promise<void> => {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`jaeger exited (${child.exitCode}):\n${output}`);
    }
    try {
      const r = await fetch(`${base}/api/services`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`jaeger did not start in 30s:\n${output}`);
    }
    await sleep(100);
  }
  const trace = async (traceId: string): Promise<JaegerTrace | undefined> => {
    const r = await fetch(`${base}/api/traces/${traceId}`);
    if (r.status === 404) return undefined;
    const body = (await r.json()) as { data: JaegerTrace[] | null };
    return body.data?.[0];
  };
  return {
    otlpHttp: `${tls ? 'https' : 'http'}://127.0.0.1:${http}`,
    otlpGrpc: `${tls ? 'https' : 'http'}://127.0.0.1:${grpc}`,
    trace,
    async waitForTrace(traceId, spans, ms = 15_000) {
      const end = Date.now() + ms;
      let last: JaegerTrace | undefined;
      while (Date.now() < end) {
        last = await trace(traceId);
        if (last && (typeof spans === 'number' ? last.spans.length >= spans : spans(last))) return last;
        await sleep(200);
      }
      throw new Error(`trace ${traceId} has ${last?.spans.length ?? 0} spans in Jaeger after ${ms}ms, expected ${typeof spans === 'number' ? spans : 'more'}`);
    },
    async traces(service) {
      const r = await fetch(`${base}/api/traces?service=${encodeURIComponent(service)}&limit=100&lookback=1h`);
      const body = (await r.json()) as { data: JaegerTrace[] | null };
      return body.data ?? [];
    },
    logs: () => output,
    stop,
  };
}

/** A span's tag value by key. */
export function tag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}

/** The span's parent span id (its CHILD_OF reference), if any. */
export function parentOf(span: JaegerSpan): string | undefined {
  return span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;
}
