import { mergedCapabilities, mergedInstructions, readyTargets } from '../../aggregate.ts';
import { RpcCode, RpcFailure, isRequest, resultMessage } from '../../jsonrpc.ts';
import type { RpcMessage } from '../../jsonrpc.ts';
import type { Call } from '../../responder.ts';
import { forward } from '../../router.ts';
import { SERVER_INFO } from '../../runtime.ts';
import type { Json } from '../../runtime.ts';
import type { McpSession } from '../../session.ts';
import type { TargetConn } from '../../target-conn.ts';
import type { SessionRevision } from '../revision.ts';
import { REV_2026_07_28, SUBSCRIPTION_ID_META_KEY, capabilities20260728, metaOf } from './protocol.ts';

/** The identity put in `_meta` of results to 2026-07-28 clients: the target's with one target, else the gateway's. */
export function serverInfoOf(s: McpSession): Json {
  if (s.rt.multiplexed) return { ...SERVER_INFO };
  const info = s.conns[0]!.initResult?.serverInfo;
  return info && typeof info === 'object' ? (info as Json) : { ...SERVER_INFO };
}

/**
 * `server/discover`. One target: one that speaks 2026-07-28 answers itself (forwarded as-is); an older one is
 * described from its `initialize` answer. Several: the versions every target supports (older targets: the revision
 * the gateway translates them to), capabilities merged as for `initialize`, the gateway's identity and instructions.
 */
async function discover(s: McpSession, call: Call, params: Json): Promise<void> {
  if (!s.rt.multiplexed) {
    const conn = s.conns[0]!;
    await s.readyOne(conn);
    if (conn.speaks20260728) return forward(s, call, conn, params);
    const init = conn.initResult ?? {};
    const result: Json = { supportedVersions: [REV_2026_07_28], capabilities: capabilities20260728(init.capabilities as Json | undefined) };
    if (typeof init.instructions === 'string') result.instructions = init.instructions;
    return s.finish(call, resultMessage(call.id, result));
  }
  const ready = await readyTargets(s, 'server/discover');
  let versions = [REV_2026_07_28];
  for (const c of ready) if (c.speaks20260728 && c.discovery) versions = versions.filter((v) => c.discovery!.supportedVersions.includes(v));
  if (versions.length === 0) {
    throw new RpcFailure(RpcCode.internalError, `the targets share no 2026-07-28-era protocol version (${ready.map((c) => c.name).join(', ')})`, 500);
  }
  const capabilities = mergedCapabilities(ready, { tools: {}, prompts: {}, resources: {} });
  const instructions = mergedInstructions(ready);
  s.finish(call, resultMessage(call.id, { supportedVersions: versions, capabilities, instructions }));
}

/**
 * `subscriptions/listen` (the revision's change-notification stream): passed to a single target that speaks
 * 2026-07-28, whose notifications (tagged with the subscription id) stream back on the call. Anything else cannot
 * be served.
 */
async function listen(s: McpSession, call: Call, params: Json): Promise<void> {
  if (!s.rt.multiplexed) {
    const conn = s.conns[0]!;
    await s.readyOne(conn);
    if (conn.speaks20260728) return forward(s, call, conn, params);
  }
  throw new RpcFailure(RpcCode.methodNotFound, 'Method not found: subscriptions/listen is served only when the route has one target that speaks 2026-07-28', 404);
}

/** What the 2026-07-28 revision changes in a session (revision.ts). */
export const SESSION_2026_07_28: SessionRevision = {
  revision: REV_2026_07_28,
  route(s, call, method, params) {
    if (method === 'server/discover') return discover(s, call, params);
    if (method === 'subscriptions/listen') return listen(s, call, params);
    return undefined;
  },
  fromTarget(s: McpSession, conn: TargetConn, m: RpcMessage): boolean {
    // An older target's question (sampling, elicitation, roots): an input-required round (inputs.ts).
    if (isRequest(m)) {
      s.inputs!.request(conn, m);
      return true;
    }
    // A 2026-07-28 target's subscription stream: its notifications name the listen request (our upstream id).
    const sub = metaOf(m.params)?.[SUBSCRIPTION_ID_META_KEY];
    if (sub === undefined) return false;
    for (const c of s.calls.values()) {
      if (!c.done && c.refs.some((r) => r.conn === conn && r.id === sub)) {
        c.responder.related(m);
        return true;
      }
    }
    return true;
  },
};
