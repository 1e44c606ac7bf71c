// Long A2A tasks through the `a2a` policy, with the @a2a-js/sdk agent and client (REAL-PEERS.md §3): a stream the
// client leaves and picks up again with resubscribe, and push-notification configs, which the gateway passes to
// the agent as sent (the agent, not the gateway, calls the webhook: ADR 0170).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import type { AgentCard } from '@a2a-js/sdk';
import { AgentEvent, DefaultPushNotificationSender, DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { fullPreset } from '../../plugins/presets/full.ts';
import { factory, sendParams, textPart } from '../helpers/a2a-agent.ts';
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

interface Seen {
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

describe('a2a long tasks', () => {
  const slow = new Slow();
  let agentServer: Server;
  let hookServer: Server;
  const received: Seen[] = [];
  const hooked: Seen[] = [];
  let hookPort: number;
  let gw: RunningGateway;
  let base: string;

  before(async () => {
    const express = ((await import('express' as string)) as { default: { (): any; json: () => unknown } }).default;
    const port = await freePort();
    const self = `http://127.0.0.1:${port}`;
    const card = {
      name: 'Slow Agent',
      description: 'completes when told',
      version: '1.0.0',
      supportedInterfaces: [{ url: `${self}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
      capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
      securitySchemes: {},
      securityRequirements: [],
      defaultInputModes: ['text'],
      defaultOutputModes: ['text'],
      skills: [{ id: 'slow', name: 'Slow', description: 'slow', tags: [], examples: [], inputModes: ['text'], outputModes: ['text'], securityRequirements: [] }],
      documentationUrl: '',
      signatures: [],
    } as unknown as AgentCard;
    const pushStore = new InMemoryPushNotificationStore();
    const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), slow, undefined, pushStore, new DefaultPushNotificationSender(pushStore));
    const app = express();
    app.use((req: { originalUrl: string; headers: IncomingHttpHeaders; on: Server['on'] }, _res: unknown, next: () => void) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => received.push({ url: req.originalUrl, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }));
      next();
    });
    app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
    app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
    app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
    agentServer = createServer(app);
    await new Promise<void>((resolve) => agentServer.listen(port, '127.0.0.1', resolve));

    // Stands for an address only the agent's network reaches (a metadata service, an admin port).
    hookPort = await freePort();
    hookServer = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        hooked.push({ url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
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
                    backends: [{ host: `127.0.0.1:${port}` }],
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
    for (const server of [agentServer, hookServer]) {
      server?.closeAllConnections();
      await new Promise((resolve) => server?.close(resolve));
    }
  });

  it('a client that leaves a stream resubscribes through the gateway and sees the task finish', async () => {
    const client = await factory('JSONRPC').createFromUrl(`${base}/agents/slow/`);
    const taskId = await startAndLeave(client, 'long');
    const seen = received.length;
    const events: unknown[] = [];
    const resubscribed = (async () => {
      for await (const event of client.resubscribeTask({ tenant: '', id: taskId })) events.push(event);
    })();
    await waitFor(() => received.slice(seen).some((r) => r.body.includes('"tasks/resubscribe"') || r.body.includes('"SubscribeToTask"')), 'the resubscribe at the agent');
    slow.release(taskId);
    await resubscribed;
    const last = events.at(-1) as { payload?: { $case: string; value: { status?: { state: TaskState } } } };
    assert.equal(last.payload?.$case, 'statusUpdate');
    assert.equal(last.payload.value.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.ok(received.slice(seen).every((r) => r.url.startsWith('/a2a/jsonrpc')), 'the resubscribe went through the gateway to the agent');
  });

  it('a push-notification config reaches the agent as sent, and the agent (not the gateway) calls its URL', async () => {
    const client = await factory('JSONRPC').createFromUrl(`${base}/agents/slow/`);
    const taskId = await startAndLeave(client, 'push');
    const url = `http://127.0.0.1:${hookPort}/internal/admin`;
    const seen = received.length;
    await client.createTaskPushNotificationConfig({ tenant: '', taskId, id: 'hook-1', url, token: 'client-token', authentication: undefined } as never);
    const set = received.slice(seen).find((r) => r.body.includes('hook-1'));
    assert.ok(set?.body.includes(url), 'the webhook URL reached the agent unchanged');
    slow.release(taskId);
    await waitFor(() => hooked.length > 0, 'the agent calling the webhook');
    assert.equal(hooked[0]!.url, '/internal/admin');
    // The call comes from the agent's HTTP client, not through the gateway (no forwarding headers of its own).
    assert.equal(hooked[0]!.headers['x-forwarded-for'], undefined);
  });
});
