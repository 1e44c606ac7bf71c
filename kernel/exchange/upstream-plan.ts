import type { PolicyInstance } from '../sdk/index.ts';

/**
 * Envoy's retry budget with its defaults (ADR 0125): the requests retrying at once on one route's backend are at most
 * 20% of its requests in flight, never fewer than 3. A failing upstream then gets about 1.2 times its traffic, not
 * `attempts + 1` times. A request holds its slot from its first retry until its answer (or failure) is in. Retries
 * to another backend of the route (ADR 0023) take load away from the failing one and are not counted.
 */
export class RetryBudget {
  /** Requests in flight through the retry path. */
  active = 0;
  /** Those of them retrying. */
  retrying = 0;

  /** Take a retry slot; false when the budget is spent (the request then ends with what it has). */
  take(): boolean {
    if (this.retrying >= Math.max(3, Math.floor(this.active / 5))) return false;
    this.retrying++;
    return true;
  }
}

/** The `retry` policy, compiled: retries after the first try, statuses that trigger one, pause between tries. */
export interface FailoverPlan {
  readonly attempts: number;
  readonly codes: ReadonlySet<number>;
  readonly backoffMs: number;
  /** The retry budget of a `retry` policy for retries to the same backend; none for default failover. */
  readonly budget?: RetryBudget;
  /**
   * The backend's default failover (ADR 0039) rather than a `retry` policy: each backend of the route is tried at
   * most once, and one that failed is skipped for a while (`Cooldown`).
   */
  readonly once?: boolean;
  /**
   * On the forwarder's plan of a route whose pipeline sends a failed request to another backend (ADR 0023, 0039): the
   * attempts, numbered across backends, after which it still does. Past them nothing sends the body again.
   */
  readonly failoverAttempts?: number;
}

/** Until when (performance.now() ms) a backend that failed under default failover is skipped; 0: not cooling. */
export interface Cooldown {
  until: number;
}

/** How the upstream call of one (route, backend) pair behaves: compiled once from the policies' facets. */
export interface UpstreamPlan {
  /** Per-attempt deadline in ms from the `timeout` policy (a timer per attempt); 0 means none. */
  readonly attemptTimeoutMs: number;
  /**
   * Default deadline for the response headers, per attempt (ADR 0019): undici's own parser timer, so it costs no
   * timer or closure of ours. 0 when the route or backend sets a `timeout` policy, or the default is off.
   */
  readonly headersTimeoutMs: number;
  /** Longest silence inside the response body (undici `bodyTimeout`); 0 means none. */
  readonly idleTimeoutMs: number;
  readonly retry: FailoverPlan | null;
  /** Policies with an `onUpstream` hook, in phase order. */
  readonly upstreamHooks: readonly PolicyInstance[] | null;
}

export const EMPTY_PLAN: UpstreamPlan = Object.freeze({ attemptTimeoutMs: 0, headersTimeoutMs: 0, idleTimeoutMs: 0, retry: null, upstreamHooks: null });

/** Largest request body kept in memory so a retry can send it again (BEHAVIOUR.md: 64 KiB). */
export const RETRY_BUFFER_LIMIT = 64 * 1024;
