// The @a2a-js/sdk echo agent (A2A v1.0, JSON-RPC and HTTP+JSON, with its v0.3 compat layer) on a free loopback
// port, and the same SDK's client, for tests that drive A2A through the gateway (REAL-PEERS.md §3).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import type { AgentCard, Message, Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { AgentEvent, DefaultPushNotificationSender, DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { freePort } from './ports.ts';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export interface EchoAgent {
  readonly port: number;
  readonly base: string;
  readonly received: Seen[];
  close(): Promise<void>;
}

export const textPart = (value: string) => ({ content: { $case: 'text' as const, value }, metadata: undefined, filename: '', mediaType: 'text/plain' });

/** Answers every message with a task that completes with `echo: <text>` (REAL-PEERS.md appendix). */
class Echo implements AgentExecutor {
  cancelTask = async (): Promise<void> => {};
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const text = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(' ');
    const { taskId, contextId } = ctx;
    const now = () => new Date().toISOString();
    bus.publish(
      AgentEvent.task(
        ctx.task ?? { id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now(), message: undefined }, artifacts: [], history: [ctx.userMessage], metadata: {} },
      ),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: {
          state: TaskState.TASK_STATE_COMPLETED,
          timestamp: now(),
          message: { role: Role.ROLE_AGENT, messageId: randomUUID(), parts: [textPart(`echo: ${text}`)], taskId, contextId, extensions: [], metadata: {}, referenceTaskIds: [] },
        },
        metadata: {},
      }),
    );
    bus.finished();
  }
}

/** The skill only the extended agent card lists (`startEchoAgent({ extendedCard: true })`). */
export const EXTENDED_SKILL = 'echo-extended';

export interface AgentOptions {
  /** The card says the agent has an extended card, which lists one more skill. */
  readonly extendedCard?: boolean;
  /** What answers messages (default: the echo). */
  readonly executor?: AgentExecutor;
  /** The agent keeps push-notification configs and calls their URLs with its default sender. */
  readonly pushNotifications?: boolean;
}

/** The a2a-js echo agent on 127.0.0.1: card at /.well-known/agent-card.json, JSON-RPC at /a2a/jsonrpc, REST at /a2a/rest. */
export async function startEchoAgent(options: AgentOptions = {}): Promise<EchoAgent> {
  // express ships with @a2a-js/sdk (its peer) but has no types here.
  const express = ((await import('express' as string)) as { default: () => any }).default;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const card = {
    name: 'Echo Agent',
    description: 'echoes text',
    version: '1.0.0',
    supportedInterfaces: [
      { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
      { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
      { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    capabilities: { streaming: true, pushNotifications: options.pushNotifications === true, extensions: [], extendedAgentCard: options.extendedCard === true },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [{ id: 'echo', name: 'Echo', description: 'echo', tags: ['echo'], examples: ['hi'], inputModes: ['text'], outputModes: ['text'], securityRequirements: [] }],
    documentationUrl: '',
    signatures: [],
  } as unknown as AgentCard;
  const extended = { ...card, skills: [...card.skills, { ...card.skills[0]!, id: EXTENDED_SKILL, name: 'Extended echo' }] } as AgentCard;
  const extendedProvider = options.extendedCard ? async () => extended : undefined;
  const pushStore = options.pushNotifications ? new InMemoryPushNotificationStore() : undefined;
  const pushSender = pushStore && new DefaultPushNotificationSender(pushStore);
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), options.executor ?? new Echo(), undefined, pushStore, pushSender, extendedProvider);
  const received: Seen[] = [];
  const app = express();
  app.use((req: { method: string; originalUrl: string; headers: IncomingHttpHeaders }, _res: unknown, next: () => void) => {
    received.push({ method: req.method, url: req.originalUrl, headers: req.headers });
    next();
  });
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, legacyCompat: { enabled: true } }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    base,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function factory(prefer: 'JSONRPC' | 'HTTP+JSON' = 'JSONRPC'): ClientFactory {
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory(), new RestTransportFactory()],
      preferredTransports: [prefer],
    }),
  );
}

export function userMessage(text: string): Message {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [textPart(text)],
    taskId: '',
    contextId: '',
    extensions: [],
    metadata: {},
    referenceTaskIds: [],
  } as unknown as Message;
}

export const sendParams = (text: string) => ({ tenant: '', message: userMessage(text), configuration: undefined, metadata: {} });

/** The text of the agent's status message of a completed task. */
export function echoText(result: Message | Task): string {
  const task = result as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  const part = task.status?.message?.parts[0]?.content;
  return part?.$case === 'text' ? part.value : '';
}

