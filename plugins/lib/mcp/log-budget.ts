/** Log lines a second one source (a stdio process, a target connection) may write about what it does wrong. */
export const LOG_LINES_PER_SECOND = 100;

/**
 * At most LOG_LINES_PER_SECOND log lines a second for one source that may cause them as fast as it can (ADR 0134: a
 * stdio server writing stderr in a loop made 150 MB of log a second). Lines past it are counted, and `onLeftOut`
 * reports the count when the second ends (or at `flush`).
 */
export class LogBudget {
  private readonly onLeftOut: (count: number) => void;
  private window = -Infinity;
  private used = 0;
  private leftOut = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(onLeftOut: (count: number) => void) {
    this.onLeftOut = onLeftOut;
  }

  /** Whether one more line may be logged now; one that may not is counted. */
  take(): boolean {
    const now = performance.now();
    if (now - this.window >= 1000) {
      this.flush();
      this.window = now;
      this.used = 0;
    }
    if (this.used < LOG_LINES_PER_SECOND) {
      this.used++;
      return true;
    }
    if (this.leftOut++ === 0) {
      this.timer = setTimeout(() => this.flush(), Math.max(0, this.window + 1000 - now));
      this.timer.unref();
    }
    return false;
  }

  /** Report the lines left out since the last report, if any. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.leftOut === 0) return;
    const count = this.leftOut;
    this.leftOut = 0;
    this.onLeftOut(count);
  }
}
