// WebSocket helpers for the realtime and Live tests: a client session (the messages it got, parsed, a large one
// summarised, and how it closed, bounded: a session the gateway does not close is a failure, not a hang) and a
// loopback provider stand-in.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

export interface WsSession {
  ws: WebSocket;
  messages: Record<string, unknown>[];
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens `url`; each message is parsed, one over 1000 characters kept as `large(text)`. */
export async function openWsSession(url: string, headers: Record<string, string>, large: (text: string) => Record<string, unknown>): Promise<WsSession> {
  const ws = new WebSocket(url, { headers });
  const messages: Record<string, unknown>[] = [];
  ws.on('message', (data) => {
    const text = data.toString();
    messages.push(text.length > 1000 ? large(text) : (JSON.parse(text) as Record<string, unknown>));
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the session was not closed')), 5000);
    ws.once('close', (code, reason) => {
      clearTimeout(timer);
      resolve({ code, reason: reason.toString() });
    });
  });
  closed.catch(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, messages, closed };
}

/** A loopback WebSocket provider stand-in: the upgrade requests it got, in order. */
export interface WsProvider {
  /** `127.0.0.1:<port>`, for `ai.hostOverride`. */
  readonly hostPort: string;
  readonly upgrades: IncomingMessage[];
  close(): Promise<void>;
}

/** Starts a provider that answers each text message with `echo:<text>` (or runs `onConnection` instead). */
export async function startWsProvider(onConnection?: (socket: WebSocket, req: IncomingMessage) => void): Promise<WsProvider> {
  const server = createServer();
  const wss = new WebSocketServer({ server });
  const upgrades: IncomingMessage[] = [];
  wss.on('connection', (socket, req) => {
    upgrades.push(req);
    if (onConnection) return onConnection(socket, req);
    socket.on('message', (data) => socket.send(`echo:${data.toString()}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    hostPort: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    upgrades,
    close: () => {
      wss.close();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/**
 * Opens `url` through the gateway (with `protocols` and `headers`), exchanges one message with an echoing provider and
 * closes: the upgrade request the provider got and the subprotocol the client was given.
 */
export async function echoUpgrade(provider: WsProvider, url: string, headers: Record<string, string> = {}, protocols: string[] = []): Promise<{ req: IncomingMessage; protocol: string }> {
  const ws = new WebSocket(url, protocols, { headers });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const reply = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
  ws.send('hi');
  assert.equal(await reply, 'echo:hi');
  ws.close();
  return { req: provider.upgrades.at(-1)!, protocol: ws.protocol };
}
