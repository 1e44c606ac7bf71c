import { randomBytes } from 'node:crypto';
import { MessageChannel, Worker } from 'node:worker_threads';
import { AdminServers } from '../admin/admin-servers.ts';
import { gatewayEndpoints } from '../admin/gateway-endpoints.ts';
import type { Readiness } from '../admin/gateway-endpoints.ts';
import type { AdminUiConfig } from '../compile/snapshot.ts';
import { newSharedArena, releaseOwner } from '../resources/shared-cells.ts';
import { FetchCoordinator } from '../resources/shared-fetches.ts';
import { KeptEvents } from '../resources/shared-events.ts';
import { ProcessHost } from '../resources/child-processes.ts';
import type { LogSink } from '../telemetry/logger.ts';
import { ProcessLogger } from '../telemetry/logger.ts';
import { MetricsRegistry } from '../telemetry/metrics.ts';
import { registerProcessMetrics } from '../telemetry/process-metrics.ts';
import type { ConfigInput } from './gateway.ts';
import { configName, readConfigInput } from './config-input.ts';
import { askWorker, newSlot, restartDelay, watchSlots, workerEnv } from './worker-slot.ts';
import type { Slot, WorkerQuestion } from './worker-slot.ts';
import { WorkerAnswers } from './worker-answers.ts';
import type { FromWorker, ToWorker, WorkerData, WorkerStatics } from './worker-protocol.ts';
import { WORKER_DATA_KEY } from './worker-protocol.ts';
import { WORKER_THREAD_ARG } from './worker-mark.ts';
import { WorkerStartError } from './worker-count.ts';
import { RESTART_ONLY_CHANGED } from './restart-only.ts';
import { ReloadQueue } from './reload-queue.ts';
import type { Refusal, Staged } from './reload-queue.ts';

export { WorkerStartError, workerCountOf } from './worker-count.ts';

export interface SupervisorOptions {
  /** The module each worker thread runs: the distribution's entry (it recognises `workerData` and serves). */
  readonly entry: string | URL;
  readonly config: ConfigInput;
  readonly count: number;
  readonly sink: LogSink;
  readonly watch?: boolean;
  /**
   * Restart backoff: first delay, doubled per quick crash (or failed restart) up to the cap; a worker that ran
   * `stableMs` (default 30 s) before it crashed restarts after the first delay; a restart that does not serve within
   * `startMs` (default 120 s, a reload's compile bound) is terminated and counts as failed.
   */
  readonly restartMs?: { readonly initial: number; readonly max: number; readonly stableMs?: number; readonly startMs?: number };
  /**
   * A worker is pinged every `intervalMs`; one that leaves `misses` pings in a row unanswered (its event loop is
   * stuck: an endless loop in a plugin) is terminated and restarted. Default every 5 s, 6 misses (30 s).
   */
  readonly liveness?: { readonly intervalMs: number; readonly misses: number };
}

/**
 * `config.workers: N` (ADR 0033): N worker threads, each a whole gateway listening on every bind with SO_REUSEPORT,
 * and this supervisor on the main thread. It restarts a worker that dies (with backoff), reloads all of them
 * together (each compiles the new config; it goes live only if every one accepted it), drains them all on stop,
 * and serves the admin endpoints for the whole gateway (their answers: worker-answers.ts; a worker thread's slot:
 * worker-slot.ts).
 */
export class Supervisor {
  private readonly o: SupervisorOptions;
  private readonly log: ProcessLogger;
  private readonly registry = new MetricsRegistry();
  private readonly admin: AdminServers;
  private readonly slots: Slot[] = [];
  private readonly arena = newSharedArena();
  /** Names the workers' `SharedEvents` channels: another supervisor in this process (tests) hears none of them. */
  private readonly scope = `switchyard:${randomBytes(8).toString('hex')}`;
  /** Facts the workers tell each other that a worker started later must know too (an MCP session ended). */
  private readonly kept = new KeptEvents(this.scope);
  /** Loads shared by the workers; each counted by kind (`file`: a config-named file, `jwt`: a JWKS URL). */
  private readonly fetches = new FetchCoordinator((key) =>
    this.registry.counter('switchyard_shared_loads_total', 'Loads made once for all workers (files the config names, remote JWKS), by kind.').inc({ kind: key.slice(0, key.indexOf(':')) }),
  );
  /** Child processes (stdio MCP targets) run for the workers: one budget for the gateway, reaped here. */
  private readonly processes = new ProcessHost();
  /** The generation the workers serve: 1 at start, one more per applied reload (a restarted worker starts at it). */
  private generation = 1;
  /** `restartOnlyKey` of the config the workers started with. */
  private restartOnly = '';
  private workerEnv: NodeJS.ProcessEnv = process.env;
  private nextId = 0;
  /** The live config's `drainTimeout` (the CLI bounds its exit by it too). */
  drainTimeoutMs = 10_000;
  private stopping: Promise<void> | undefined;
  /** Reloads one at a time; the config file and the files the live config read watched (ADR 0184). */
  private readonly reloads: ReloadQueue;
  private livenessTimer: NodeJS.Timeout | undefined;
  /** The admin endpoints' answers for all the workers. */
  private readonly answers: WorkerAnswers;

  constructor(options: SupervisorOptions) {
    this.o = options;
    this.log = new ProcessLogger(options.sink, { level: 'info', format: 'text' });
    this.admin = new AdminServers(this.log);
    const c = options.config;
    this.reloads = new ReloadQueue(
      {
        log: this.log,
        metrics: this.registry,
        configName: configName(c),
        read: () => readConfigInput(c),
        stopping: () => this.stopping !== undefined,
        unchanged: () => this.retryBinds(),
        apply: (text) => this.apply(text),
      },
      'file' in c && options.watch !== false ? c.file : undefined,
    );
    this.answers = new WorkerAnswers({
      slots: this.slots,
      count: options.count,
      registry: this.registry,
      stopping: () => this.stopping !== undefined,
      ask: (slot, message, timeoutMs) => this.ask(slot, message, timeoutMs),
    });
    this.registry.gauge('switchyard_workers', 'Worker threads configured (`config.workers`).', () => options.count);
    this.registry.gauge('switchyard_workers_running', 'Worker threads started and serving.', () => this.slots.filter((s) => s.started).length);
    this.registry.gauge('switchyard_process_resident_memory_bytes', 'Resident set size of the process (also `process_resident_memory_bytes`).', () => process.memoryUsage.rss());
    this.registry.onClose(registerProcessMetrics(this.registry));
    this.restarts();
  }

  private restarts(): ReturnType<MetricsRegistry['counter']> {
    return this.registry.counter('switchyard_worker_restarts_total', 'Worker threads restarted after they died.');
  }

  /** Start every worker; resolves once all serve, rejects (everything stopped) when one cannot start. */
  async start(): Promise<void> {
    const text = await readConfigInput(this.o.config);
    this.reloads.live = text;
    this.workerEnv = workerEnv(configName(this.o.config), text);
    for (let i = 0; i < this.o.count; i++) {
      this.slots.push(newSlot(i, text));
    }
    let first: Extract<FromWorker, { t: 'started' }>;
    try {
      const started = await Promise.all(this.slots.map((slot) => this.spawn(slot)));
      first = started[0]!;
    } catch (err) {
      await this.abortStart();
      throw err;
    }
    this.drainTimeoutMs = first.drainTimeoutMs;
    this.answers.ui = first.statics.adminUi;
    this.restartOnly = first.statics.restartOnly;
    this.log.configure({ level: first.statics.logging.level, format: first.statics.logging.format });
    try {
      // Plugin endpoints (the `/keys` API) are answered by a worker: the supervisor compiles no plugins.
      await this.admin.start(first.addrs, { ...gatewayEndpoints(this.answers), adminPlugins: (prefix) => (req) => this.answers.pluginAdmin(prefix, req) });
    } catch (err) {
      await this.abortStart();
      throw err;
    }
    this.reloads.watch();
    this.reloads.follow(first.statics.namedFiles);
    this.watchLiveness();
    this.log.info('switchyard ready', { config: configName(this.o.config), workers: this.o.count, binds: first.binds.join(','), pid: process.pid });
  }

  /** Ping every running worker (for its metrics); terminate one that stopped answering (its exit restarts it). */
  private watchLiveness(): void {
    const ask = (slot: Slot, timeoutMs: number) => this.ask(slot, { t: 'query', what: 'metrics' }, timeoutMs);
    this.livenessTimer = watchSlots(this.slots, this.o.liveness ?? { intervalMs: 5_000, misses: 6 }, ask, () => this.stopping !== undefined, this.log);
  }

  /** Start the worker of `slot` on `slot.text`; resolves with its `started` message. */
  private spawn(slot: Slot): Promise<Extract<FromWorker, { t: 'started' }>> {
    const channel = new MessageChannel();
    const processes = new MessageChannel();
    const data: WorkerData = {
      index: slot.index,
      text: slot.text,
      name: configName(this.o.config),
      base: 'file' in this.o.config ? this.o.config.file : undefined,
      arena: this.arena,
      fetchPort: channel.port2,
      processPort: processes.port2,
      generation: this.generation,
      scope: this.scope,
      kept: this.kept.forWorker(),
      watchFiles: 'file' in this.o.config && this.o.watch !== false,
    };
    const worker = new Worker(this.o.entry, { workerData: { [WORKER_DATA_KEY]: data }, transferList: [channel.port2, processes.port2], env: this.workerEnv, argv: [WORKER_THREAD_ARG] });
    slot.worker = worker;
    slot.started = false;
    slot.misses = 0;
    // Read now: the Worker object forgets it when the thread exits.
    const threadId = worker.threadId;
    this.fetches.attach(slot.index, channel.port1);
    this.processes.attach(slot.index, processes.port1);
    return new Promise((resolve, reject) => {
      let settled = false;
      worker.on('message', (m: FromWorker) => {
        if (m.t === 'reply') {
          const p = slot.pending.get(m.id);
          slot.pending.delete(m.id);
          p?.resolve(m.value);
        } else if (m.t === 'tail') {
          this.answers.tailed(m.events, m.dropped);
        } else if (m.t === 'readiness') {
          slot.readiness = { ready: m.ready, pending: m.pending };
        } else if (m.t === 'started') {
          slot.started = true;
          slot.readiness = { ...m.readiness };
          if (this.answers.tailListener) worker.postMessage({ t: 'tail', on: true } satisfies ToWorker);
          slot.startedAt = Date.now();
          settled = true;
          resolve(m);
        } else if (m.t === 'failed') {
          settled = true;
          reject(new WorkerStartError(m.error, m.invalidConfig));
        }
      });
      worker.on('error', (err) => {
        this.log.error('worker failed', { worker: slot.index, error: err });
        if (!settled) {
          settled = true;
          reject(err);
        }
      });
      worker.on('exit', (code) => {
        // A shared cell it held locked (terminated mid-section) would stop every other worker for good.
        releaseOwner(this.arena, threadId);
        this.fetches.detach(slot.index);
        channel.port1.close();
        // Its stdio MCP children die with it, and are reaped here (ADR 0056).
        this.processes.detach(slot.index);
        processes.port1.close();
        const wasStarted = slot.started;
        slot.started = false;
        slot.readiness = { ready: false, pending: 'starting' };
        this.answers.retire(slot);
        slot.worker = undefined;
        for (const p of slot.pending.values()) p.reject(new Error(`worker ${slot.index} exited`));
        slot.pending.clear();
        if (!settled) {
          settled = true;
          reject(new WorkerStartError(`worker ${slot.index} exited (code ${code}) before it served`, false));
        }
        // A worker that served, or one of its restarts that failed, is tried again; a first start that failed
        // fails the gateway's start instead. Here, once the thread is gone: a failed restart reports itself
        // (`failed`) before its thread exits.
        if (this.stopping || !(wasStarted || slot.restarting)) return;
        this.scheduleRestart(slot, code, wasStarted);
      });
    });
  }

  /** Restart the worker of `slot` after a delay that doubles per quick crash or failed restart. */
  private scheduleRestart(slot: Slot, code: number, served: boolean): void {
    const { startMs = 120_000 } = this.o.restartMs ?? {};
    const delay = restartDelay(slot, served, this.o.restartMs ?? { initial: 200, max: 10_000 });
    this.log.error('worker exited; restarting it', { worker: slot.index, code, inMs: delay });
    slot.restarting = true;
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      if (this.stopping) return;
      slot.text = this.reloads.live!;
      this.restarts().inc();
      const started = this.spawn(slot);
      // A start that hangs (a plugin's compile waiting for ever) would leave the slot starting for good.
      const worker = slot.worker;
      const deadline = setTimeout(() => {
        if (slot.worker !== worker || slot.started || this.stopping) return;
        this.log.error('worker did not start in time; terminating it', { worker: slot.index, withinMs: startMs });
        void worker?.terminate();
      }, startMs);
      started.then(
        () => {
          clearTimeout(deadline);
          slot.restarting = false;
          this.log.info('worker restarted', { worker: slot.index });
          this.catchUp(slot);
        },
        (err: Error) => {
          clearTimeout(deadline);
          this.log.error('worker did not restart', { worker: slot.index, error: err });
        },
      );
    }, delay);
  }

  /**
   * A reload that went live while this worker was starting (it started on the config before it): bring it to the
   * same config, after any reload in progress (which started without it), as one more step of the reload queue.
   */
  private catchUp(slot: Slot): void {
    const running = this.reloads.running;
    if (running) {
      void running.finally(() => this.catchUp(slot));
      return;
    }
    const live = this.reloads.live!;
    if (this.stopping || !slot.started || slot.text === live) return;
    const worker = slot.worker;
    void this.reloads.run(async () => {
      const refused = await this.reloadSlots([slot], live, true);
      // Left on the config it started with, it would serve other routes and policies (an auth a reload added) on
      // the connections it takes: it is ended instead, and restarted on the live config like any dead worker.
      if (!refused.ok && !this.stopping && slot.worker === worker) {
        this.log.error('a restarted worker refused the live config; restarting it on that config', { worker: slot.index, error: refused.error });
        void worker?.terminate();
      }
      return false;
    });
  }

  /** Re-read the config and apply it to every worker, or to none. Resolves true when it went live. */
  reload(): Promise<boolean> {
    return this.reloads.reload();
  }

  /** The live config again (SIGHUP): each worker tries the binds it could not listen on now (ADR 0119). */
  private async retryBinds(): Promise<void> {
    await Promise.all(this.slots.filter((s) => s.started).map((s) => this.ask(s, { t: 'retryBinds' }, 30_000).catch(() => undefined)));
  }

  /** Apply `text` to every worker or to none: false when a stop dropped it, or the first refusal. */
  private async apply(text: string): Promise<boolean | Refusal> {
    const slots = this.slots.filter((s) => s.started);
    // Checked once for all (its check thread has a heap and a schema compile of its own), then compiled by each.
    const checker = slots[0];
    const checked = checker ? ((await this.ask(checker, { t: 'check', text }, 120_000).catch((err: Error): Staged => ({ ok: false, error: err.message }))) as Staged) : { ok: true as const };
    const staged = checked.ok ? await this.reloadSlots(slots, text) : checked;
    // A stop began meanwhile (SIGHUP then SIGTERM): the workers dropped it or exited, which is no refusal.
    if (this.stopping) return false;
    if (!staged.ok) return staged;
    this.reloads.live = text;
    this.generation++;
    // The files the new config read, from its compile: watched whether or not the query below answers.
    if (staged.namedFiles) this.reloads.follow(staged.namedFiles);
    const asked = this.slots.find((s) => s.started);
    // The static block as the workers now run it: the UI's settings, the logging of the supervisor's own lines, and
    // whether it changed what only a restart applies.
    const statics = asked ? ((await this.ask(asked, { t: 'query', what: 'statics' }, 5_000).catch(() => undefined)) as WorkerStatics | undefined) : undefined;
    if (statics) {
      this.answers.ui = statics.adminUi;
      this.drainTimeoutMs = statics.drainTimeoutMs;
      this.log.configure({ level: statics.logging.level, format: statics.logging.format });
      if (statics.restartOnly !== this.restartOnly) this.log.warn(RESTART_ONLY_CHANGED);
    }
    this.log.info('config reloaded', { workers: this.o.count });
    return true;
  }

  /**
   * Two steps: every worker compiles `text` (checked already) and holds it; then all serve it if every one accepted
   * it, else all drop it. Resolves with the first refusal, else the first answer (the files the config read).
   * `joins`: the other workers serve `text` already.
   */
  private async reloadSlots(slots: readonly Slot[], text: string, joins = false): Promise<Staged> {
    const results = await Promise.all(
      slots.map((slot) =>
        (this.ask(slot, { t: 'stage', text, joins, checked: true }, 120_000) as Promise<Staged>).catch((err: Error): Staged => ({ ok: false, error: err.message })),
      ),
    );
    const refused = results.find((r) => !r.ok);
    await Promise.all(slots.map((slot) => this.ask(slot, { t: 'commit', commit: !refused, text }, 30_000).catch(() => undefined)));
    if (!refused) for (const slot of slots) slot.text = text;
    return refused ?? results[0] ?? { ok: true };
  }

  private ask(slot: Slot, message: WorkerQuestion, timeoutMs: number): Promise<unknown> {
    return askWorker(slot, ++this.nextId, message, timeoutMs);
  }

  /** Readiness of the whole gateway (`/healthz/ready`), from what the workers reported: it never waits on one. */
  readiness(): Readiness {
    return this.answers.readiness();
  }

  /** Every worker's metrics summed with the supervisor's (`/metrics`). */
  metrics(): Promise<string> {
    return this.answers.metrics();
  }

  /** Loads of each shared fetch key so far (tests). */
  get sharedLoads(): ReadonlyMap<string, number> {
    return this.fetches.loads;
  }

  /** Stop every worker (each drains within `drainTimeout`), then the admin servers. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    this.reloads.close();
    clearInterval(this.livenessTimer);
    for (const s of this.slots) if (s.timer) clearTimeout(s.timer);
    const exits = this.slots.map((s) => {
      const w = s.worker;
      if (!w) return Promise.resolve();
      return new Promise<void>((resolve) => {
        w.once('exit', () => resolve());
        w.postMessage({ t: 'stop' } satisfies ToWorker);
      });
    });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.drainTimeoutMs + 5_000);
    });
    const outcome = await Promise.race([Promise.all(exits).then(() => 'done' as const), deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout') await this.terminateAll();
    await this.admin.close();
    this.registry.close();
    this.kept.close();
    this.log.info('switchyard stopped');
    this.o.sink.flush();
  }

  /** A start that failed: end the workers that started (none is restarted) and whatever else started. */
  private async abortStart(): Promise<void> {
    this.stopping ??= (async () => {
      await this.terminateAll();
      await this.admin.close();
      this.registry.close();
      this.kept.close();
    })();
    await this.stopping;
  }

  private async terminateAll(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.worker?.terminate()));
  }
}
