import { spawn } from 'node:child_process';
import type { ChildProcess, StdioOptions } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { StringDecoder } from 'node:string_decoder';
import type { MessagePort } from 'node:worker_threads';
import { ProcessBudgetFull } from '../sdk/processes.ts';
import type { GatewayChild, GatewayProcesses, ProcessSpec } from '../sdk/processes.ts';

/** Live children per budget key, for the whole gateway (one instance: the process's, or the supervisor's). */
class Budgets {
  private readonly used = new Map<string, number>();

  take(key: string, max: number): boolean {
    const n = this.used.get(key) ?? 0;
    if (n >= max) return false;
    this.used.set(key, n + 1);
    return true;
  }

  give(key: string): void {
    const n = (this.used.get(key) ?? 0) - 1;
    if (n > 0) this.used.set(key, n);
    else this.used.delete(key);
  }
}

/** A child that was never started because its budget is full: emits that `error` on the next tick. */
class RefusedChild extends EventEmitter implements GatewayChild {
  readonly pid = undefined;
  readonly stdin = null;
  readonly stdout = null;
  readonly stderr = null;
  readonly stdio = [];

  constructor(max: number) {
    super();
    process.nextTick(() => this.emit('error', new ProcessBudgetFull(max)));
  }

  kill(): boolean {
    return false;
  }
}

/** Children spawned by this thread (a gateway without workers, or the supervisor on its workers' behalf). */
export class LocalProcesses implements GatewayProcesses {
  private readonly budgets = new Budgets();

  spawn(spec: ProcessSpec): GatewayChild {
    return this.start(spec);
  }

  /** `spawn`, typed as the Node child (the supervisor relays its streams). */
  start(spec: ProcessSpec): ChildProcess | RefusedChild {
    const budget = spec.budget;
    if (budget && !this.budgets.take(budget.key, budget.max)) return new RefusedChild(budget.max);
    const stdio: StdioOptions = ['pipe', 'pipe', 'pipe', ...Array<'pipe'>(spec.extraPipes ?? 0).fill('pipe')];
    let child: ChildProcess;
    try {
      child = spawn(spec.file, [...spec.args], { cwd: spec.cwd, env: spec.env, stdio, detached: spec.detached ?? false, windowsHide: true });
    } catch (err) {
      if (budget) this.budgets.give(budget.key);
      throw err;
    }
    if (budget) {
      let given = false;
      const give = (): void => {
        if (given) return;
        given = true;
        this.budgets.give(budget.key);
      };
      child.once('exit', give);
      // A child that could not start emits `error` and no `exit`.
      child.once('error', () => {
        if (child.pid === undefined) give();
      });
    }
    return child;
  }
}

/** Worker -> supervisor. */
type ToHost =
  | { t: 'spawn'; id: number; spec: ProcessSpec }
  | { t: 'in'; id: number; data: string }
  | { t: 'end'; id: number }
  | { t: 'kill'; id: number; signal: NodeJS.Signals }
  | { t: 'destroy'; id: number; fd: number };
/** Supervisor -> worker. */
type ToChild =
  | { t: 'spawn'; id: number; pid: number }
  | { t: 'error'; id: number; message: string; budgetMax?: number }
  | { t: 'out'; id: number; fd: 1 | 2; data: Uint8Array }
  /** `bytes` of stdin relayed earlier were written into the child's pipe (or dropped with it): the worker's credit. */
  | { t: 'wrote'; id: number; bytes: number }
  | { t: 'exit' | 'close'; id: number; code: number | null; signal: NodeJS.Signals | null };

/**
 * The supervisor's side: spawns the children its workers ask for (one budget for the whole gateway), relays their
 * stdio, and when a worker dies kills the children it owned (their process group) and reaps them: a thread that is
 * gone cannot wait for its children, so spawned in a worker they would stay zombies until the process exits.
 */
export class ProcessHost {
  private readonly local = new LocalProcesses();
  private readonly ports = new Map<number, MessagePort>();
  /** Live children by worker, then by the worker's id for them. */
  private readonly owned = new Map<number, Map<number, ChildProcess>>();

  attach(worker: number, port: MessagePort): void {
    this.ports.set(worker, port);
    const children = new Map<number, ChildProcess>();
    this.owned.set(worker, children);
    port.on('message', (m: ToHost) => {
      // A message that arrives after the worker was detached starts nothing (nobody would stop it).
      if (this.owned.get(worker) !== children) return;
      if (m.t === 'spawn') return this.start(worker, children, m.id, m.spec);
      const child = children.get(m.id);
      if (!child) return;
      try {
        if (m.t === 'in') this.write(worker, m.id, child, m.data);
        else if (m.t === 'end') child.stdin?.end();
        else if (m.t === 'kill') child.kill(m.signal);
        else (child.stdio[m.fd] as { destroy?: () => void } | null)?.destroy?.();
      } catch {
        // gone meanwhile
      }
    });
    port.unref();
  }

  /** The worker is gone: its children die with it (and are reaped here when they exit). */
  detach(worker: number): void {
    this.ports.delete(worker);
    const children = this.owned.get(worker);
    this.owned.delete(worker);
    for (const child of children?.values() ?? []) {
      for (const s of child.stdio.slice(3)) (s as { destroy?: () => void } | null)?.destroy?.();
      if (child.exitCode !== null || child.signalCode !== null) continue;
      try {
        if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }
  }

  /** Relay stdin; once the child's pipe took it (or it was dropped), the worker may count it as written. */
  private write(worker: number, id: number, child: ChildProcess, data: string): void {
    const bytes = Buffer.byteLength(data);
    if (child.stdin === null) return this.send(worker, { t: 'wrote', id, bytes });
    child.stdin.write(data, () => this.send(worker, { t: 'wrote', id, bytes }));
  }

  private send(worker: number, m: ToChild): void {
    this.ports.get(worker)?.postMessage(m);
  }

  private start(worker: number, children: Map<number, ChildProcess>, id: number, spec: ProcessSpec): void {
    let child: ChildProcess | RefusedChild;
    try {
      child = this.local.start(spec);
    } catch (err) {
      return this.send(worker, { t: 'error', id, message: (err as Error).message });
    }
    if (child instanceof RefusedChild) {
      child.once('error', (err: ProcessBudgetFull) => this.send(worker, { t: 'error', id, message: err.message, budgetMax: err.max }));
      return;
    }
    const c = child;
    children.set(id, c);
    c.once('spawn', () => this.send(worker, { t: 'spawn', id, pid: c.pid! }));
    c.once('error', (err) => {
      if (c.pid === undefined) children.delete(id);
      this.send(worker, { t: 'error', id, message: err.message });
    });
    c.once('exit', (code, signal) => this.send(worker, { t: 'exit', id, code, signal }));
    c.once('close', (code, signal) => {
      children.delete(id);
      this.send(worker, { t: 'close', id, code, signal });
    });
    c.stdin?.on('error', () => undefined);
    for (const fd of [1, 2] as const) c.stdio[fd]?.on('data', (data: Buffer) => this.send(worker, { t: 'out', id, fd, data: new Uint8Array(data) }));
    for (const s of c.stdio.slice(3)) (s as EventEmitter | null)?.on('error', () => undefined);
  }
}

/** A relayed stdout or stderr: emits what the supervisor forwards, decoded once `setEncoding` was called. */
class RelayedOutput extends EventEmitter {
  private decoder: StringDecoder | undefined;

  setEncoding(encoding: 'utf8'): this {
    this.decoder = new StringDecoder(encoding);
    return this;
  }

  push(data: Uint8Array): void {
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    this.emit('data', this.decoder ? this.decoder.write(buf) : buf);
  }
}

/** Bytes of stdin relayed and not yet written by the supervisor past which `write` returns false (Node's default). */
const STDIN_HIGH_WATER = 64 * 1024;

/**
 * A relayed stdin with a Node stream's back-pressure: `writableLength` counts the bytes the supervisor has not
 * written into the child's pipe yet (it says when, `wrote`), `write` returns false past the high-water mark and
 * `drain` follows when they fall below it. Without it a child that stops reading made the supervisor buffer all that
 * its worker sent.
 */
class RelayedInput extends EventEmitter {
  private readonly child: RelayedChild;
  private readonly id: number;
  private readonly post: (m: ToHost) => void;
  private queued = 0;
  private needDrain = false;

  constructor(child: RelayedChild, id: number, post: (m: ToHost) => void) {
    super();
    this.child = child;
    this.id = id;
    this.post = post;
  }

  get writable(): boolean {
    return !this.child.ended;
  }

  get writableLength(): number {
    return this.queued;
  }

  write(chunk: string): boolean {
    if (this.child.ended) return true;
    this.queued += Buffer.byteLength(chunk);
    this.post({ t: 'in', id: this.id, data: chunk });
    if (this.queued < STDIN_HIGH_WATER) return true;
    this.needDrain = true;
    return false;
  }

  end(): this {
    if (!this.child.ended) this.post({ t: 'end', id: this.id });
    this.child.ended = true;
    return this;
  }

  /** The supervisor wrote `bytes` (or the child is gone: everything). */
  wrote(bytes: number): void {
    this.queued = Math.max(0, this.queued - bytes);
    if (this.needDrain && this.queued < STDIN_HIGH_WATER) {
      this.needDrain = false;
      this.emit('drain');
    }
  }
}

/** A child the supervisor runs for this worker. */
class RelayedChild extends EventEmitter implements GatewayChild {
  pid: number | undefined;
  readonly stdin: RelayedInput;
  readonly stdout = new RelayedOutput();
  readonly stderr = new RelayedOutput();
  readonly stdio: unknown[];
  ended = false;

  constructor(id: number, post: (m: ToHost) => void, extraPipes: number) {
    super();
    const stdin = new RelayedInput(this, id, post);
    this.stdin = stdin;
    const pipes = Array.from({ length: extraPipes }, (_, i) => Object.assign(new EventEmitter(), { destroy: () => post({ t: 'destroy', id, fd: 3 + i }) }));
    this.stdio = [stdin, this.stdout, this.stderr, ...pipes];
    this.kill = (signal: NodeJS.Signals = 'SIGTERM'): boolean => {
      post({ t: 'kill', id, signal });
      return true;
    };
  }

  kill: (signal?: NodeJS.Signals) => boolean;
}

/** A worker's side: children are spawned by the supervisor (ProcessHost) and relayed over `port`. */
export class WorkerProcesses implements GatewayProcesses {
  private readonly port: MessagePort;
  private next = 0;
  private readonly children = new Map<number, RelayedChild>();

  constructor(port: MessagePort) {
    this.port = port;
    port.on('message', (m: ToChild) => {
      const child = this.children.get(m.id);
      if (!child) return;
      switch (m.t) {
        case 'spawn':
          child.pid = m.pid;
          child.emit('spawn');
          return;
        case 'error':
          if (child.pid === undefined) this.forget(m.id);
          child.emit('error', m.budgetMax !== undefined ? new ProcessBudgetFull(m.budgetMax) : new Error(m.message));
          return;
        case 'out':
          (m.fd === 1 ? child.stdout : child.stderr).push(m.data);
          return;
        case 'wrote':
          child.stdin.wrote(m.bytes);
          return;
        case 'exit':
          child.ended = true;
          child.emit('exit', m.code, m.signal);
          return;
        case 'close':
          this.forget(m.id);
          child.stdin.wrote(Infinity);
          child.emit('close', m.code, m.signal);
          return;
      }
    });
    port.unref();
  }

  /** The port keeps the thread alive while a child runs, as a child of its own would. */
  private forget(id: number): void {
    this.children.delete(id);
    if (this.children.size === 0) this.port.unref();
  }

  spawn(spec: ProcessSpec): GatewayChild {
    const id = ++this.next;
    const post = (m: ToHost): void => this.port.postMessage(m);
    const child = new RelayedChild(id, post, spec.extraPipes ?? 0);
    this.children.set(id, child);
    this.port.ref();
    post({ t: 'spawn', id, spec: { ...spec, env: { ...spec.env } } });
    return child;
  }
}
