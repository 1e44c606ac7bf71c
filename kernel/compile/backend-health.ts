import type { Logger, OutlierDetectionFacet } from '../sdk/index.ts';
import type { SharedCell } from '../sdk/shared.ts';
import { localCell } from '../resources/shared-cells.ts';

/** What the kernel needs to count ejections on /metrics (a shared counter). */
export interface EjectionCounter {
  inc(labels?: Record<string, string>, by?: number): void;
}

/**
 * Clock shared by the worker threads: each thread's performance.now() counts from its own start, so times kept in
 * shared memory are stored as performance.timeOrigin + performance.now() (ms since the epoch, monotonic within a
 * thread) and read back on the reading thread's performance.now() scale.
 */
const ORIGIN = performance.timeOrigin;
const toShared = (t: number): number => (t === 0 ? 0 : t + ORIGIN);
const fromShared = (t: number): number => (t === 0 ? 0 : t - ORIGIN);

const EJECTED_UNTIL = 0;
const EJECTIONS = 1;
const C5XX = 2;
const CGW = 3;
const RETURNED_AT = 4;
const ACTIVE_DOWN = 5;

/**
 * Passive and active health of one backend of one route (docs/adr/0023, 0047). Its numbers live in a shared cell
 * (kernel/resources/shared-cells.ts) keyed by the route and the backend's config, so with `config.workers` every
 * worker sees the same counts and the same ejection (Envoy keeps outlier state per cluster across its workers),
 * and an unchanged backend keeps them across reloads. Updates that decide something (an ejection, a return) run
 * under the cell's lock, so one worker makes each decision; plain reads need no lock. Allocates nothing.
 */
export class BackendHealth {
  readonly cell: SharedCell;
  private readonly v: Float64Array;

  constructor(cell: SharedCell = localCell([0, 0, 0, 0, 0, 0])) {
    this.cell = cell;
    this.v = cell.values;
  }

  /** performance.now() until which the backend is out of rotation; 0 while it is in. */
  get ejectedUntil(): number {
    return fromShared(this.v[EJECTED_UNTIL]!);
  }
  set ejectedUntil(t: number) {
    this.v[EJECTED_UNTIL] = toShared(t);
  }
  /** Times ejected, the multiplier of the next ejection time; decays while the backend stays healthy. */
  get ejections(): number {
    return this.v[EJECTIONS]!;
  }
  set ejections(n: number) {
    this.v[EJECTIONS] = n;
  }
  get consecutive5xx(): number {
    return this.v[C5XX]!;
  }
  set consecutive5xx(n: number) {
    this.v[C5XX] = n;
  }
  get consecutiveGateway(): number {
    return this.v[CGW]!;
  }
  set consecutiveGateway(n: number) {
    this.v[CGW] = n;
  }
  /** When the backend last came back (for the multiplier's decay). */
  get returnedAt(): number {
    return fromShared(this.v[RETURNED_AT]!);
  }
  set returnedAt(t: number) {
    this.v[RETURNED_AT] = toShared(t);
  }
  /** Set while active health checks fail (`healthCheck`); independent of passive ejection. */
  get activeDown(): boolean {
    return this.v[ACTIVE_DOWN] !== 0;
  }
  set activeDown(down: boolean) {
    this.v[ACTIVE_DOWN] = down ? 1 : 0;
  }
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
    // The ejection ran out: one worker brings it back (and says so); the others find it done.
    h.cell.lock();
    const mine = h.ejectedUntil !== 0;
    if (mine) {
      h.ejectedUntil = 0;
      h.consecutive5xx = 0;
      h.consecutiveGateway = 0;
      h.returnedAt = now;
    }
    h.cell.unlock();
    if (mine) this.logger.warn('backend returned to rotation', { route: this.route, backend: this.members[i]!.label, ejections: h.ejections });
    return true;
  }

  /** A request the backend served (any status below 500). */
  success(i: number): void {
    const h = this.members[i]!.health;
    if (h === null || this.members[i]!.outlier === null) return;
    // Most requests succeed on a backend with nothing to reset: reads only, no lock.
    if (h.consecutive5xx === 0 && h.consecutiveGateway === 0 && h.ejections === 0) return;
    h.cell.lock();
    h.consecutive5xx = 0;
    h.consecutiveGateway = 0;
    // Healthy for a whole base ejection time since it came back: the next ejection is shorter again (Envoy).
    if (h.ejections > 0 && h.returnedAt > 0 && performance.now() - h.returnedAt > this.members[i]!.outlier!.baseEjectionMs) {
      h.ejections--;
      h.returnedAt = h.ejections > 0 ? performance.now() : 0;
    }
    h.cell.unlock();
  }

  /** A failed request: `gateway` for refused/reset connections, timeouts and 502/503/504. */
  failure(i: number, gateway: boolean): void {
    const m = this.members[i]!;
    const h = m.health;
    const o = m.outlier;
    if (h === null || o === null || h.ejectedUntil !== 0) return;
    h.cell.lock();
    const ms = this.decide(h, o, gateway);
    const reason = h.consecutiveGateway >= o.consecutiveGatewayFailure ? 'consecutiveGatewayFailure' : 'consecutive5xx';
    const ejections = h.ejections;
    h.cell.unlock();
    if (ms === 0) return;
    this.counter.inc({ backend: m.label, route: this.route, reason });
    this.logger.warn('backend ejected', { route: this.route, backend: m.label, reason, ejectionMs: ms, ejections });
  }

  /** Under `h`'s lock: count the failure; eject when it is the last straw. The ejection time, or 0. */
  private decide(h: BackendHealth, o: OutlierDetectionFacet, gateway: boolean): number {
    // Another worker ejected it while this one waited for the lock.
    if (h.ejectedUntil !== 0) return 0;
    h.consecutive5xx++;
    if (gateway) h.consecutiveGateway++;
    else h.consecutiveGateway = 0;
    if (h.consecutive5xx < o.consecutive5xx && h.consecutiveGateway < o.consecutiveGatewayFailure) return 0;
    // Envoy's rule: eject only while the ejected share is below the maximum, so one backend can always be ejected
    // and a set of flapping backends never empties the route.
    const now = performance.now();
    let ejected = 0;
    for (let k = 0; k < this.members.length; k++) {
      const other = this.members[k]!.health;
      if (other !== null && other.ejectedUntil !== 0 && now < other.ejectedUntil) ejected++;
    }
    if ((ejected * 100) / this.members.length >= o.maxEjectionPercent) return 0;
    h.ejections++;
    const ms = Math.min(o.baseEjectionMs * h.ejections, o.maxEjectionMs);
    h.ejectedUntil = now + ms;
    h.returnedAt = 0;
    return ms;
  }
}
