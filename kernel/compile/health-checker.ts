import { discardBody } from '../sdk/index.ts';
import type { HealthCheckFacet, Logger, UpstreamTarget } from '../sdk/index.ts';
import type { SharedCell } from '../sdk/shared.ts';
import { localCell } from '../resources/shared-cells.ts';
import type { BackendHealth, EjectionCounter } from './backend-health.ts';

/** The checker's shared numbers: when the last probe was claimed, until when one is in flight, passes and failures in a row. */
const CLAIMED_AT = 0;
const IN_FLIGHT_UNTIL = 1;
const PASSED = 2;
const FAILED = 3;
const ORIGIN = performance.timeOrigin;

/** The cells of a health checker: its own numbers; `localCell` when nothing is shared. */
export function checkerCell(): SharedCell {
  return localCell([0, 0, 0, 0]);
}

/**
 * Active health checks of one backend (docs/adr/0023, 0047): GET `path` on the backend's own target (its configured
 * origin and Host, never anything from a request) every interval; after `unhealthyThreshold` failures in a row the
 * backend is out of rotation (`health.activeDown`) until `healthyThreshold` probes pass. One probe at a time.
 *
 * Once for the gateway, however many workers it runs (Envoy's health checker runs on its main thread): every worker
 * has a checker ticking each interval, and a tick probes only after claiming the interval in the shared `cell`
 * (no probe claimed for about an interval, none in flight). The worker that claimed keeps claiming, since its own
 * ticks come round first; if it dies another takes over on its next tick. The outcome (counts in a row, the
 * backend's `activeDown`) is written to shared memory, so every worker stops and resumes sending together.
 * Kept in the resource cache with the backend's state, so a reload that leaves the backend unchanged keeps it.
 */
export class HealthChecker {
  private readonly target: UpstreamTarget;
  private readonly settings: HealthCheckFacet;
  private readonly health: BackendHealth;
  private readonly labels: { readonly route: string; readonly backend: string };
  private readonly logger: Logger;
  private readonly counter: EjectionCounter;
  private readonly cell: SharedCell;
  /** Timers fire a little late or early relative to another thread's claim: this much short of an interval still counts as due. */
  private readonly slackMs: number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    target: UpstreamTarget,
    settings: HealthCheckFacet,
    health: BackendHealth,
    labels: { route: string; backend: string },
    logger: Logger,
    counter: EjectionCounter,
    cell: SharedCell = checkerCell(),
  ) {
    this.target = target;
    this.settings = settings;
    this.health = health;
    this.labels = labels;
    this.logger = logger;
    this.counter = counter;
    this.cell = cell;
    this.slackMs = Math.min(settings.intervalMs / 10, 25);
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.settings.intervalMs);
    this.timer.unref();
    this.tick();
  }

  dispose(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  /** Probe if this interval's probe is not claimed yet (by this worker or another). */
  private tick(): void {
    if (this.stopped) return;
    const now = ORIGIN + performance.now();
    const c = this.cell;
    const v = c.values;
    c.lock();
    const due = now - v[CLAIMED_AT]! >= this.settings.intervalMs - this.slackMs && now >= v[IN_FLIGHT_UNTIL]!;
    if (due) {
      v[CLAIMED_AT] = now;
      // A worker that dies mid-probe must not block the others for ever.
      v[IN_FLIGHT_UNTIL] = now + this.settings.timeoutMs + 1_000;
    }
    c.unlock();
    if (due) this.probe();
  }

  private probe(): void {
    this.target
      .request({ method: 'GET', path: this.settings.path, timeoutMs: this.settings.timeoutMs, headers: { 'user-agent': 'switchyard-health-check' } })
      .then(
        (res) => {
          discardBody(res.body);
          this.outcome(res.status >= 200 && res.status < 300, `status ${res.status}`);
        },
        (err: unknown) => this.outcome(false, (err as Error)?.message ?? String(err)),
      );
  }

  private outcome(ok: boolean, detail: string): void {
    const c = this.cell;
    const v = c.values;
    const h = this.health;
    let change: 'up' | 'down' | undefined;
    c.lock();
    v[IN_FLIGHT_UNTIL] = 0;
    if (this.stopped) {
      c.unlock();
      return;
    }
    if (ok) {
      v[FAILED] = 0;
      if (h.activeDown && ++v[PASSED]! >= this.settings.healthyThreshold) {
        h.activeDown = false;
        change = 'up';
      }
    } else {
      v[PASSED] = 0;
      if (!h.activeDown && ++v[FAILED]! >= this.settings.unhealthyThreshold) {
        h.activeDown = true;
        change = 'down';
      }
    }
    c.unlock();
    if (change === 'up') this.logger.warn('backend passed its health check, back in rotation', { ...this.labels, path: this.settings.path });
    if (change === 'down') {
      this.counter.inc({ backend: this.labels.backend, route: this.labels.route, reason: 'healthCheck' });
      this.logger.warn('backend failed its health check, out of rotation', { ...this.labels, path: this.settings.path, detail });
    }
  }
}
