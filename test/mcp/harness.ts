// Shared wiring of the MCP tests: the preset with the MCP plugins, real upstream servers started by PID, SDK clients.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { fullPresetWith } from '../helpers/preset.ts';
import mcpBackend from '../../plugins/backends/mcp/plugin.ts';
import stdio from '../../plugins/mcp-transports/stdio/plugin.ts';
import sse from '../../plugins/mcp-transports/sse/plugin.ts';
import mcpStreamable from '../../plugins/mcp-transports/mcp/plugin.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const MEMORY = join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
export const NODE = process.execPath;

/** The full preset plus the MCP plugins (the lines plugins/presets/full.ts is to gain). */
export const mcpPreset = fullPresetWith(mcpBackend, stdio, sse, mcpStreamable);

export const everythingStdio = (name = 'everything'): Record<string, unknown> => ({ name, stdio: { cmd: NODE, args: [EVERYTHING, 'stdio'] } });
export const memoryStdio = (name = 'memory'): Record<string, unknown> => {
  const dir = testTempDir('switchyard-memory-');
  return { name, stdio: { cmd: NODE, args: [MEMORY], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } } };
};

export interface McpGateway extends RunningGateway {
  readonly port: number;
  /** The MCP endpoint (`/mcp`). */
  readonly mcpUrl: URL;
  readonly sseUrl: URL;
  /** PIDs of stdio targets the gateway started, from its logs. */
  stdioPids(): number[];
}

/** A gateway with one route whose only backend is `mcp: <mcp>`; extra route policies and static config optional. */
export async function startMcpGateway(
  mcp: Record<string, unknown>,
  options: { policies?: Record<string, unknown>; staticConfig?: Record<string, unknown>; preset?: readonly unknown[]; env?: NodeJS.ProcessEnv } = {},
): Promise<McpGateway> {
  const port = await freePort();
  const route: Record<string, unknown> = { backends: [{ mcp }] };
  if (options.policies) route.policies = options.policies;
  const gw = await startGateway(
    {
      config: { logging: { format: 'json', level: 'debug' }, drainTimeout: '500ms', ...options.staticConfig },
      binds: [{ port, listeners: [{ routes: [route] }] }],
    },
    { preset: options.preset ?? mcpPreset, env: options.env },
  );
  return {
    ...gw,
    port,
    mcpUrl: new URL(`http://127.0.0.1:${port}/mcp`),
    sseUrl: new URL(`http://127.0.0.1:${port}/sse`),
    stdioPids: () => {
      const pids: number[] = [];
      for (const line of gw.logs) {
        if (!line.includes('stdio target process started')) continue;
        const pid = (JSON.parse(line) as { pid?: number }).pid;
        if (typeof pid === 'number') pids.push(pid);
      }
      return pids;
    },
  };
}

/** Logs as parsed JSON records. */
export { logRecords as records } from '../helpers/gateway.ts';

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export interface UpstreamServer {
  readonly port: number;
  readonly pid: number;
  readonly output: string[];
  stop(): Promise<void>;
}

/** Upstream servers started here, killed (by PID) if the test process exits without stopping them. */
const started = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** server-everything in `sse` or `streamableHttp` mode on a free port (it binds every interface; we use 127.0.0.1). */
export async function startEverything(mode: 'sse' | 'streamableHttp', fixedPort?: number): Promise<UpstreamServer> {
  const port = fixedPort ?? (await freePort());
  const child: ChildProcess = spawn(NODE, [EVERYTHING, mode], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(child);
  child.once('exit', () => started.delete(child));
  const output: string[] = [];
  child.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
  child.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
  // A Node process start takes seconds on a loaded machine (a fixed 10 s made tests flaky): wait while it runs (60 s
  // at most), fail at once if it exits, and never leave it behind (its pipes would keep the test file alive).
  try {
    await waitFor(() => {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server-everything ${mode} exited (${child.exitCode ?? child.signalCode}): ${output.join('')}`);
      return portOpen(port);
    }, `server-everything ${mode} on ${port}`, 60_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    port,
    pid: child.pid!,
    output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        // An upstream that ignores SIGTERM must not keep the test file alive.
        setTimeout(() => child.kill('SIGKILL'), 2000).unref();
      }),
  };
}

export interface ClientOptions {
  capabilities?: Record<string, unknown>;
  name?: string;
  sessionId?: string;
  /** Extra headers on every request of the client. */
  headers?: Record<string, string>;
}

/** An SDK v1 client over streamable HTTP. */
export async function connectClient(url: URL, options: ClientOptions = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: options.name ?? 'switchyard-test', version: '1.0.0' }, { capabilities: (options.capabilities ?? {}) as never });
  const transport = new StreamableHTTPClientTransport(url, {
    ...(options.sessionId ? { sessionId: options.sessionId } : {}),
    ...(options.headers ? { requestInit: { headers: options.headers } } : {}),
  });
  await client.connect(transport);
  return { client, transport };
}

/** An SDK v1 client over the legacy SSE transport. */
export async function connectSseClient(url: URL, options: ClientOptions = {}): Promise<{ client: Client; transport: SSEClientTransport }> {
  const client = new Client({ name: options.name ?? 'switchyard-test', version: '1.0.0' }, { capabilities: (options.capabilities ?? {}) as never });
  const transport = new SSEClientTransport(url);
  await client.connect(transport);
  return { client, transport };
}

/** POST one raw JSON-RPC body (string) to the gateway, as a client would, and return status, headers and text. */
export async function rawPost(url: URL, body: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The JSON-RPC messages of an SSE body (or the one JSON body). */
export function messagesOf(text: string): Record<string, unknown>[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const v = JSON.parse(trimmed) as unknown;
    return (Array.isArray(v) ? v : [v]) as Record<string, unknown>[];
  }
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l.trim() !== 'data:') // priming events carry an id and empty data
    .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
}

export const INIT = (id: number | string = 1): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

export const FIXTURE = join(ROOT, 'test/mcp/fixtures/fixture-server.ts');
export const fixtureStdio = (name = 'fixture'): Record<string, unknown> => ({ name, stdio: { cmd: NODE, args: [FIXTURE] } });
