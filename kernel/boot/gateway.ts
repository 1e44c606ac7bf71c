import { ErrorCode } from '../sdk/index.ts';
import type { Logger } from '../sdk/index.ts';
import { AdminServers } from '../admin/admin-servers.ts';
import type { AdminEndpoints } from '../admin/admin-servers.ts';
import { gatewayEndpoints, MAX_SHOWN_ISSUES, validationResult } from '../admin/gateway-endpoints.ts';
import type { Readiness, TailListener, ValidationResult } from '../admin/gateway-endpoints.ts';
import type { Snapshot, StaticConfig } from '../compile/snapshot.ts';
import { renderIssue } from '../config/format-issues.ts';
import { settledBy } from '../sdk/settle-within.ts';
import { ListenerCertificates } from '../runtime/listener-certs.ts';
import type { PluginRegistry } from '../registry/registry.ts';
import type { GenerationalResources } from '../resources/resource-cache.ts';
import type { SharedCells } from '../resources/shared-cells.ts';
import type { KeptMessages } from '../resources/shared-events.ts';
import type { SharedEvents, SharedFetches } from '../sdk/shared.ts';
import type { GatewayProcesses } from '../sdk/processes.ts';
import type { MessagePort } from 'node:worker_threads';
import type { BindServers } from '../runtime/bind-servers.ts';
import type { RequestPipeline } from '../runtime/request-pipeline.ts';
import type { AccessLog } from '../telemetry/access-log.ts';
import type { LogSink, ProcessLogger } from '../telemetry/logger.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import { startTracing } from '../telemetry/tracing-sdk.ts';
import type { TracingHolder } from '../telemetry/tracing.ts';
import { ConfigLoader } from './config-loader.ts';
import type { ConfigLoaderOptions } from './config-loader.ts';
import { RESTART_ONLY_CHANGED, restartOnlyKey } from './restart-only.ts';
import { BindRetry } from './bind-retry.ts';
import { ReloadQueue, refusalOf } from './reload-queue.ts';
import type { Refusal, Staged } from './reload-queue.ts';

/** Said after a missing variable in a config pasted into the admin UI. */
const PASTED_ENV = "the admin UI validates without the gateway's environment (write a default, or run `switchyard --validate-only` where the gateway runs)";

export type { ConfigInput } from './config-loader.ts';

/** The gateway's options: the config loader's (preset, config, cwd, env, validators) and how it serves. */
export interface GatewayOptions extends ConfigLoaderOptions {
  /** Re-read the file when it changes. Default true for files. */
  readonly watch?: boolean;
  /**
   * Set when this gateway is one worker thread of several (kernel/boot/supervisor.ts): it listens with
   * `SO_REUSEPORT` beside the others and runs no admin servers (the supervisor answers for all).
   */
  readonly worker?: WorkerSide;
}

/** What a worker thread gets from its supervisor. */
export interface WorkerSide {
  readonly index: number;
  /** The shared cells' memory (kernel/resources/shared-cells.ts). */
  readonly arena: SharedArrayBuffer;
  /** The channel of coalesced fetches (kernel/resources/shared-fetches.ts). */
  readonly fetchPort: MessagePort;
  /** The channel of child processes the supervisor runs for this worker (kernel/resources/child-processes.ts). */
  readonly processPort: MessagePort;
  /** The config generation the supervisor's workers serve: a worker restarted after reloads starts at it. */
  readonly generation: number;
  /** Names the supervisor's channels of `SharedEvents` (unique per supervisor). */
  readonly scope: string;
  /** `SharedEvents` messages kept for workers starting now (a restart): delivered to their topics' subscribers first. */
  readonly kept?: KeptMessages;
  /** Watch the listeners' certificate files (the supervisor watches the config file). */
  readonly watchFiles?: boolean;
  /** A bind that could not listen now does: the one readiness change no supervisor message caused (ADR 0194). */
  readonly bindsListen?: () => void;
}

/** Kernel services the gateway coordinates; wired in the composition root (container.ts). */
export interface GatewayServices {
  readonly logger: ProcessLogger;
  readonly sink: LogSink;
  readonly metrics: MetricsRegistry;
  readonly resources: GenerationalResources;
  readonly accessLog: AccessLog;
  readonly pipeline: RequestPipeline;
  readonly binds: BindServers;
  readonly admin: AdminServers;
  /** State shared with the other workers (or this process's own when it runs alone). */
  readonly shared: { readonly cells: SharedCells; readonly fetches: SharedFetches; readonly events: SharedEvents; readonly processes: GatewayProcesses };
}

/** Lifecycle of one gateway process: load, serve, reload on change, drain on stop. */
export class Gateway {
  private readonly options: GatewayOptions;
  private readonly s: GatewayServices;
  private readonly log: Logger;
  private readonly loader: ConfigLoader;
  /** HTTPS listeners' files renewed on disk (ADR 0138): watched with the config file, read again on SIGHUP. */
  private readonly certificates: ListenerCertificates;
  /** Reloads one at a time; the config file and the files the live config read watched (ADR 0184). */
  private readonly reloads: ReloadQueue;
  private readonly live = new Set<Snapshot>();
  private started = false;
  /** `config.tracing`, started with the first config (restart only); upstream targets read it per call. */
  private readonly traces: TracingHolder = { tracing: null };
  private stopping: Promise<void> | undefined;
  /**
   * The generation of the live config, for `/metrics` and `/config_dump`: 1 at start, one more on each applied reload.
   * The snapshot's own number counts every compile (failed ones and validations too) and keys its resources.
   */
  private applied = 0;
  /** Binds of the live config that could not listen (a port still taken), tried again (ADR 0119). */
  private readonly bindRetry: BindRetry;

  constructor(options: GatewayOptions, services: GatewayServices) {
    this.options = options;
    this.s = services;
    this.log = services.logger;
    this.loader = new ConfigLoader(options, services, this.traces);
    this.bindRetry = new BindRetry(services.binds, services.logger, (snapshot) => !this.stopping && this.s.pipeline.snapshot === snapshot, () => options.worker?.bindsListen?.());
    const c = options.config;
    const watched = 'file' in c && options.watch !== false && !options.worker ? c.file : undefined;
    this.reloads = new ReloadQueue(
      {
        log: services.logger,
        metrics: services.metrics,
        configName: this.loader.fileName,
        read: () => this.readText(),
        stopping: () => this.stopping !== undefined,
        unchanged: () => this.retryBinds(),
        apply: (text) => this.apply(text),
      },
      watched,
    );
    this.certificates = new ListenerCertificates(() => this.s.pipeline.snapshot, services.logger, (bind) => services.binds.setDefaultCertificate(bind));
  }

  get snapshot(): Snapshot | undefined {
    return this.s.pipeline.snapshot;
  }

  get admin(): AdminServers {
    return this.s.admin;
  }

  get pluginRegistry(): PluginRegistry | undefined {
    return this.loader.pluginRegistry;
  }

  private get fileName(): string {
    return this.loader.fileName;
  }

  /** The config text: the file read now (bounded, never blocking; ConfigLoadError when unreadable) or the inline text. */
  readText(): Promise<string> {
    return this.loader.readText();
  }

  /** Build the registry and schema validator (once per process: plugin modules are static config). */
  prepare(text?: string): Promise<void> {
    return this.loader.prepare(text);
  }

  /** Parse, validate and compile text into a snapshot (`config-loader.ts`). Throws ConfigLoadError with positions. */
  compile(text: string): Promise<Snapshot> {
    return this.loader.compile(text);
  }

  /** Load the config, bind every port, start the admin servers and the file watcher. */
  async start(): Promise<void> {
    const text = await this.readText();
    const snapshot = await this.compile(text);
    this.applyLogging(snapshot);
    this.reloads.live = text;
    this.s.pipeline.snapshot = snapshot;
    this.live.add(snapshot);
    try {
      // The SDK and exporter load here, and only when the config asks for traces (ADR 0037).
      if (snapshot.staticConfig.tracing !== null) {
        this.traces.tracing = await startTracing(snapshot.staticConfig.tracing, this.log, this.s.metrics);
        this.s.pipeline.tracing = this.traces.tracing;
      }
      await this.s.binds.apply(snapshot);
      if (!this.options.worker) await this.s.admin.start(snapshot.staticConfig, this.endpoints());
    } catch (err) {
      // A port that could not be bound must not leave the ports that could listening.
      await Promise.all(this.s.binds.stopAccepting());
      this.s.binds.destroyAll();
      await this.s.admin.close();
      snapshot.dispose();
      this.live.clear();
      await this.s.resources.disposeAll();
      throw err;
    }
    this.started = true;
    this.applied = this.options.worker?.generation ?? 1;
    this.reloads.follow(snapshot.namedFiles);
    this.reloads.watch();
    const c = this.options.config;
    if (('file' in c && this.options.watch !== false) || this.options.worker?.watchFiles) this.certificates.watch(snapshot);
    if (!this.options.worker && snapshot.staticConfig.workers > 1) {
      this.log.warn('`config.workers` is applied by the switchyard CLI (a supervisor of worker threads); this gateway, started in-process, runs on one thread', { workers: snapshot.staticConfig.workers });
    }
    if (!this.options.worker) this.log.info('switchyard ready', { config: this.fileName, generation: this.applied, binds: [...snapshot.binds.keys()].join(','), pid: process.pid });
  }

  private applyLogging(snapshot: Snapshot): void {
    const logging = snapshot.staticConfig.logging;
    this.s.logger.configure({ level: logging.level, format: logging.format });
    this.s.accessLog.enabled = logging.accessLog;
    this.s.accessLog.format = logging.format;
    this.s.accessLog.rules = logging.rules;
  }

  /**
   * Re-read the config. A valid change is swapped in atomically: new requests use it, in-flight ones finish on
   * the old snapshot, which is then disposed. An invalid change is logged and the last good config keeps serving.
   * Resolves true when a new snapshot went live.
   */
  reload(text?: string): Promise<boolean> {
    return this.reloads.reload(text);
  }

  private staged: Snapshot | undefined;

  /**
   * First half of a reload run by a supervisor across its workers: compile `text` and hold it, without serving it.
   * Resolves with the error (as a reload would log it) when it does not compile. `joins`: the other workers serve
   * `text` already (this one restarted during its reload), so its shared state is theirs (CompileOptions.joins).
   */
  async stage(text: string, joins = false, checked = false): Promise<Staged> {
    this.unstage();
    try {
      this.staged = await this.loader.compile(text, { joins, checked });
      // The files it read: the supervisor watches them (ADR 0184), whether or not its `statics` query answers later.
      return { ok: true, namedFiles: this.staged.namedFiles };
    } catch (err) {
      return { ok: false, ...refusalOf(err) };
    }
  }

  /** A reload's parse and schema check, made by one worker for all (`stage` with `checked` then skips it). */
  async check(text: string): Promise<Staged> {
    try {
      await this.loader.checkReload(text);
      return { ok: true };
    } catch (err) {
      return { ok: false, ...refusalOf(err) };
    }
  }

  /** Second half: every worker compiled its staged config, so serve it (or, `commit` false, drop it). */
  async commitStaged(commit: boolean, text: string): Promise<void> {
    const next = this.staged;
    this.staged = undefined;
    if (!next) return;
    if (!commit || this.stopping) {
      next.dispose();
      await this.s.resources.release(next.generation);
      return;
    }
    this.reloads.live = text;
    await this.swap(next);
  }

  private unstage(): void {
    if (this.staged) void this.commitStaged(false, '');
  }

  /** Compile and serve `text` (a reload): false when a stop began meanwhile, or why it was refused. */
  private async apply(text: string): Promise<boolean | Refusal> {
    let next: Snapshot;
    try {
      next = await this.compile(text);
    } catch (err) {
      // The live text stays the live config's: asked again (SIGHUP), this one is compiled again.
      return refusalOf(err);
    }
    if (this.stopping) {
      // A stop began while it compiled (SIGHUP then SIGTERM): serving it now would open its new ports after the
      // binds were closed, listeners nothing closes that keep the process alive.
      next.dispose();
      await this.s.resources.release(next.generation);
      return false;
    }
    this.reloads.live = text;
    await this.swap(next);
    return true;
  }

  /**
   * A SIGHUP with the config unchanged: try the binds of the live config that could not listen again now, and read
   * the HTTPS listeners' certificates again (renewed on disk, ADR 0138).
   */
  async retryBinds(): Promise<void> {
    if (this.s.pipeline.snapshot) await this.bindRetry.now(this.s.pipeline.snapshot);
    await this.certificates.reload();
  }

  /** Readiness of this process: started, not stopping, every bind of the live config listening. */
  readiness(): Readiness {
    const snapshot = this.s.pipeline.snapshot;
    const pending = snapshot ? this.s.binds.pending(snapshot) : [];
    if (this.started && !this.stopping && snapshot && pending.length === 0) return { ready: true, pending: '' };
    return { ready: false, pending: this.stopping ? 'shutting down' : pending.length ? `binds ${pending.join(', ')}` : 'config' };
  }

  /** The Prometheus text of this process's metrics. */
  metricsText(): string {
    return this.s.metrics.render();
  }

  /** The generation of the live config: 1 at start, one more on each applied reload (0 before start). */
  get generation(): number {
    return this.applied;
  }

  /** The live config, secrets redacted, with its generation and load time. */
  configDump(): { generation: number; loadedAt: string; config: unknown } {
    const snapshot = this.s.pipeline.snapshot!;
    return { generation: this.applied, loadedAt: snapshot.loadedAt.toISOString(), config: this.loader.redactedConfig(snapshot) };
  }

  /**
   * The admin UI's validator: check `text` as a reload would (parse, schema, every plugin's compile) and throw the
   * result away. `${VAR}` expands against no environment (ADR 0124): the compile could send a value elsewhere; and
   * the compile reads no file, opens no store and connects nowhere (ADR 0131): what it skipped comes as warnings.
   */
  async validate(text: string): Promise<ValidationResult> {
    let checked;
    try {
      checked = await this.loader.check(text, MAX_SHOWN_ISSUES);
    } catch (err) {
      return { ok: false, errors: [], error: (err as Error).message };
    }
    const errors = checked.errors.map((i) => (i.code === ErrorCode.configEnv ? { ...i, message: `${i.message}; ${PASTED_ENV}` } : i));
    return validationResult(errors, checked.warnings, renderIssue, checked.moreErrors, checked.moreWarnings);
  }

  /** Serve `next` from now on; the previous snapshot is disposed once its in-flight requests are done. */
  private async swap(next: Snapshot): Promise<void> {
    const previous = this.s.pipeline.snapshot!;
    this.s.pipeline.snapshot = next;
    this.applied++;
    this.live.add(next);
    this.applyLogging(next);
    // A supervisor of workers says this once for all of them.
    if (!this.options.worker && restartOnlyKey(previous.staticConfig) !== restartOnlyKey(next.staticConfig)) this.log.warn(RESTART_ONLY_CHANGED);
    try {
      await this.s.binds.apply(next);
    } catch (err) {
      this.log.error('config reloaded but some binds could not listen; trying again every 5 s (and on SIGHUP)', { error: err as Error });
      this.bindRetry.schedule(next);
    }
    this.certificates.follow(next);
    this.reloads.follow(next.namedFiles);
    if (!this.options.worker) this.log.info('config reloaded', { generation: this.applied });
    void previous.retire().then(async () => {
      previous.dispose();
      this.live.delete(previous);
      await this.s.resources.release(previous.generation);
    });
  }

  /** Hand every finished request's access-log fields to `listener` until the returned function is called (the UI's live tail). */
  tail(listener: TailListener): () => void {
    this.s.accessLog.tap = listener;
    return () => {
      if (this.s.accessLog.tap === listener) this.s.accessLog.tap = null;
    };
  }

  private endpoints(): AdminEndpoints {
    const endpoints = gatewayEndpoints({
      readiness: () => this.readiness(),
      metrics: () => this.metricsText(),
      configDump: () => this.configDump(),
      validate: (text) => this.validate(text),
      adminUi: () => this.s.pipeline.snapshot?.staticConfig.adminUi,
      tail: (listener) => this.tail(listener),
    });
    return { ...endpoints, adminPlugins: (prefix) => this.s.pipeline.snapshot?.adminRoutes.get(prefix) };
  }

  /** `config.drainTimeout` of the live config: how long a stop waits for in-flight requests. */
  get drainTimeoutMs(): number {
    return this.s.pipeline.snapshot?.staticConfig.drainTimeoutMs ?? 10_000;
  }

  /**
   * Stop accepting, let in-flight requests finish (bounded by `drainTimeout`), then close everything.
   */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    this.reloads.close();
    this.certificates.stop();
    this.bindRetry.stop();
    this.s.pipeline.draining = true;
    const drainMs = this.drainTimeoutMs;
    const drainBy = Date.now() + drainMs;
    const closed = this.s.binds.stopAccepting();
    const begun = this.s.binds.closeIdle();
    // A head begun before the drain that never ended is no request the deadline cuts: only requests in flight count.
    const settled = await settledBy(Promise.all([begun, ...[...this.live].map((s) => s.retire())]), drainBy);
    if (!settled && [...this.live].some((s) => s.inFlight > 0)) {
      this.log.warn('drain deadline passed; closing remaining connections', { drainTimeoutMs: drainMs });
      this.s.pipeline.cutAtDrain = true;
    }
    // What follows the drain (resources, the last spans) shares one deadline: the drain's, at least a second after it.
    const finishBy = Math.max(drainBy, Date.now() + 1000);
    this.s.binds.destroyAll();
    await Promise.all(closed);
    await this.s.admin.close();
    this.s.metrics.close();
    for (const s of this.live) s.dispose();
    this.live.clear();
    // Shared resources close (stores write what they hold) by then: one whose server stopped answering held the stop
    // for ever.
    if (!(await settledBy(this.s.resources.disposeAll(), finishBy))) {
      this.log.warn('shared resources still closing at the drain deadline (a store that does not answer); stopping without them', { drainTimeoutMs: drainMs });
    }
    // Spans still buffered are exported before the process goes, by then too: a collector that never answers held
    // the stop for its export timeout, past an orchestrator's grace period.
    const traced = this.traces.tracing?.shutdown().catch((err: unknown) => this.log.warn('trace export at shutdown failed', { error: err as Error }));
    if (traced && !(await settledBy(traced, finishBy))) {
      this.log.warn('trace export at shutdown did not finish by the drain deadline; the spans not sent are dropped', { drainTimeoutMs: drainMs });
    }
    // A gateway that never served (--validate-only, a failed start) did not start, so it does not say it stopped.
    if (this.started && !this.options.worker) this.log.info('switchyard stopped');
    this.s.sink.flush();
  }
}
