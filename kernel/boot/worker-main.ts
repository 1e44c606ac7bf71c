import { parentPort, workerData } from 'node:worker_threads';
import { ConfigLoadError } from '../config/format-issues.ts';
import { createGateway } from './container.ts';
import type { FromWorker, ToWorker, WorkerData, WorkerStatics } from './worker-protocol.ts';
import { WORKER_DATA_KEY } from './worker-protocol.ts';
import { WorkerTail } from './worker-tail.ts';
import { restartOnlyKey } from './restart-only.ts';
import type { Snapshot } from '../compile/snapshot.ts';
import type { Readiness } from '../admin/gateway-endpoints.ts';

/** This thread's supervisor data, when it is a worker of one. */
export function workerDataOf(): WorkerData | undefined {
  return (workerData as Record<string, WorkerData> | null)?.[WORKER_DATA_KEY];
}

/**
 * The body of a worker thread: one gateway on the shared ports (SO_REUSEPORT), no admin servers, answering its
 * supervisor's messages (stage/commit a reload, readiness, metrics, config dump, stop). A start that fails is
 * reported and ends the thread.
 */
export async function runWorker(dist: { readonly preset: readonly unknown[]; readonly knownKeys?: Iterable<string> }, data: WorkerData): Promise<void> {
  const port = parentPort!;
  const send = (m: FromWorker): void => port.postMessage(m);
  let ready: ReadinessReports | undefined;
  const gateway = createGateway({
    preset: dist.preset,
    knownKeys: dist.knownKeys,
    config: { name: data.name, text: data.text, base: data.base },
    watch: false,
    worker: { index: data.index, arena: data.arena, fetchPort: data.fetchPort, processPort: data.processPort, generation: data.generation, scope: data.scope, kept: data.kept, watchFiles: data.watchFiles, bindsListen: () => ready?.report() },
  });
  try {
    await gateway.start();
  } catch (err) {
    send({ t: 'failed', error: (err as Error)?.message ?? String(err), invalidConfig: err instanceof ConfigLoadError });
    await gateway.stop().catch(() => undefined);
    process.exit(1);
  }
  const s = gateway.snapshot!;
  const c = s.staticConfig;
  const reports = readinessReports(gateway, send);
  ready = reports;
  send({
    t: 'started',
    addrs: { adminAddr: c.adminAddr, statsAddr: c.statsAddr, readinessAddr: c.readinessAddr },
    drainTimeoutMs: c.drainTimeoutMs,
    binds: [...s.binds.keys()],
    statics: statics(s),
    readiness: reports.first,
  });
  const tail = new WorkerTail(gateway, (events, dropped) => send({ t: 'tail', events, dropped }));
  port.on('message', (m: ToWorker) => {
    switch (m.t) {
      case 'stage':
        void gateway.stage(m.text, m.joins, m.checked).then((value) => send({ t: 'reply', id: m.id, value }));
        return;
      case 'check':
        void gateway.check(m.text).then((value) => send({ t: 'reply', id: m.id, value }));
        return;
      case 'validate':
        void gateway.validate(m.text).then((value) => send({ t: 'reply', id: m.id, value }));
        return;
      case 'commit':
        // Its readiness before the answer: the supervisor's `/healthz/ready` is right once the reload resolves.
        void gateway.commitStaged(m.commit, m.text).then(() => (reports.report(), send({ t: 'reply', id: m.id, value: true })));
        return;
      case 'retryBinds':
        void gateway.retryBinds().then(() => (reports.report(), send({ t: 'reply', id: m.id, value: true })));
        return;
      case 'tail':
        if (m.on) tail.start();
        else tail.stop();
        return;
      case 'query': {
        const value = m.what === 'metrics' ? gateway.metricsText() : m.what === 'statics' ? statics(gateway.snapshot!) : gateway.configDump();
        send({ t: 'reply', id: m.id, value });
        return;
      }
      case 'admin': {
        const handler = gateway.snapshot?.adminRoutes.get(m.prefix);
        const answer = handler
          ? Promise.resolve()
              .then(() => handler({ method: m.method, subpath: m.subpath, query: new URLSearchParams(m.query), body: m.body }))
              .catch(() => ({ status: 500, body: { error: { message: 'internal error' } } }))
          : Promise.resolve({ status: 404, body: { error: { message: 'not found' } } });
        void answer.then((value) => send({ t: 'reply', id: m.id, value }));
        return;
      }
      case 'stop':
        tail.stop();
        void gateway.stop().finally(() => process.exit(0));
        return;
    }
  });
}

/** What a worker last told its supervisor of its readiness, and `report` to tell it again if it changed. */
interface ReadinessReports {
  readonly first: Readiness;
  report(): void;
}

/**
 * The supervisor answers `/healthz/ready` from what each worker last reported (ADR 0194), never waiting on one: a
 * worker tells it its readiness with `started`, then whenever it may have changed (a reload's commit, a bind retry,
 * a bind that could not listen now does).
 */
function readinessReports(gateway: { readiness(): Readiness }, send: (m: FromWorker) => void): ReadinessReports {
  const first = gateway.readiness();
  let last = `${first.ready}:${first.pending}`;
  const report = (): void => {
    const r = gateway.readiness();
    const key = `${r.ready}:${r.pending}`;
    if (key === last) return;
    last = key;
    send({ t: 'readiness', ready: r.ready, pending: r.pending });
  };
  return { first, report };
}

/** What the supervisor acts on of a worker's live config (the `statics` query). */
function statics(s: Snapshot): WorkerStatics {
  const c = s.staticConfig;
  return { adminUi: c.adminUi, logging: { level: c.logging.level, format: c.logging.format }, restartOnly: restartOnlyKey(c), drainTimeoutMs: c.drainTimeoutMs, namedFiles: s.namedFiles };
}
