/**
 * Child processes owned by the gateway (`ctx.processes`), for plugins that run local programs (the `stdio` MCP
 * transport). With `config.workers: N` the supervisor thread spawns them on a worker's behalf and relays their
 * stdio, so a worker that dies cannot leave them behind: the supervisor kills them and reaps them (a thread that is
 * gone cannot `wait` for its children; they would stay zombies until the process exits). An optional budget counts
 * live children for the whole gateway, across workers (ADR 0056).
 */

/** How to start a child. */
export interface ProcessSpec {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  /** The whole environment of the child. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Pipes beyond stdin, stdout and stderr (fd 3 onwards), created as `'pipe'`. */
  readonly extraPipes?: number;
  /** Start it in a process group of its own (POSIX `detached`). */
  readonly detached?: boolean;
  /**
   * At most `max` live children under `key` for the whole gateway (every worker counts into the same budget). Past
   * it the child is not started: it emits `error` with a {@link ProcessBudgetFull}. A slot is taken before the
   * spawn and given back when the child exits.
   */
  readonly budget?: { readonly key: string; readonly max: number };
}

/** The `error` of a child refused because its budget is full (`ProcessSpec.budget`). */
export class ProcessBudgetFull extends Error {
  readonly max: number;
  constructor(max: number) {
    super(`at the limit of ${max} running processes`);
    this.name = 'ProcessBudgetFull';
    this.max = max;
  }
}

/** Whether `err` is a {@link ProcessBudgetFull} (by name: a plugin may carry its own copy of the SDK). */
export function isProcessBudgetFull(err: unknown): err is ProcessBudgetFull {
  return err instanceof Error && err.name === 'ProcessBudgetFull' && typeof (err as { max?: unknown }).max === 'number';
}

/**
 * A child's stdin. Writes are accepted and buffered (the supervisor relays them under workers); `write` returns false
 * past the high-water mark and `drain` follows once the child has taken enough, as with a Node stream.
 */
export interface ChildInput {
  readonly writable: boolean;
  /**
   * Bytes written and not yet taken by the child's pipe (Node's `Writable.writableLength`; under workers, the bytes
   * the supervisor has not written yet). A child that stops reading makes it grow: a caller bounds it.
   */
  readonly writableLength: number;
  write(chunk: string): boolean;
  end(): unknown;
  once(event: 'drain', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** A child's stdout or stderr. */
export interface ChildOutput {
  setEncoding(encoding: 'utf8'): unknown;
  on(event: 'data', listener: (chunk: string) => void): unknown;
}

/** One extra pipe (fd 3 onwards): only closed by the gateway (a lifeline the child watches, say). */
export interface ChildPipe {
  on(event: 'error', listener: (err: Error) => void): unknown;
  destroy(): unknown;
}

/**
 * A started child, shaped as the subset of Node's `ChildProcess` plugins use: `spawn` (then `pid` is set) or
 * `error` (it did not start, or its budget is full), then `exit` and `close` (stdio closed) with the exit code or
 * signal. `pid` is a real process id: signal its process group with `process.kill(-pid, signal)`.
 */
export interface GatewayChild {
  readonly pid?: number | undefined;
  readonly stdin: ChildInput | null;
  readonly stdout: ChildOutput | null;
  readonly stderr: ChildOutput | null;
  readonly stdio: readonly unknown[];
  kill(signal?: NodeJS.Signals): boolean;
  once(event: 'spawn', listener: () => void): unknown;
  once(event: 'exit' | 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
  once(event: 'error', listener: (err: Error) => void): unknown;
}

/** The gateway's process starter (`CompileContext.processes`). */
export interface GatewayProcesses {
  spawn(spec: ProcessSpec): GatewayChild;
}
