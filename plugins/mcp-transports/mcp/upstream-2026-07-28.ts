import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { parseSseEvents, readCappedText } from 'switchyard/sdk';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import type { McpConnectOptions, McpDiscovery, McpUpstream } from '../../lib/mcp/upstream-contract.ts';

/** The revision spoken to targets that serve it. */
export const REV_2026_07_28 = '2026-07-28';
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
const CLIENT_INFO_META_KEY = 'io.modelcontextprotocol/clientInfo';
const CLIENT_CAPABILITIES_META_KEY = 'io.modelcontextprotocol/clientCapabilities';
const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `{ status, text }` of the SDK's HTTP errors (`SdkHttpError.data`). */
function httpErrorOf(err: unknown): { status: number; text: string | undefined } | undefined {
  const data = (err as { data?: { status?: unknown; text?: unknown } } | undefined)?.data;
  return typeof data?.status === 'number' ? { status: data.status, text: typeof data.text === 'string' ? data.text : undefined } : undefined;
}

/**
 * One client session's connection to a 2026-07-28 target, over the SDK v2 client transport. There is no handshake
 * and no session: every request is its own POST, and the transport derives `MCP-Protocol-Version`, `Mcp-Method` and
 * `Mcp-Name` from the request body (so the target sees in its headers the very name the gateway put in the body,
 * after removing its prefix). Cancellation aborts the request's response stream.
 */
export class Upstream20260728 implements McpUpstream {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  private readonly transport: StreamableHTTPClientTransport;
  private readonly inflight = new Map<string | number, AbortController>();

  constructor(url: URL, fetchFn: typeof fetch, options: McpConnectOptions) {
    this.transport = new StreamableHTTPClientTransport(url, {
      fetch: fetchFn,
      requestInit: options.headers ? { headers: { ...options.headers } } : undefined,
      protocolVersion: REV_2026_07_28,
    });
    this.transport.onmessage = (m) => {
      const id = (m as { id?: string | number }).id;
      if (!('method' in m) && id !== undefined) this.inflight.delete(id);
      this.onmessage?.(m);
    };
    this.transport.onerror = (e) => this.onerror?.(e);
    this.transport.onclose = () => this.onclose?.();
  }

  get sessionId(): undefined {
    return undefined;
  }

  start(): Promise<void> {
    return this.transport.start();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const m = message as { id?: string | number; method?: string };
    if (m.method === undefined || m.id === undefined) {
      await this.transport.send(message);
      return;
    }
    const controller = new AbortController();
    this.inflight.set(m.id, controller);
    try {
      await this.transport.send(message, { requestSignal: controller.signal });
    } catch (err) {
      this.inflight.delete(m.id);
      // A 2026-07-28 target answers some refusals with an HTTP status and a JSON-RPC error naming the request
      // (404 method-not-found, 400 header mismatch ...): that is its answer, not a transport failure.
      const http = httpErrorOf(err);
      if (http?.text) {
        try {
          const body = JSON.parse(http.text) as { id?: unknown; error?: unknown };
          if (body && body.id === m.id && isObject(body.error)) {
            this.onmessage?.(body as JSONRPCMessage);
            return;
          }
        } catch {
          // not JSON: a transport failure after all
        }
      }
      throw err;
    }
  }

  cancel(id: string | number): void {
    const c = this.inflight.get(id);
    this.inflight.delete(id);
    c?.abort(new Error('cancelled by the gateway'));
  }

  async close(): Promise<void> {
    for (const c of this.inflight.values()) c.abort(new Error('the connection closed'));
    this.inflight.clear();
    await this.transport.close();
  }
}

/** The most of a `server/discover` answer read (its JSON, or the SSE events before it). */
const MAX_DISCOVER_BYTES = 1024 * 1024;

/** The first JSON-RPC message answering `id` in a JSON or SSE body. */
function answerIn(text: string, contentType: string, id: string): Json | undefined {
  const candidates: unknown[] = [];
  if (contentType.includes('text/event-stream')) {
    // An oversized event is skipped like one that is not JSON: the answer may still follow.
    for (const { data } of parseSseEvents(text, { onOverflow: 'skip' })) {
      try {
        candidates.push(JSON.parse(data));
      } catch {
        // skip
      }
    }
  } else {
    try {
      const v = JSON.parse(text) as unknown;
      candidates.push(...(Array.isArray(v) ? v : [v]));
    } catch {
      return undefined;
    }
  }
  return candidates.find((c): c is Json => isObject(c) && c.id === id);
}

export type ProbeOutcome = { readonly kind: '2026-07-28'; readonly discovery: McpDiscovery } | { readonly kind: 'legacy' } | { readonly kind: 'unknown'; readonly reason: string };

/**
 * Ask a target whether it serves the 2026-07-28 revision: `server/discover` with the gateway's own envelope. A result
 * listing 2026-07-28 => that revision; a JSON-RPC error or a 4xx refusal (a 2025-era server: "not initialized",
 * unknown method, session required) => legacy; unreachable, 401/403 or 5xx => unknown (not cached).
 */
export async function probeDiscover(url: URL, fetchFn: typeof fetch, headers: Readonly<Record<string, string>> | undefined): Promise<ProbeOutcome> {
  const id = 'switchyard-discover';
  const body = {
    jsonrpc: '2.0',
    id,
    method: 'server/discover',
    params: {
      _meta: {
        [PROTOCOL_VERSION_META_KEY]: REV_2026_07_28,
        [CLIENT_INFO_META_KEY]: { name: 'switchyard', version: '0.1.0' },
        [CLIENT_CAPABILITIES_META_KEY]: {},
      },
    },
  };
  let res: Response;
  try {
    res = await fetchFn(url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': REV_2026_07_28,
        'mcp-method': 'server/discover',
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    return { kind: 'unknown', reason: (err as Error).message };
  }
  // Capped: a target that streams forever (or huge) is read no further than a discover answer can be.
  const text = res.body ? await readCappedText(Readable.fromWeb(res.body as NodeReadableStream), MAX_DISCOVER_BYTES).catch(() => '') : '';
  if (res.status === 401 || res.status === 403 || res.status >= 500) return { kind: 'unknown', reason: `HTTP ${res.status}` };
  if (!res.ok) return { kind: 'legacy' };
  const answer = answerIn(text, res.headers.get('content-type') ?? '', id);
  const result = answer?.result;
  if (!isObject(result) || !Array.isArray(result.supportedVersions) || !result.supportedVersions.includes(REV_2026_07_28)) return { kind: 'legacy' };
  const meta = isObject(result._meta) ? result._meta : undefined;
  const serverInfo = meta && isObject(meta[SERVER_INFO_META_KEY]) ? (meta[SERVER_INFO_META_KEY] as Json) : undefined;
  return {
    kind: '2026-07-28',
    discovery: {
      supportedVersions: result.supportedVersions.filter((v): v is string => typeof v === 'string'),
      capabilities: isObject(result.capabilities) ? result.capabilities : {},
      serverInfo,
      instructions: typeof result.instructions === 'string' ? result.instructions : undefined,
      result,
    },
  };
}
