import 'reflect-metadata';
import { container as rootContainer, instanceCachingFactory } from 'tsyringe';
import type { DependencyContainer, InjectionToken } from 'tsyringe';
import { AdminServers } from '../admin/admin-servers.ts';
import { GenerationalResources } from '../resources/resource-cache.ts';
import { BindServers } from '../runtime/bind-servers.ts';
import { RequestPipeline } from '../runtime/request-pipeline.ts';
import { AccessLog } from '../telemetry/access-log.ts';
import { LogSink, ProcessLogger } from '../telemetry/logger.ts';
import { MetricsRegistry } from '../telemetry/metrics.ts';
import { registerProcessMetrics } from '../telemetry/process-metrics.ts';
import { Gateway } from './gateway.ts';
import type { GatewayOptions, GatewayServices } from './gateway.ts';
import { SharedCells } from '../resources/shared-cells.ts';
import { LocalFetches, WorkerFetches } from '../resources/shared-fetches.ts';

/** Injection tokens of the kernel services. Only this folder knows them. */
export const TOKENS = {
  options: Symbol('GatewayOptions'),
  sink: Symbol('LogSink'),
  logger: Symbol('ProcessLogger'),
  metrics: Symbol('MetricsRegistry'),
  resources: Symbol('GenerationalResources'),
  accessLog: Symbol('AccessLog'),
  pipeline: Symbol('RequestPipeline'),
  binds: Symbol('BindServers'),
  admin: Symbol('AdminServers'),
  gateway: Symbol('Gateway'),
} as const;

/** A worker shares cells and fetches with the other workers through its supervisor; a lone gateway keeps its own. */
function sharedState(options: GatewayOptions, logger: ProcessLogger): GatewayServices['shared'] {
  const warn = (message: string): void => logger.warn(message);
  if (!options.worker) return { cells: new SharedCells(undefined, warn), fetches: new LocalFetches() };
  return { cells: new SharedCells(options.worker.arena, warn), fetches: new WorkerFetches(options.worker.fetchPort) };
}

function single<T>(c: DependencyContainer, token: InjectionToken<T>, make: (c: DependencyContainer) => T): void {
  c.register(token, { useFactory: instanceCachingFactory(make) });
}

/**
 * The composition root: wires the kernel services once per gateway. Factories only, no decorator metadata
 * (ARCHITECTURE.md §8); every class still takes plain constructor arguments for unit tests.
 */
export function createGateway(options: GatewayOptions, sink?: LogSink): Gateway {
  const c = rootContainer.createChildContainer();
  c.register(TOKENS.options, { useValue: options });
  single(c, TOKENS.sink, () => sink ?? new LogSink());
  single(c, TOKENS.logger, (r) => new ProcessLogger(r.resolve<LogSink>(TOKENS.sink), { level: 'info', format: 'text' }));
  single(c, TOKENS.metrics, () => new MetricsRegistry());
  single(c, TOKENS.resources, () => new GenerationalResources());
  single(c, TOKENS.accessLog, (r) => new AccessLog(r.resolve<LogSink>(TOKENS.sink), true, 'text'));
  single(
    c,
    TOKENS.pipeline,
    (r) => new RequestPipeline(r.resolve<ProcessLogger>(TOKENS.logger), r.resolve<AccessLog>(TOKENS.accessLog), r.resolve<MetricsRegistry>(TOKENS.metrics)),
  );
  single(c, TOKENS.binds, (r) => new BindServers(r.resolve<RequestPipeline>(TOKENS.pipeline), r.resolve<ProcessLogger>(TOKENS.logger), options.worker !== undefined));
  single(c, TOKENS.admin, (r) => new AdminServers(r.resolve<ProcessLogger>(TOKENS.logger)));
  single(
    c,
    TOKENS.gateway,
    (r) =>
      new Gateway(r.resolve<GatewayOptions>(TOKENS.options), {
        logger: r.resolve(TOKENS.logger),
        sink: r.resolve(TOKENS.sink),
        metrics: r.resolve(TOKENS.metrics),
        resources: r.resolve(TOKENS.resources),
        accessLog: r.resolve(TOKENS.accessLog),
        pipeline: r.resolve(TOKENS.pipeline),
        binds: r.resolve(TOKENS.binds),
        admin: r.resolve(TOKENS.admin),
        shared: sharedState(options, r.resolve<ProcessLogger>(TOKENS.logger)),
      }),
  );
  const gateway = c.resolve<Gateway>(TOKENS.gateway);
  const metrics = c.resolve<MetricsRegistry>(TOKENS.metrics);
  metrics.gauge('switchyard_config_generation', 'Generation number of the live config.', () => gateway.snapshot?.generation ?? 0);
  // Process-wide figures: a worker thread would report the whole process's, so its supervisor reports them once.
  if (!options.worker) {
    metrics.gauge('switchyard_process_resident_memory_bytes', 'Resident set size of the process (also `process_resident_memory_bytes`).', () => process.memoryUsage.rss());
    metrics.onClose(registerProcessMetrics(metrics));
  }
  return gateway;
}
