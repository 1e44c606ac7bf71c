import type { AdminSource, Readiness, TailListener, ValidationResult } from '../admin/gateway-endpoints.ts';
import type { AdminUiConfig } from '../compile/snapshot.ts';
import { ADMIN_HANDLER_DEADLINE_MS } from '../compile/admin-handler.ts';
import type { AdminRequest, AdminResponse } from '../sdk/index.ts';
import { mergeMetrics, monotonicOnly } from '../telemetry/merge-metrics.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import type { Query, ToWorker } from './worker-protocol.ts';
import type { Slot, WorkerQuestion } from './worker-slot.ts';

/** What the answers need of the supervisor. */
export interface WorkerFleet {
  readonly slots: readonly Slot[];
  /** `config.workers`. */
  readonly count: number;
  /** The supervisor's own series. */
  readonly registry: MetricsRegistry;
  /** True once the supervisor began to stop. */
  stopping(): boolean;
  ask(slot: Slot, message: WorkerQuestion, timeoutMs: number): Promise<unknown>;
}

/**
 * The admin endpoints of a gateway of worker threads, answered for all of them: readiness when every worker is
 * ready, metrics summed (with the counters of workers that died), the config and the plugin endpoints of one
 * worker, the live tail of all.
 */
export class WorkerAnswers implements AdminSource {
  private readonly fleet: WorkerFleet;
  /** Counters and histograms of workers that died, as last served: added to the live workers' (monotonic /metrics). */
  private retired = '';
  /** `config.adminUi` of the live config, as the workers compiled it. */
  ui: AdminUiConfig | undefined;
  /** The admin UI's live tail while a browser watches: every worker sends its batches here. */
  tailListener: TailListener | undefined;

  constructor(fleet: WorkerFleet) {
    this.fleet = fleet;
  }

  /** Keep the counters of a worker that died (its last metrics) in the gateway's sums. */
  retire(slot: Slot): void {
    if (slot.lastMetrics) {
      this.retired = mergeMetrics([this.retired, monotonicOnly(slot.lastMetrics)]);
      slot.lastMetrics = '';
    }
  }

  /** A plugin admin request, asked of the first worker serving. */
  async pluginAdmin(prefix: string, req: AdminRequest): Promise<AdminResponse> {
    const slot = this.fleet.slots.find((s) => s.started);
    if (!slot) return { status: 503, body: { error: { message: 'no worker is serving' } } };
    const message = { t: 'admin' as const, prefix, method: req.method, subpath: req.subpath, query: req.query.toString(), body: req.body };
    // Longer than a worker's own deadline for the endpoint (ADR 0154, 0155), whose 504 names the plugin.
    return (await this.fleet.ask(slot, message, (this.ui?.endpointTimeoutMs ?? ADMIN_HANDLER_DEADLINE_MS) + 5_000)) as AdminResponse;
  }

  /**
   * Ready when every worker is: from what each reported last and the liveness pings (one that left a ping
   * unanswered is not serving either), as Envoy answers from its main thread. A probe never waits on a worker: a
   * busy one would make it outlast the kubelet's 1 s timeout (ADR 0194).
   */
  readiness(): Readiness {
    if (this.fleet.stopping()) return { ready: false, pending: 'shutting down' };
    const down = this.fleet.slots.filter((s) => !s.started).map((s) => s.index);
    if (down.length) return { ready: false, pending: `workers ${down.join(', ')} starting` };
    const notReady = this.fleet.slots.map((s) => (s.misses > 0 ? `worker ${s.index}: not answering` : s.readiness.ready ? '' : `worker ${s.index}: ${s.readiness.pending}`)).filter(Boolean);
    return notReady.length ? { ready: false, pending: notReady.join('; ') } : { ready: true, pending: '' };
  }

  /**
   * The supervisor's series, every running worker's summed, and the counters of workers that died as last served:
   * a restarted worker counts from 0 again, and without them the gateway's counters would go back.
   */
  async metrics(): Promise<string> {
    const texts = await Promise.all(
      this.fleet.slots
        .filter((s) => s.started)
        .map((s) =>
          (this.fleet.ask(s, { t: 'query', what: 'metrics' satisfies Query }, 5_000) as Promise<string>).then(
            (text) => (s.lastMetrics = text),
            () => '',
          ),
        ),
    );
    return mergeMetrics([this.fleet.registry.render(), this.retired, ...texts]);
  }

  /** The admin UI's validator: one worker compiles `text` as a reload would and drops it. */
  async validate(text: string): Promise<ValidationResult> {
    const slot = this.fleet.slots.find((s) => s.started);
    if (!slot) throw new Error('no worker is running');
    return (await this.fleet.ask(slot, { t: 'validate', text }, 120_000)) as ValidationResult;
  }

  adminUi(): AdminUiConfig | undefined {
    return this.ui;
  }

  /** The live tail of the whole gateway: each worker batches its requests (bounded) and posts them here. */
  tail(listener: TailListener): () => void {
    this.tailListener = listener;
    this.tellWorkers({ t: 'tail', on: true });
    return () => {
      if (this.tailListener !== listener) return;
      this.tailListener = undefined;
      this.tellWorkers({ t: 'tail', on: false });
    };
  }

  private tellWorkers(m: ToWorker): void {
    for (const s of this.fleet.slots) if (s.started) s.worker?.postMessage(m);
  }

  /** A worker's batch, handed to the UI's listener; past a full batch, requests only count as dropped. */
  tailed(events: readonly Record<string, unknown>[], dropped: number): void {
    const l = this.tailListener;
    if (!l) return;
    for (const e of events) {
      if (l.full) l.dropped++;
      else l.push(e);
    }
    l.dropped += dropped;
  }

  async configDump(): Promise<unknown> {
    const slot = this.fleet.slots.find((s) => s.started);
    if (!slot) throw new Error('no worker is running');
    const dump = (await this.fleet.ask(slot, { t: 'query', what: 'configDump' }, 5_000)) as Record<string, unknown>;
    return { workers: this.fleet.count, ...dump };
  }
}
