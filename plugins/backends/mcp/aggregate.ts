import type { McpAuthorizer, McpItem } from '../../lib/mcp/authorizer.ts';
import { RpcCode, RpcFailure, initializeParamsProblem, resultMessage } from './jsonrpc.ts';
import { boundedName } from '../../lib/telemetry/known-names.ts';
import { fittedToolName, llmsTakeToolName, prefixName, prefixUri } from './naming.ts';
import type { Call } from './responder.ts';
import { relay, sent } from './router.ts';
import { SERVER_INFO, failureOf } from './runtime.ts';
import type { Json } from './runtime.ts';
import type { McpSession } from './session.ts';
import { MAX_LIST_BYTES, MAX_PAGES } from './target.ts';
import type { CompiledTarget } from './target.ts';
import type { TargetConn } from './target-conn.ts';

type ItemKind = McpItem['kind'];

/** Targets (of the live configs) whose prefixed tool names LLM APIs refuse were logged: once per target and config. */
const refusedNamesLogged = new WeakSet<CompiledTarget>();
/** Names quoted on that line. */
const REFUSED_NAMES_QUOTED = 3;

const PREAMBLE =
  'This MCP server is a gateway in front of several MCP servers (targets). Tools and prompts are named `<target>_<name>`; resource URIs are `<target>+<uri>`.';

/**
 * Several targets behind one endpoint (SPEC §4.3, BEHAVIOUR §4.4): starting them all (failOpen or failClosed), the
 * merged `initialize` answer, list calls fanned out and merged, broadcasts.
 */

/**
 * Start every target and return the ones that are up. A failure fails the call (failClosed), or is logged and
 * left out (failOpen) unless every target failed.
 */
export async function readyTargets(s: McpSession, method: string): Promise<TargetConn[]> {
  const settled = await Promise.allSettled(s.conns.map((c) => c.ready()));
  const failed = settled.flatMap((r, i) => (r.status === 'rejected' ? [{ conn: s.conns[i]!, error: r.reason as Error }] : []));
  if (failed.length > 0) {
    const message = failed.map((f) => f.error.message).join('; ');
    // The first failure sets the code and status (a target at its limit: 503; one that did not start in time: 504).
    const first = failureOf(failed[0]!.error);
    if (!s.rt.failOpen || failed.length === s.conns.length) throw new RpcFailure(first.code, message, first.httpStatus);
    for (const f of failed) s.logger.warn(`MCP target unavailable at ${method}; continuing without it (failOpen)`, { target: f.conn.name, error: f.error.message });
  }
  return s.conns.filter((c) => c.state === 'ready');
}

/** The gateway's preamble followed by each target's own instructions, labelled by target. */
export function mergedInstructions(ready: readonly TargetConn[]): string {
  let instructions = PREAMBLE;
  for (const c of ready) {
    const text = c.initResult?.instructions;
    if (typeof text === 'string' && text.trim() !== '') instructions += `\n\n[${c.name}]\n${text}`;
  }
  return instructions;
}

/** Server capabilities any of `ready` has (the capability object of each is the revision's: `flags`). */
export function mergedCapabilities(ready: readonly TargetConn[], flags: { tools: Json; prompts: Json; resources: Json }): Json {
  const has = (cap: string): boolean => ready.some((c) => c.capabilities?.includes(cap));
  const capabilities: Json = {};
  if (has('tools')) capabilities.tools = flags.tools;
  if (has('prompts')) capabilities.prompts = flags.prompts;
  if (has('resources')) capabilities.resources = flags.resources;
  if (has('logging')) capabilities.logging = {};
  if (has('completions')) capabilities.completions = {};
  return capabilities;
}

/** Start every target; the `initialize` answer: one target's as-is, or the merged answer (§4.4). */
export async function initializeResult(s: McpSession): Promise<{ protocolVersion: string; result: Json }> {
  const problem = initializeParamsProblem(s.initParams);
  if (problem) throw new RpcFailure(RpcCode.invalidParams, `Invalid params: initialize needs ${problem}`, 400);
  if (!s.rt.multiplexed) {
    const conn = s.conns[0]!;
    await s.readyOne(conn);
    return { protocolVersion: conn.protocolVersion!, result: conn.initResult! };
  }
  const ready = await readyTargets(s, 'initialize');
  const protocolVersion = ready.map((c) => c.protocolVersion!).sort()[0]!;
  const subscribe = s.rt.stateful && ready.some((c) => (c.initResult?.capabilities as Json | undefined)?.resources && ((c.initResult!.capabilities as Json).resources as Json).subscribe === true);
  const capabilities = mergedCapabilities(ready, {
    tools: { listChanged: true },
    prompts: { listChanged: true },
    resources: subscribe ? { listChanged: true, subscribe: true } : { listChanged: true },
  });
  const instructions = mergedInstructions(ready);
  return { protocolVersion, result: { protocolVersion, capabilities, serverInfo: { ...SERVER_INFO }, instructions } };
}

function nameOf(kind: ItemKind, key: string, item: Json): string | undefined {
  if (kind !== 'resource') return typeof item.name === 'string' ? item.name : undefined;
  const v = key === 'resourceTemplates' ? item.uriTemplate : item.uri;
  return typeof v === 'string' ? v : undefined;
}

/**
 * Whether a list item has what clients require of it (the MCP schema: a tool's `name` and `inputSchema`, a prompt's
 * `name`, a resource's `uri` and `name`, a template's `uriTemplate` and `name`); other lists' items need to be objects.
 */
function wellFormed(key: string, item: unknown): item is Json {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return false;
  const i = item as Json;
  switch (key) {
    case 'tools':
      return typeof i.name === 'string' && typeof i.inputSchema === 'object' && i.inputSchema !== null && !Array.isArray(i.inputSchema);
    case 'prompts':
      return typeof i.name === 'string';
    case 'resources':
      return typeof i.uri === 'string' && typeof i.name === 'string';
    case 'resourceTemplates':
      return typeof i.uriTemplate === 'string' && typeof i.name === 'string';
    default:
      return true;
  }
}

/** `logging/setLevel` when multiplexed: every target that logs gets it; the answer is empty. */
export async function broadcast(s: McpSession, call: Call, params: Json, capability: string): Promise<void> {
  const targets = s.conns.filter((c) => c.has(capability) && c.state !== 'down');
  await Promise.all(
    targets.map((c) =>
      c.request(call.method, params, sent(call, c), call.requestId).then(
        (answer) => {
          if (answer.error) s.logger.debug('MCP target refused a broadcast request', { target: c.name, method: call.method, error: answer.error.message });
        },
        (err: Error) => s.logger.warn('MCP target failed a broadcast request', { target: c.name, method: call.method, error: err.message }),
      ),
    ),
  );
  s.finish(call, resultMessage(call.id, {}));
}

/**
 * A list call. One target: forwarded as-is (its pagination passes through), filtered by the authorizer.
 * Several: fanned out concurrently, each target's pages followed to the end, merged, prefixed and filtered.
 */
export async function list(s: McpSession, call: Call, params: Json, capability: string, key: string, kind: ItemKind | undefined, auth: McpAuthorizer | undefined): Promise<void> {
  if (!s.rt.multiplexed) {
    const conn = s.conns[0]!;
    const answer = await conn.request(call.method, params, sent(call, conn), call.requestId);
    const items = answer.result?.[key];
    if (Array.isArray(items)) declare(conn, key, items);
    if (auth && kind && Array.isArray(items)) {
      answer.result![key] = (items as Json[]).filter((item) => {
        const name = nameOf(kind, key, item);
        return name !== undefined && auth({ kind, target: conn.name, name, method: call.method });
      });
    }
    return relay(s, call, conn, answer);
  }
  const targets = s.conns.filter((c) => c.has(capability));
  const started = performance.now();
  const settled = await Promise.allSettled(targets.map((c) => pages(s, call, c, params, key)));
  s.rt.metrics?.listFanOut.observe({ mcp_method_name: call.method }, (performance.now() - started) / 1000);
  const merged: Json[] = [];
  // A shortened tool name equal to another tool's name (a hash collision, or a target naming a tool so) is left out.
  const toolNames = new Set<string>();
  const failures: string[] = [];
  settled.forEach((r, i) => {
    const conn = targets[i]!;
    if (r.status === 'fulfilled') declare(conn, key, r.value);
    if (r.status === 'rejected') {
      failures.push((r.reason as Error).message);
      if (s.rt.failOpen) s.logger.warn('MCP target left out of a list (failOpen)', { target: conn.name, method: call.method, error: (r.reason as Error).message });
      return;
    }
    const refused: string[] = [];
    for (const item of r.value) {
      const name = kind ? nameOf(kind, key, item) : undefined;
      if (kind && auth && (name === undefined || !auth({ kind, target: conn.name, name, method: call.method }))) continue;
      if (key === 'tools') {
        const fitted = fittedTool(conn, item.name as string);
        if (toolNames.has(fitted)) {
          s.logger.warn('left out an MCP tool whose shortened name another tool has', { target: conn.name, name: boundedName(item.name) ?? `${(item.name as string).slice(0, 256)}...` });
          continue;
        }
        toolNames.add(fitted);
        item.name = fitted;
        if (!llmsTakeToolName(fitted)) refused.push(fitted);
      } else if (key === 'prompts') item.name = prefixName(conn.name, item.name as string);
      else if (key === 'resources') item.uri = prefixUri(conn.name, item.uri as string);
      else if (key === 'resourceTemplates') item.uriTemplate = prefixUri(conn.name, item.uriTemplate as string);
      else if (key === 'tasks' && typeof item.taskId === 'string') item.taskId = prefixUri(conn.name, item.taskId);
      merged.push(item);
    }
    if (refused.length > 0 && !refusedNamesLogged.has(conn.target)) {
      // The tool's own part is its server's choice; the operator can only rename the target or ask for other names.
      refusedNamesLogged.add(conn.target);
      s.logger.warn('MCP target lists tools whose names LLM APIs refuse once prefixed (not letters, digits, `_`, `-`, or a target name too long to shorten them)', {
        target: conn.name,
        count: refused.length,
        names: refused.slice(0, REFUSED_NAMES_QUOTED).map((n) => boundedName(n) ?? `${n.slice(0, 256)}...`),
      });
    }
  });
  if (failures.length > 0 && (!s.rt.failOpen || failures.length === targets.length)) {
    throw new RpcFailure(RpcCode.internalError, failures.join('; '), 500);
  }
  s.finish(call, resultMessage(call.id, { [key]: merged }));
}

/** `<target>_<name>`, shortened to 64 characters when longer; a shortened name is noted to route calls back. */
function fittedTool(conn: TargetConn, name: string): string {
  const fitted = fittedToolName(conn.name, name);
  if (fitted.length !== conn.name.length + 1 + name.length) conn.target.names.shortened.note(fitted.slice(conn.name.length + 1), name);
  return fitted;
}

/**
 * The tool a shortened name stands for, listing the target's tools again when this process has not seen it (another
 * replica listed them, or the gateway restarted); undefined when the target lists none that shortens to it.
 */
export async function shortenedTool(s: McpSession, call: Call, conn: TargetConn, shortened: string): Promise<string | undefined> {
  const known = conn.target.names.shortened.get(shortened);
  if (known !== undefined || !conn.target.names.shortened.relistDue()) return known;
  for (const item of await pages(s, call, conn, {}, 'tools', 'tools/list')) fittedTool(conn, item.name as string);
  return conn.target.names.shortened.get(shortened);
}

/** The tool or prompt names a target's list declares: span names and metric labels from now on (ADR 0130). */
function declare(conn: TargetConn, key: string, items: readonly unknown[]): void {
  const names = key === 'tools' ? conn.target.names.tool : key === 'prompts' ? conn.target.names.prompt : undefined;
  if (names === undefined) return;
  for (const item of items) {
    const name = (item as Json | null)?.name;
    if (typeof name === 'string') names.vouch(name);
  }
}

/** Whether `item`'s name (URI, template) is not in `seen`; adds it. Items of lists without names are all unique. */
function unique(key: string, item: Json, seen: Set<string>): boolean {
  const name = key === 'tools' || key === 'prompts' ? item.name : key === 'resources' ? item.uri : key === 'resourceTemplates' ? item.uriTemplate : undefined;
  if (typeof name !== 'string') return true;
  if (seen.has(name)) return false;
  seen.add(name);
  return true;
}

/** Every page of one target's list. A target without the method contributes nothing. */
async function pages(s: McpSession, call: Call, conn: TargetConn, params: Json, key: string, method = call.method): Promise<Json[]> {
  const items: Json[] = [];
  const meta = params._meta;
  let cursor: unknown;
  let bytes = 0;
  // A cursor followed already means the pages loop; a name seen already would reach the client twice (LLM APIs
  // refuse a tool list with duplicate names): the first page's item is kept.
  const cursors = new Set<string>();
  const names = new Set<string>();
  let repeatsLogged = false;
  for (let page = 0; page < MAX_PAGES; page++) {
    const p: Json = {};
    if (meta !== undefined) p._meta = meta;
    if (cursor !== undefined) p.cursor = cursor;
    const answer = await conn.request(method, p, sent(call, conn), call.requestId);
    if (answer.error) {
      if (answer.error.code === RpcCode.methodNotFound) return items;
      throw conn.error(`answered \`${method}\` with an error: ${answer.error.message}`);
    }
    const list = answer.result?.[key];
    // An answer without its list contributes nothing (lenient: some servers answer `{}` when they have none), said once.
    if (!Array.isArray(list)) {
      s.logger.warn('MCP target answered a list without its items', { target: conn.name, method, expected: key });
      return items;
    }
    let malformed = 0;
    let repeated = 0;
    for (const item of list) {
      if (!wellFormed(key, item)) malformed++;
      else if (!unique(key, item, names)) repeated++;
      else items.push(item);
    }
    // Merged, one malformed item would make the client refuse the whole list, every target's tools with it.
    if (malformed > 0) s.logger.warn('left out malformed MCP list items', { target: conn.name, method, count: malformed });
    if (repeated > 0 && !repeatsLogged) {
      repeatsLogged = true;
      s.logger.warn('left out MCP list items whose names the target listed already', { target: conn.name, method, count: repeated });
    }
    cursor = answer.result?.nextCursor;
    if (typeof cursor !== 'string' || cursor === '') return items;
    if (cursors.has(cursor)) {
      s.logger.warn('stopped following an MCP target list: it repeated a cursor', { target: conn.name, method, pages: page + 1 });
      return items;
    }
    cursors.add(cursor);
    // Measured only for a list that pages: a single page is bounded by the transport already.
    bytes += JSON.stringify(list).length;
    if (bytes >= MAX_LIST_BYTES) {
      s.logger.warn('stopped following an MCP target list: its items passed the size limit', { target: conn.name, method, pages: page + 1, bytes });
      return items;
    }
  }
  s.logger.warn('stopped following an MCP target list after too many pages', { target: conn.name, method, pages: MAX_PAGES });
  return items;
}
