import type { MessagePort } from 'node:worker_threads';
import type { SharedFetches } from '../sdk/shared.ts';

type Result = { value: unknown; at: number };

/** One gateway process without workers: callers asking for a key while its load runs share that load. */
export class LocalFetches implements SharedFetches {
  private readonly inflight = new Map<string, Promise<Result>>();

  fetch<T>(key: string, _want: { maxAgeMs: number; after?: number }, load: () => Promise<T>): Promise<{ value: T; at: number }> {
    const running = this.inflight.get(key);
    if (running) return running as Promise<{ value: T; at: number }>;
    const p = load().then((value) => ({ value, at: Date.now() }));
    this.inflight.set(key, p);
    const clear = (): void => void this.inflight.delete(key);
    p.then(clear, clear);
    return p;
  }
}

/** Messages between a worker's WorkerFetches and the supervisor's FetchCoordinator. */
type ToCoordinator = { t: 'ask'; id: number; key: string; maxAgeMs: number; after: number } | { t: 'done'; key: string; ok: boolean; value?: unknown; at?: number; error?: string };
type ToWorker = { t: 'run'; id: number } | { t: 'result'; id: number; ok: boolean; value?: unknown; at?: number; error?: string };

/** A worker's side: asks the supervisor, which either answers with a result or tells this worker to load it. */
export class WorkerFetches implements SharedFetches {
  private readonly port: MessagePort;
  private next = 0;
  private readonly waiting = new Map<number, { run: () => void; settle: (m: Extract<ToWorker, { t: 'result' }>) => void }>();

  constructor(port: MessagePort) {
    this.port = port;
    port.on('message', (m: ToWorker) => {
      const w = this.waiting.get(m.id);
      if (!w) return;
      if (m.t === 'run') return w.run();
      this.waiting.delete(m.id);
      w.settle(m);
      this.refIfWaiting();
    });
    port.unref();
  }

  /** The port keeps the thread alive only while an answer is awaited (a start may wait on nothing else). */
  private refIfWaiting(): void {
    if (this.waiting.size > 0) this.port.ref();
    else this.port.unref();
  }

  fetch<T>(key: string, want: { maxAgeMs: number; after?: number }, load: () => Promise<T>): Promise<{ value: T; at: number }> {
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, {
        run: () => {
          load().then(
            (value) => {
              this.waiting.delete(id);
              this.refIfWaiting();
              // One timestamp for this result everywhere: `after` comparisons must see it as the same data.
              const at = Date.now();
              this.port.postMessage({ t: 'done', key, ok: true, value, at } satisfies ToCoordinator);
              resolve({ value, at });
            },
            (err: unknown) => {
              this.waiting.delete(id);
              this.refIfWaiting();
              this.port.postMessage({ t: 'done', key, ok: false, error: (err as Error)?.message ?? String(err) } satisfies ToCoordinator);
              reject(err);
            },
          );
        },
        settle: (m) => (m.ok ? resolve({ value: m.value as T, at: m.at ?? Date.now() }) : reject(new Error(m.error))),
      });
      this.refIfWaiting();
      this.port.postMessage({ t: 'ask', id, key, maxAgeMs: want.maxAgeMs, after: want.after ?? 0 } satisfies ToCoordinator);
    });
  }
}

interface Flight {
  runner: number;
  waiters: { worker: number; id: number }[];
}

/**
 * The supervisor's side: one load per key at a time across the workers, its result handed to everyone who asked
 * meanwhile and kept for later askers (see SharedFetches). Failures are not kept. A runner that dies mid-load hands
 * the load to the next waiter.
 */
export class FetchCoordinator {
  private readonly ports = new Map<number, MessagePort>();
  private readonly flights = new Map<string, Flight>();
  private readonly held = new Map<string, Result>();
  /** Loads started, by key (diagnostics). */
  readonly loads = new Map<string, number>();
  private readonly onLoad: (key: string) => void;

  /** `onLoad` is told of each load started (the supervisor counts them on /metrics). */
  constructor(onLoad: (key: string) => void = () => undefined) {
    this.onLoad = onLoad;
  }

  attach(worker: number, port: MessagePort): void {
    this.ports.set(worker, port);
    port.on('message', (m: ToCoordinator) => (m.t === 'ask' ? this.ask(worker, m) : this.done(m.key, m.ok, m.value, m.at, m.error)));
    port.unref();
  }

  detach(worker: number): void {
    this.ports.delete(worker);
    for (const [key, flight] of this.flights) {
      flight.waiters = flight.waiters.filter((w) => w.worker !== worker);
      if (flight.runner !== worker) continue;
      const next = flight.waiters.shift();
      if (!next) this.flights.delete(key);
      else this.run(key, flight, next.worker, next.id);
    }
  }

  private send(worker: number, m: ToWorker): void {
    this.ports.get(worker)?.postMessage(m);
  }

  private run(key: string, flight: Flight, worker: number, id: number): void {
    flight.runner = worker;
    this.loads.set(key, (this.loads.get(key) ?? 0) + 1);
    this.onLoad(key);
    this.send(worker, { t: 'run', id });
  }

  private ask(worker: number, m: Extract<ToCoordinator, { t: 'ask' }>): void {
    const flight = this.flights.get(m.key);
    if (flight) return void flight.waiters.push({ worker, id: m.id });
    const held = this.held.get(m.key);
    if (held && held.at > m.after && Date.now() - held.at <= m.maxAgeMs) return this.send(worker, { t: 'result', id: m.id, ok: true, value: held.value, at: held.at });
    const started: Flight = { runner: worker, waiters: [] };
    this.flights.set(m.key, started);
    this.run(m.key, started, worker, m.id);
  }

  private done(key: string, ok: boolean, value: unknown, given: number | undefined, error: string | undefined): void {
    const flight = this.flights.get(key);
    this.flights.delete(key);
    const at = given ?? Date.now();
    if (ok) this.held.set(key, { value, at });
    for (const w of flight?.waiters ?? []) this.send(w.worker, ok ? { t: 'result', id: w.id, ok, value, at } : { t: 'result', id: w.id, ok, error });
  }
}
