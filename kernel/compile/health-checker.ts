import type { HealthCheckFacet, Logger, UpstreamTarget } from '../sdk/index.ts';
import type { BackendHealth, EjectionCounter } from './backend-health.ts';

/**
 * Active health checks of one backend (docs/adr/0023): GET `path` on the backend's own target (its configured
 * origin and Host, never anything from a request) every interval; after `unhealthyThreshold` failures in a row the
 * backend is out of rotation (`health.activeDown`) until `healthyThreshold` probes pass. One probe at a time.
 * Kept in the resource cache with the backend's state, so a reload that leaves the backend unchanged keeps it.
 */
export class HealthChecker {
  private readonly target: UpstreamTarget;
  private readonly settings: HealthCheckFacet;
  private readonly health: BackendHealth;
  private readonly labels: { readonly route: string; readonly backend: string };
  private readonly logger: Logger;
  private readonly counter: EjectionCounter;
  private timer: NodeJS.Timeout | undefined;
  private probing = false;
  private passed = 0;
  private failed = 0;
  private stopped = false;

  constructor(target: UpstreamTarget, settings: HealthCheckFacet, health: BackendHealth, labels: { route: string; backend: string }, logger: Logger, counter: EjectionCounter) {
    this.target = target;
    this.settings = settings;
    this.health = health;
    this.labels = labels;
    this.logger = logger;
    this.counter = counter;
  }

  start(): void {
    this.timer = setInterval(() => this.probe(), this.settings.intervalMs);
    this.timer.unref();
    this.probe();
  }

  dispose(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  private probe(): void {
    if (this.probing || this.stopped) return;
    this.probing = true;
    this.target
      .request({ method: 'GET', path: this.settings.path, timeoutMs: this.settings.timeoutMs, headers: { 'user-agent': 'switchyard-health-check' } })
      .then(
        (res) => {
          res.body.on('error', () => undefined);
          res.body.resume();
          this.outcome(res.status >= 200 && res.status < 300, `status ${res.status}`);
        },
        (err: unknown) => this.outcome(false, (err as Error)?.message ?? String(err)),
      );
  }

  private outcome(ok: boolean, detail: string): void {
    this.probing = false;
    if (this.stopped) return;
    const h = this.health;
    if (ok) {
      this.failed = 0;
      if (h.activeDown && ++this.passed >= this.settings.healthyThreshold) {
        h.activeDown = false;
        this.logger.warn('backend passed its health check, back in rotation', { ...this.labels, path: this.settings.path });
      }
      return;
    }
    this.passed = 0;
    if (!h.activeDown && ++this.failed >= this.settings.unhealthyThreshold) {
      h.activeDown = true;
      this.counter.inc({ backend: this.labels.backend, route: this.labels.route, reason: 'healthCheck' });
      this.logger.warn('backend failed its health check, out of rotation', { ...this.labels, path: this.settings.path, detail });
    }
  }
}
