import { McpDeadlineError, formatMs } from '../../lib/mcp/deadlines.ts';

/** The JSON-RPC code and HTTP status of a target failure the client is told about. */
export interface FailureKind {
  readonly code: number;
  readonly httpStatus: number;
}

/** Most failures: the target failed (-32603, 500). */
export const TARGET_FAILED: FailureKind = { code: -32603, httpStatus: 500 };
/** The target did not start within its `startupTimeout` (-32603, 504). */
export const TARGET_TIMED_OUT: FailureKind = { code: -32603, httpStatus: 504 };
/** The target is at a limit (`maxProcesses`): try later (-32000, 503). */
export const TARGET_BUSY: FailureKind = { code: -32000, httpStatus: 503 };

/** An error that names the target it concerns (SPEC: "a target that cannot start or answer is named"). */
export class TargetError extends Error {
  readonly target: string;
  /** The message without the target prefix. */
  readonly reason: string;
  readonly kind: FailureKind;
  constructor(target: string, prefix: string, reason: string, kind: FailureKind = TARGET_FAILED) {
    super(`${prefix} ${reason}`);
    this.name = 'TargetError';
    this.target = target;
    this.reason = reason;
    this.kind = kind;
  }
}

/** The target did not start in time; `phase` says what it was doing. */
export class StartupExpired extends Error {}

export const reasonOf = (err: unknown): string => (err instanceof TargetError ? err.reason : ((err as Error)?.message ?? String(err)));

/** The upstream said its session is gone (HTTP 404): re-initialize and retry once. */
export class SessionGone extends Error {}

/**
 * The target no longer knows our session: 404 (the spec), or a 400 that says so (SDK-based servers such as
 * server-everything answer an unknown session id with 400 "No valid session ID provided").
 */
export function sessionGone(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 404 || (code === 400 && /session/i.test((err as Error).message));
}

/** The deadline error in `err` or its causes (an SDK transport may wrap what the fetch adapter threw). */
export function deadlineIn(err: unknown): McpDeadlineError | undefined {
  let e = err as { cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 4; depth++, e = e.cause as typeof e) if (e instanceof McpDeadlineError) return e;
  return undefined;
}

/**
 * The start-up deadline of one start: every step of the start races `expired`, which rejects when the deadline
 * passes, naming the step the target was in.
 */
export class StartDeadline {
  phase = 'connect';
  readonly expired: Promise<never>;
  private readonly timer: NodeJS.Timeout;

  constructor(ms: number) {
    let fire!: (err: Error) => void;
    this.expired = new Promise<never>((_, reject) => (fire = reject));
    this.expired.catch(() => undefined);
    this.timer = setTimeout(() => {
      const what = this.phase === 'initialize' ? 'it did not answer `initialize`' : `it did not ${this.phase}`;
      fire(new StartupExpired(`${what} within ${formatMs(ms)} (startupTimeout)`));
    }, ms);
  }

  /** `step`, unless the deadline passes first. */
  race<T>(step: Promise<T> | T, phase?: string): Promise<T> {
    if (phase) this.phase = phase;
    return Promise.race([Promise.resolve(step), this.expired]);
  }

  done(): void {
    clearTimeout(this.timer);
  }
}

export { formatMs };
