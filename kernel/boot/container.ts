import { AdminServers } from '../admin/admin-servers.ts';
import { GenerationalResources } from '../resources/resource-cache.ts';
import { BindServers } from '../runtime/bind-servers.ts';
import { RequestPipeline } from '../runtime/request-pipeline.ts';
import { AccessLog } from '../telemetry/access-log.ts';
import { LogSink, ProcessLogger } from '../telemetry/logger.ts';
import { MetricsRegistry } from '../telemetry/metrics.ts';
import { registerProcessMetrics, registerThreadMetrics } from '../telemetry/process-metrics.ts';
import { Gateway } from './gateway.ts';
import type { GatewayOptions, GatewayServices } from './gateway.ts';
import { SharedCells } from '../resources/shared-cells.ts';
import { LocalFetches, WorkerFetches } from '../resources/shared-fetches.ts';
import { LocalEvents, WorkerEvents } from '../resources/shared-events.ts';
import { LocalProcesses, WorkerProcesses } from '../resources/child-processes.ts';

/** A worker shares cells and fetches with the other workers through its supervisor; a lone gateway keeps its own. */
function sharedState(options: GatewayOptions, logger: ProcessLogger): GatewayServices['shared'] {
  const warn = (message: string): void => logger.warn(message);
  if (!options.worker) return { cells: new SharedCells(), fetches: new LocalFetches(), events: new LocalEvents(), processes: new LocalProcesses() };
  const w = options.worker;
  const { threadId } = process.getBuiltinModule('node:worker_threads');
  return { cells: new SharedCells(w.arena, warn, threadId), fetches: new WorkerFetches(w.fetchPort), events: new WorkerEvents(w.scope, w.kept), processes: new WorkerProcesses(w.processPort) };
}

/**
 * The composition root: wires the kernel services once per gateway, in dependency order, by hand (ADR 0042: a DI
 * container cost 35 modules, ~35 ms of CPU and ~5 MiB at every start for these ten constructions). Every class
 * takes plain constructor arguments, as unit tests build them.
 */
export function createGateway(options: GatewayOptions, sink: LogSink = new LogSink()): Gateway {
  const logger = new ProcessLogger(sink, { level: 'info', format: 'text' });
  const metrics = new MetricsRegistry();
  const resources = new GenerationalResources();
  const accessLog = new AccessLog(sink, true, 'text');
  const pipeline = new RequestPipeline(logger, accessLog, metrics);
  // `SWITCHYARD_LEAN_HTTP=off`: node:http parses every request (ADR 0088's opt-out).
  const leanHttp = (options.env ?? process.env).SWITCHYARD_LEAN_HTTP?.trim().toLowerCase() !== 'off';
  const binds = new BindServers(pipeline, logger, options.worker !== undefined, leanHttp);
  const admin = new AdminServers(logger);
  const gateway = new Gateway(options, { logger, sink, metrics, resources, accessLog, pipeline, binds, admin, shared: sharedState(options, logger) });
  metrics.gauge('switchyard_config_generation', 'Generation number of the live config: 1 at start, one more on each applied reload.', () => gateway.generation);
  // Process-wide figures: a worker thread would report the whole process's, so its supervisor reports them once;
  // a worker reports its own thread's heap, event loop and GC (summed, or the worst, by the supervisor).
  if (!options.worker) {
    metrics.gauge('switchyard_process_resident_memory_bytes', 'Resident set size of the process (also `process_resident_memory_bytes`).', () => process.memoryUsage.rss());
    metrics.onClose(registerProcessMetrics(metrics));
  } else {
    metrics.onClose(registerThreadMetrics(metrics));
  }
  return gateway;
}
