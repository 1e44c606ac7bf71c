import type { Logger, OutlierDetectionFacet } from '../sdk/index.ts';

/** What the kernel needs to count ejections on /metrics (a shared counter). */
export interface EjectionCounter {
  inc(labels?: Record<string, string>, by?: number): void;
}

/**
 * Passive health of one backend of one route (docs/adr/0023). Kept in the resource cache under the route and the
 * backend's config, so an unchanged backend keeps its counts and ejection across reloads. Plain fields, updated
 * in place: recording an outcome allocates nothing.
 */
export class BackendHealth {
  /** performance.now() until which the backend is out of rotation; 0 while it is in. */
  ejectedUntil = 0;
  /** Times ejected, the multiplier of the next ejection time; decays while the backend stays healthy. */
  ejections = 0;
  consecutive5xx = 0;
  consecutiveGateway = 0;
  /** When the backend last came back (for the multiplier's decay). */
  returnedAt = 0;
  /** Set while active health checks fail (`healthCheck`); independent of passive ejection. */
  activeDown = false;
}

/** A backend of a route as health checking sees it: its state, thresholds and labels. */
export interface HealthMember {
  readonly health: BackendHealth | null;
  readonly outlier: OutlierDetectionFacet | null;
  /** `backend` label of metrics and logs: the named backend, the host, or `backends[i]`. */
  readonly label: string;
}

/** Health bookkeeping shared by the backends of one route. */
export class RouteHealth {
  private readonly members: readonly HealthMember[];
  private readonly route: string;
  private readonly logger: Logger;
  private readonly counter: EjectionCounter;

  constructor(members: readonly HealthMember[], route: string, logger: Logger, counter: EjectionCounter) {
    this.members = members;
    this.route = route;
    this.logger = logger;
    this.counter = counter;
  }

  /** Whether member `i` may take a request now; an ejection whose time has passed ends here. */
  available(i: number, now: number): boolean {
    const h = this.members[i]!.health;
    if (h === null) return true;
    if (h.activeDown) return false;
    if (h.ejectedUntil === 0) return true;
    if (now < h.ejectedUntil) return false;
    h.ejectedUntil = 0;
    h.consecutive5xx = 0;
    h.consecutiveGateway = 0;
    h.returnedAt = now;
    this.logger.warn('backend returned to rotation', { route: this.route, backend: this.members[i]!.label, ejections: h.ejections });
    return true;
  }

  /** A request the backend served (any status below 500). */
  success(i: number): void {
    const h = this.members[i]!.health;
    if (h === null || this.members[i]!.outlier === null) return;
    h.consecutive5xx = 0;
    h.consecutiveGateway = 0;
    // Healthy for a whole base ejection time since it came back: the next ejection is shorter again (Envoy).
    if (h.ejections > 0 && h.returnedAt > 0 && performance.now() - h.returnedAt > this.members[i]!.outlier!.baseEjectionMs) {
      h.ejections--;
      h.returnedAt = h.ejections > 0 ? performance.now() : 0;
    }
  }

  /** A failed request: `gateway` for refused/reset connections, timeouts and 502/503/504. */
  failure(i: number, gateway: boolean): void {
    const m = this.members[i]!;
    const h = m.health;
    const o = m.outlier;
    if (h === null || o === null || h.ejectedUntil !== 0) return;
    h.consecutive5xx++;
    if (gateway) h.consecutiveGateway++;
    else h.consecutiveGateway = 0;
    if (h.consecutive5xx < o.consecutive5xx && h.consecutiveGateway < o.consecutiveGatewayFailure) return;
    // Envoy's rule: eject only while the ejected share is below the maximum, so one backend can always be ejected
    // and a set of flapping backends never empties the route.
    const now = performance.now();
    let ejected = 0;
    for (let k = 0; k < this.members.length; k++) {
      const other = this.members[k]!.health;
      if (other !== null && other.ejectedUntil !== 0 && now < other.ejectedUntil) ejected++;
    }
    if ((ejected * 100) / this.members.length >= o.maxEjectionPercent) return;
    h.ejections++;
    const ms = Math.min(o.baseEjectionMs * h.ejections, o.maxEjectionMs);
    h.ejectedUntil = now + ms;
    h.returnedAt = 0;
    const reason = h.consecutiveGateway >= o.consecutiveGatewayFailure ? 'consecutiveGatewayFailure' : 'consecutive5xx';
    this.counter.inc({ backend: m.label, route: this.route, reason });
    this.logger.warn('backend ejected', { route: this.route, backend: m.label, reason, ejectionMs: ms, ejections: h.ejections });
  }
}
