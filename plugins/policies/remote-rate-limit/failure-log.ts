import type { Logger } from 'switchyard/sdk';

/** How long the failures after a logged one are counted before their summary is logged. */
export const FAILURE_LOG_INTERVAL_MS = 10_000;

/**
 * Warnings for a rate limit service that fails (ADR 0173): the first at once, then the failures of the next
 * `intervalMs` in one line with their exact count and the last error, while the service keeps failing. A service
 * down under load would otherwise write one line per request. Each request's access log still says `rateLimit=error`.
 */
export class FailureLog {
  private suppressed = 0;
  private last: Record<string, unknown> = {};
  private timer: NodeJS.Timeout | undefined;

  private readonly logger: Logger;
  private readonly intervalMs: number;

  constructor(logger: Logger, intervalMs = FAILURE_LOG_INTERVAL_MS) {
    this.logger = logger;
    this.intervalMs = intervalMs;
  }

  failed(message: string, fields: Record<string, unknown>): void {
    if (this.timer) {
      this.suppressed++;
      this.last = { message, ...fields };
      return;
    }
    this.logger.warn(message, fields);
    this.openWindow();
  }

  private openWindow(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.suppressed === 0) return;
      // The count is exact; the fields are the last failure's.
      this.logger.warn(`rate limit service calls failed ${this.suppressed} more times in ${this.intervalMs / 1000}s`, { failures: this.suppressed, ...this.last });
      this.suppressed = 0;
      // Still failing: the next summary in another interval, not a line per request.
      this.openWindow();
    }, this.intervalMs);
    // Pending summaries never keep the process alive.
    this.timer.unref();
  }
}
