// Long A2A tasks through the `a2a` policy, with the @a2a-js/sdk agent and client (REAL-PEERS.md §3): a stream the
// client leaves and picks up again with resubscribe, and push-notification configs, which the gateway passes to
// the agent as sent (the agent, not the gateway, calls the webhook: ADR 0170).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { stringify } from 'yaml';
import { fullPreset } from '../../plugins/presets/full.ts';
import { factory, sendParams, startEchoAgent, textPart } from '../helpers/a2a-agent.ts';
import type { EchoAgent } from '../helpers/a2a-agent.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';

async function waitFor(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A task that reports `working`, then waits for `release()` before it completes. */
class Slow implements AgentExecutor {
  private gates = new Map<string, () => void>();
  release(taskId: string): void {
    this.gates.get(taskId)?.();
  }
  cancelTask = async (): Promise<void> => {};
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    const now = () => new Date().toISOString();
    bus.publish(
      AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, timestamp: now(), message: undefined }, artifacts: [], history: [ctx.userMessage], metadata: {} }),
    );
    await new Promise<void>((resolve) => this.gates.set(taskId, resolve));
    const message = { role: Role.ROLE_AGENT, messageId: randomUUID(), parts: [textPart('done')], taskId, contextId, extensions: [], metadata: {}, referenceTaskIds: [] };
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_COMPLETED, timestamp: now(), message }, metadata: {} }));
    bus.finished();
  }
}

/** The task id of a stream's first event (a `task` payload). */
function firstTaskId(event: unknown): string | undefined {
  const payload = (event as { payload?: { $case: string; value: { id?: string } } }).payload;
  return payload?.$case === 'task' ? payload.value.id : undefined;
}

type A2aClient = Awaited<ReturnType<ReturnType<typeof factory>['createFromUrl']>>;

/** Starts a streamed task and leaves its stream after the first event: the task's id. */
async function startAndLeave(client: A2aClient, text: string): Promise<string> {
  const abort = new AbortController();
  let taskId = '';
  await assert.rejects(async () => {
    for await (const event of client.sendMessageStream(sendParams(text), { signal: abort.signal })) {
      taskId = firstTaskId(event) ?? taskId;
      abort.abort();
    }
  });
  assert.ok(taskId, 'the first event named the task');
  return taskId;
}

/** A call the webhook received. */
interface Hooked {
  url: string;
  headers: IncomingHttpHeaders;
}

describe('a2a long tasks', () => {
  const slow = new Slow();
  let agent: EchoAgent;
  let hookServer: Server;
  const hooked: Hooked[] = [];
  let hookPort: number;
  let gw: RunningGateway;
  let base: string;

  before(async () => {
    agent = await startEchoAgent({ executor: slow, pushNotifications: true });
    // Stands for an address only the agent's network reaches (a metadata service, an admin port).
    hookPort = await freePort();
    hookServer = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hooked.push({ url: req.url ?? '', headers: req.headers });
        res.end();
      });
    });
    await new Promise<void>((resolve) => hookServer.listen(hookPort, '127.0.0.1', resolve));

    const gwPort = await freePort();
    base = `http://127.0.0.1:${gwPort}`;
    gw = await startGateway(
      {
        config: { logging: { format: 'json', level: 'info' } },
        binds: [
          {
            port: gwPort,
            listeners: [
              {
                routes: [
                  {
                    matches: [{ path: { pathPrefix: '/agents/slow' } }],
                    policies: { a2a: {}, urlRewrite: { path: { prefix: '/' } } },
                    backends: [{ host: `127.0.0.1:${agent.port}` }],
                  },
                ],
              },
            ],
          },
        ],
      },
      { preset: fullPreset },
    );
  });

  after(async () => {
    await gw?.stop();
    await agent?.close();
    hookServer?.closeAllConnections();
    await new Promise((resolve) => hookServer?.close(resolve));
  });

  it('a client that leaves a stream resubscribes through the gateway and sees the task finish', async () => {
    const client = await factory('JSONRPC').createFromUrl(`${base}/agents/slow/`);
    const taskId = await startAndLeave(client, 'long');
    const seen = agent.received.length;
    const events: unknown[] = [];
    const resubscribed = (async () => {
      for await (const event of client.resubscribeTask({ tenant: '', id: taskId })) events.push(event);
    })();
    await waitFor(() => agent.received.length > seen, 'the resubscribe at the agent');
    slow.release(taskId);
    await resubscribed;
    const last = events.at(-1) as { payload?: { $case: string; value: { status?: { state: TaskState } } } };
    assert.equal(last.payload?.$case, 'statusUpdate');
    assert.equal(last.payload.value.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.deepEqual(agent.received.slice(seen).map((r) => `${r.method} ${r.url}`), ['POST /a2a/jsonrpc'], 'the resubscribe went through the gateway to the agent');
  });

  it('a push-notification config reaches the agent as sent, and the agent (not the gateway) calls its URL', async () => {
    const client = await factory('JSONRPC').createFromUrl(`${base}/agents/slow/`);
    const taskId = await startAndLeave(client, 'push');
    const url = `http://127.0.0.1:${hookPort}/internal/admin`;
    await client.createTaskPushNotificationConfig({ tenant: '', taskId, id: 'hook-1', url, token: 'client-token', authentication: undefined } as never);
    const stored = await client.getTaskPushNotificationConfig({ tenant: '', taskId, id: 'hook-1' } as never);
    assert.equal(stored.url, url, 'the webhook URL reached the agent unchanged');
    slow.release(taskId);
    await waitFor(() => hooked.length > 0, 'the agent calling the webhook');
    assert.equal(hooked[0]!.url, '/internal/admin');
    // The call comes from the agent's HTTP client, not through the gateway (no forwarding headers of its own).
    assert.equal(hooked[0]!.headers['x-forwarded-for'], undefined);
  });
});

describe('a2a: open streams per client are bounded (maxStreamsPerClient, ADR 0182)', () => {
  const slow = new Slow();
  let agent: EchoAgent;
  let gw: RunningGateway;
  let base: string;
  let config: (extra: Record<string, unknown>[]) => Record<string, unknown>;
  before(async () => {
    agent = await startEchoAgent({ executor: slow });
    const gwPort = await freePort();
    base = `http://127.0.0.1:${gwPort}`;
    const route = { matches: [{ path: { pathPrefix: '/agents/slow' } }], policies: { a2a: { maxStreamsPerClient: 2 }, urlRewrite: { path: { prefix: '/' } } }, backends: [{ host: `127.0.0.1:${agent.port}` }] };
    config = (extra) => ({ config: { logging: { format: 'json', level: 'info' } }, binds: [{ port: gwPort, listeners: [{ routes: [route, ...extra] }] }] });
    gw = await startGateway(config([]), { preset: fullPreset });
  });
  after(async () => {
    await gw?.stop();
    await agent?.close();
  });

  /** A stream opened and read up to its first event, kept open: its task id and the rest of its events. */
  async function openStream(client: A2aClient, text: string): Promise<{ taskId: string; rest: Promise<unknown[]> }> {
    const events = client.sendMessageStream(sendParams(text))[Symbol.asyncIterator]();
    const first = await events.next();
    const taskId = firstTaskId(first.value);
    assert.ok(taskId, 'the first event named the task');
    const rest = (async () => {
      const seen: unknown[] = [];
      for (let e = await events.next(); !e.done; e = await events.next()) seen.push(e.value);
      return seen;
    })();
    return { taskId, rest };
  }

  it('a third stream of one client is refused with 429 before it reaches the agent, over JSON-RPC and REST; other calls pass; an ended stream frees its place', async () => {
    const client = await factory('JSONRPC').createFromUrl(`${base}/agents/slow/`);
    const rest = await factory('HTTP+JSON').createFromUrl(`${base}/agents/slow/`);
    const a = await openStream(client, 'a');
    const b = await openStream(rest, 'b');
    const before = agent.received.length;
    await assert.rejects(openStream(client, 'c'), /429|too many open A2A streams/);
    await assert.rejects(openStream(rest, 'c'), /429|too many open A2A streams/);
    await assert.rejects(async () => {
      for await (const _ of client.resubscribeTask({ tenant: '', id: a.taskId })) break;
    }, /429|too many open A2A streams/);
    assert.deepEqual(agent.received.slice(before).filter((r) => r.method === 'POST'), [], 'no refused stream reached the agent');
    // A call that is not a stream is not counted.
    assert.equal((await client.getTask({ tenant: '', id: a.taskId, historyLength: 0 } as never)).id, a.taskId);
    slow.release(a.taskId);
    await a.rest;
    // The place is freed when the gateway has finished the exchange (its log hook): retry briefly.
    let c: Awaited<ReturnType<typeof openStream>> | undefined;
    for (let i = 0; i < 50 && !c; i++) c = await openStream(client, 'c').catch(() => new Promise<undefined>((r) => setTimeout(() => r(undefined), 50)));
    assert.ok(c, 'a new stream once one ended');
    slow.release(b.taskId);
    slow.release(c.taskId);
    await Promise.all([b.rest, c.rest]);
    assert.ok(gw.logs.some((l) => l.includes('"http.status":429') && l.includes('"a2a.method":"SendStreamingMessage"')), 'the refusal is logged with its method');
  });

  it('a reload that keeps the policy keeps its count: streams opened before it still hold their places', async () => {
    const client = await factory('JSONRPC').createFromUrl(`${base}/agents/slow/`);
    const a = await openStream(client, 'a');
    const b = await openStream(client, 'b');
    // Another route added: the config is compiled again, this route and its policy are unchanged.
    assert.equal(await gw.gateway.reload(stringify(config([{ matches: [{ path: { pathPrefix: '/other' } }], policies: { directResponse: { status: 204 } } }]))), true);
    assert.equal((await fetch(`${base}/other`)).status, 204, 'the reload was applied');
    await assert.rejects(openStream(client, 'c'), /429|too many open A2A streams/);
    slow.release(a.taskId);
    slow.release(b.taskId);
    await Promise.all([a.rest, b.rest]);
  });
});
