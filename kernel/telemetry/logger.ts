import type { Logger } from '../sdk/index.ts';
import { escapeControls, LogBytes, textValue } from './log-bytes.ts';
import { readableStack } from './readable-stack.ts';

export { textValue };

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * Where log lines go. Lines are collected as bytes in one reused buffer and written once per event-loop turn, one
 * write per batch, so logging never blocks a request and a line leaves no strings behind (issue 15). The default
 * target is stdout, given Buffers; a custom `write` (tests, `--validate`) gets each batch as a string.
 */
export class LogSink {
  private readonly bytes = new LogBytes();
  private scheduled = false;
  private readonly write: ((chunk: string) => void) | undefined;
  private readonly writeBytes: (chunk: Buffer, lines: number) => void;
  private readonly pending: () => number;
  /** Lines in the buffer, and lines dropped since the stream last kept up. */
  private lines = 0;
  private dropped = 0;
  /** The line that says how many were dropped, in the log's format (set by the root ProcessLogger). */
  notice: ((dropped: number) => string) | undefined = undefined;

  /**
   * `pending`: bytes the stream holds that its reader has not taken (stdout's `writableLength`). A log shipper that
   * stalls, or a pipe nobody reads, would otherwise make them grow with every request until the process runs out
   * of memory: past MAX_PENDING, batches are dropped and counted instead.
   */
  constructor(write?: (chunk: string) => void, writeBytes?: (chunk: Buffer) => void, pending?: () => number) {
    this.write = write;
    this.writeBytes = writeBytes ?? writeStdout;
    this.pending = pending ?? (writeBytes === undefined ? stdoutPending : () => 0);
  }

  /** A sink that hands its batches to `write` as Buffers. */
  static toBytes(write: (chunk: Buffer) => void): LogSink {
    return new LogSink(undefined, write);
  }

  push(line: string): void {
    this.bytes.utf8(line);
    this.lines++;
    this.schedule();
  }

  /** The buffer a line is written into in place; `lineDone()` after. */
  get line(): LogBytes {
    return this.bytes;
  }

  lineDone(): void {
    this.lines++;
    this.schedule();
  }

  private schedule(): void {
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  readonly flush = (): void => {
    this.scheduled = false;
    if (this.bytes.len === 0) return;
    if (this.write === undefined) {
      if (this.pending() >= MAX_PENDING) {
        this.dropped += this.lines;
        logDrops.lines += this.lines;
        unsaid += this.lines;
        this.lines = 0;
        this.bytes.clear();
        return;
      }
      if (this.dropped > 0) {
        this.writeBytes(Buffer.from(this.notice?.(this.dropped) ?? `log lines dropped: ${this.dropped}\n`), 1);
        unsaid -= this.dropped;
        this.dropped = 0;
      }
      const lines = this.lines;
      this.lines = 0;
      this.writeBytes(this.bytes.take(), lines);
      return;
    }
    this.lines = 0;
    const chunk = this.bytes.buf.toString('utf8', 0, this.bytes.len);
    this.bytes.take();
    this.write(chunk);
  };
}

/** Log lines this thread dropped because its output did not keep up (`switchyard_log_lines_dropped_total`). */
export const logDrops = { lines: 0 };

/** Set once stdout failed (EPIPE: its reader went away): later lines are dropped and counted, as no one can read them. */
let stdoutFailed = false;
let stdoutWatched = false;
/** Told once when stdout fails (`keepServingWithoutStdout`). */
let onStdoutFailure: ((err: NodeJS.ErrnoException) => void) | undefined;

/**
 * Without an 'error' listener, a write to a stdout whose reader left (a log shipper that died, a closed pipe, `| head`)
 * is an unhandled EPIPE that ends the process: the gateway would stop serving for its logs.
 */
function watchStdout(): void {
  if (stdoutWatched) return;
  stdoutWatched = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (stdoutFailed) return;
    stdoutFailed = true;
    onStdoutFailure?.(err);
  });
}

/** Lines dropped (the output did not keep up) that no `log lines dropped` line has counted yet. */
let unsaid = 0;
/** Lines handed to stdout that it has not written yet (a stalled reader holds them). */
let unwritten = 0;

/** The default log output. */
function writeStdout(chunk: Buffer, lines: number): void {
  if (stdoutFailed) return;
  watchStdout();
  unwritten += lines;
  process.stdout.write(chunk, () => void (unwritten -= lines));
}

/**
 * Resolves once stdout and stderr have written everything they were given. With `until` (a stopping gateway's
 * deadline, ms since the epoch), at that time at the latest: a reader that stopped reading would otherwise keep the
 * process from exiting for as long as it stalls (ADR 0132). Lines left behind are counted on stderr.
 */
export function outputWritten(until?: number): Promise<void> {
  return new Promise((resolve) => {
    let pending = 2;
    let timer: NodeJS.Timeout | undefined;
    const done = (): void => {
      if (--pending === 0) {
        clearTimeout(timer);
        resolve();
      }
    };
    process.stdout.write('', done);
    process.stderr.write('', done);
    if (until === undefined) return;
    timer = setTimeout(() => {
      const lost = unwritten + unsaid;
      if (lost > 0) process.stderr.write(`switchyard: ${lost} log lines dropped at exit: stdout did not take them before the deadline\n`);
      resolve();
    }, Math.max(0, until - Date.now()));
  });
}

/** Bytes stdout holds unread; a failed stdout holds them for ever (its lines are dropped and counted). */
function stdoutPending(): number {
  return stdoutFailed ? Infinity : process.stdout.writableLength;
}

/**
 * A serving gateway outlives its log reader: from stdout's first failure its lines are dropped (and counted),
 * `onFail` says so once (on stderr), and stderr's own failures are ignored.
 */
export function keepServingWithoutStdout(onFail: (err: NodeJS.ErrnoException) => void): void {
  onStdoutFailure = onFail;
  watchStdout();
  process.stderr.on('error', () => undefined);
}

/** Bytes the log stream may hold unread before lines are dropped (about 60,000 access-log lines). */
const MAX_PENDING = 16 * 1024 * 1024;

export interface LoggerSettings {
  level: LogLevel;
  format: 'json' | 'text';
  /** Replaces the config's secret strings in every line (ADR 0017); the access log does not go through it. */
  scrub?: ((line: string) => string) | undefined;
}

let lastMs = -1;
let lastIso = '';
let lastSecond = -1;
/** `2026-01-02T03:04:05.` of `lastSecond`. */
let secondPrefix = '';

/**
 * The current time as ISO 8601. Under load nearly every request sees a new millisecond, and `toISOString()` costs
 * about 1.4 µs here: the date and time are formatted once per second and the milliseconds appended.
 */
export function isoNow(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    const ms = now % 1000;
    const second = now - ms;
    if (second !== lastSecond) {
      lastSecond = second;
      const iso = new Date(second).toISOString();
      secondPrefix = iso.slice(0, iso.lastIndexOf('.') + 1);
    }
    lastIso = secondPrefix + (ms < 10 ? '00' : ms < 100 ? '0' : '') + ms + 'Z';
  }
  return lastIso;
}

/** Formats a line as JSON or `key=value` text. Shared by the process logger and the access log. */
export function formatLine(format: 'json' | 'text', level: LogLevel, message: string, fields: Record<string, unknown> | undefined): string {
  const time = isoNow();
  if (format === 'json') {
    const record: Record<string, unknown> = { time, level, msg: message };
    if (fields) for (const k in fields) if (fields[k] !== undefined) record[k] = fields[k] instanceof Error ? (fields[k] as Error).message : fields[k];
    return `${JSON.stringify(record)}\n`;
  }
  let line = `${time} ${level.toUpperCase().padEnd(5)} ${escapeControls(message)}`;
  if (fields) for (const k in fields) if (fields[k] !== undefined) line += ` ${k}=${textValue(fields[k])}`;
  return `${line}\n`;
}

/** The process logger. Settings can change on reload; children share them. */
export class ProcessLogger implements Logger {
  private readonly sink: LogSink;
  private readonly settings: LoggerSettings;
  private readonly fields: Record<string, unknown> | undefined;

  constructor(sink: LogSink, settings: LoggerSettings, fields?: Record<string, unknown>) {
    this.sink = sink;
    this.settings = settings;
    this.fields = fields;
    // The root logger words the sink's dropped-lines notice, in the format the log has when it is written.
    sink.notice ??= (dropped) => formatLine(this.settings.format, 'warn', 'log lines dropped: the log output did not keep up', { dropped });
  }

  configure(settings: Partial<LoggerSettings>): void {
    Object.assign(this.settings, settings);
  }

  isEnabled(level: LogLevel): boolean {
    return RANK[level] >= RANK[this.settings.level];
  }

  private log(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    if (!this.isEnabled(level)) return;
    let merged = this.fields ? { ...this.fields, ...fields } : fields;
    // A logged stack names the TypeScript sources, also from the installed package's bundle (ADR 0065).
    if (typeof merged?.stack === 'string') merged = { ...merged, stack: readableStack(merged.stack) };
    const line = formatLine(this.settings.format, level, message, merged);
    this.sink.push(this.settings.scrub ? this.settings.scrub(line) : line);
  }

  debug(message: string, fields?: Record<string, unknown>): void {
    this.log('debug', message, fields);
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this.log('info', message, fields);
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.log('warn', message, fields);
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.log('error', message, fields);
  }
  child(fields: Record<string, unknown>): ProcessLogger {
    return new ProcessLogger(this.sink, this.settings, this.fields ? { ...this.fields, ...fields } : fields);
  }
  get format(): 'json' | 'text' {
    return this.settings.format;
  }
}
