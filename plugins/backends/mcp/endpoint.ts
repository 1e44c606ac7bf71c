import type { Exchange, Reply } from 'switchyard/sdk';
import { TRANSPORT_ERROR, header, rpcReply } from './http-util.ts';
import { RpcCode, isValidMessage } from './jsonrpc.ts';
import type { RpcMessage } from './jsonrpc.ts';
import { Code20260728 } from './revisions/2026-07-28/protocol.ts';
import { loggableName } from './spans.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../lib/json-depth/json-depth.ts';
import type { ParsedPost, RevisionAdapter } from './revisions/revision.ts';

/** The body limit of MCP requests (BEHAVIOUR.md §8.3). */
export const MCP_BODY_LIMIT = 2 * 1024 * 1024;

/** Read a POST body as JSON-RPC 2.0: one message or a batch; else the error reply. */
export async function readMessages(ex: Exchange): Promise<{ messages: RpcMessage[]; batch: boolean } | Reply> {
  const body = await ex.bufferBody(MCP_BODY_LIMIT);
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return rpcReply(400, RpcCode.parseError, 'Parse error: the body is not valid JSON');
  }
  // Sent on to a target, a client's message is serialised again, which recurses: refused before, as the target's are.
  if (nestsDeeperThan(value, MAX_JSON_DEPTH)) return rpcReply(400, RpcCode.invalidRequest, `Invalid Request: JSON nested deeper than ${MAX_JSON_DEPTH} levels`, idOf(value));
  const batch = Array.isArray(value);
  const list = batch ? (value as unknown[]) : [value];
  if (list.length === 0) return rpcReply(400, RpcCode.invalidRequest, 'Invalid Request: empty batch');
  for (const m of list) {
    if (!isValidMessage(m)) return rpcReply(400, RpcCode.invalidRequest, 'Invalid Request: not a JSON-RPC 2.0 message', idOf(m));
  }
  return { messages: list as RpcMessage[], batch };
}

/** The id of a message to echo in its error: only when it is one (a number past 2^53 was read rounded: another id). */
function idOf(m: unknown): string | number | null {
  const id = typeof m === 'object' && m !== null ? (m as { id?: unknown }).id : undefined;
  return typeof id === 'string' || Number.isSafeInteger(id) ? (id as string | number) : null;
}

/**
 * The streamable-HTTP endpoint: the transport's checks (media types, the JSON-RPC body, a known
 * `MCP-Protocol-Version`), then the revision adapters, newest first, each serving what is its own (ADR 0031).
 */
export class McpEndpoint {
  /** Newest first. */
  private readonly revisions: readonly RevisionAdapter[];
  /** Oldest first: most requests name an `initialize` revision, whose check is a set lookup. */
  private readonly oldestFirst: readonly RevisionAdapter[];
  /** Every `MCP-Protocol-Version` the adapters serve, oldest first (for the error that lists them). */
  private readonly known: readonly string[];

  constructor(revisions: readonly RevisionAdapter[]) {
    this.revisions = revisions;
    this.oldestFirst = [...revisions].reverse();
    this.known = this.oldestFirst.flatMap((r) => r.versions);
  }

  handle(ex: Exchange): Promise<Reply> | Reply {
    if (ex.method === 'POST') return this.post(ex);
    for (const r of this.revisions) {
      const reply = r.other(ex);
      if (reply) return reply;
    }
    return rpcReply(405, TRANSPORT_ERROR, 'Method not allowed: use POST, GET or DELETE', null, { allow: 'GET, POST, DELETE' });
  }

  private async post(ex: Exchange): Promise<Reply> {
    const contentType = header(ex, 'content-type') ?? '';
    if (!contentType.toLowerCase().includes('application/json')) {
      return rpcReply(415, TRANSPORT_ERROR, 'Unsupported Media Type: Content-Type must be application/json');
    }
    const accept = (header(ex, 'accept') ?? '').toLowerCase();
    const sse = accept.includes('text/event-stream');
    const json = accept === '' || accept.includes('application/json') || accept.includes('*/*');
    if (!sse && !json) return rpcReply(406, TRANSPORT_ERROR, 'Not Acceptable: the client must accept application/json or text/event-stream');
    const parsed = await readMessages(ex);
    if (!('messages' in parsed)) return parsed;
    const first = parsed.messages[0]!;
    if (first.method !== undefined) ex.logField('mcp.method', loggableName(first.method) ?? 'unknown');
    const tool = first.method === 'tools/call' ? loggableName(first.params?.name) : undefined;
    if (tool !== undefined) ex.logField('mcp.tool', tool);
    const version = header(ex, 'mcp-protocol-version');
    // A value no revision claims is refused here; later dates are the newest revision's (it lists what it serves).
    if (version !== undefined && !this.oldestFirst.some((r) => r.claims(version))) {
      return rpcReply(
        400,
        Code20260728.unsupportedVersion,
        `Bad Request: unsupported protocol version ${version} (supported: ${this.known.join(', ')})`,
        parsed.batch ? null : (first.id ?? null),
        {},
        { supported: [...this.known], requested: version },
      );
    }
    const post: ParsedPost = { messages: parsed.messages, batch: parsed.batch, sse };
    for (const r of this.revisions) {
      const reply = r.post(ex, post);
      if (reply) return reply;
    }
    return rpcReply(400, RpcCode.invalidRequest, 'Invalid Request: no protocol revision serves this request', first.id ?? null);
  }
}
