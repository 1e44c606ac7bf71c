import { resolve } from 'node:path';
import type { CallToolResult, Implementation, Tool } from '@modelcontextprotocol/sdk/types.js';
import { notChecked, readCapped } from 'switchyard/sdk';
import type { BackendCompileContext, CompileContext, PolicySet, UpstreamTarget } from 'switchyard/sdk';
import { handFetcher } from '../../lib/live-fetcher/live-fetcher.ts';
import { McpDeadlineError, formatMs, isUpstreamTimeout, mcpDeadlines } from '../../lib/mcp/deadlines.ts';
import type { McpDeadlines } from '../../lib/mcp/deadlines.ts';
import type { McpConnectOptions, McpTransportInstance } from '../../lib/mcp/upstream-contract.ts';
import { buildRequest, errorResult, toToolResult } from './call.ts';
import { parseConnection } from './connection.ts';
import { documentFetcher, readDocumentFile } from './document.ts';
import type { FetchedDocument } from './document.ts';
import { FileDocument, MAX_WARNINGS, REFRESH_TIMING, RemoteDocument } from './document-source.ts';
import type { DocumentSource, LoadedDocument } from './document-source.ts';
import { OpenApiSession } from './session.ts';
import type { ToolHandler } from './session.ts';
import type { OpenApiTool } from './tools.ts';
import { shownUrl } from '../../lib/credentials/shown-url.ts';

/** The value of an `openapi` target after validation (schema.json). */
export interface OpenApiTargetConfig {
  host: string;
  port?: number;
  path?: string;
  schema: { file?: string; url?: string };
}

/** The largest API answer read into a tool result. */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** The document's file, or its URL as messages show it (errors reach MCP clients; a query may carry a key). */
function documentSource(config: OpenApiTargetConfig): string {
  const url = config.schema.url;
  if (config.schema.file !== undefined || url === undefined) return config.schema.file ?? '';
  return URL.canParse(url) ? shownUrl(new URL(url)) : url;
}

/**
 * The source of the document named by `schema`, loaded (failing the config load at `schema.file` / `schema.url`)
 * and kept up to date from then on: kept in the resource cache, one per file or URL, across reloads (ADR 0137).
 */
async function loadDocument(config: OpenApiTargetConfig, ctx: CompileContext): Promise<{ source: DocumentSource; loaded: LoadedDocument; label: string; field: string }> {
  const field = config.schema.file !== undefined ? 'file' : 'url';
  const label = `\`${documentSource(config)}\``;
  if (ctx.checkOnly) notChecked(ctx, `the OpenAPI document ${label}`, ['schema', field]);
  let source: DocumentSource;
  if (field === 'file') {
    const path = resolve(ctx.cwd, config.schema.file!);
    const read = (): Promise<string> => readDocumentFile(config.schema.file!, ctx.cwd, ctx.sharedFetches);
    const file = ctx.resources.get(`openapi:file:${path}`, () => new FileDocument(path, label, ctx.logger.child({ openapi: path }), read), (f) => f.dispose());
    file.setReader(read);
    file.watch();
    source = file;
  } else {
    const url = config.schema.url!;
    let fetchNow: () => Promise<FetchedDocument>;
    try {
      fetchNow = documentFetcher(url, ctx.http);
    } catch (err) {
      return ctx.fail((err as Error).message, ['schema', field]);
    }
    // Once per change for the whole gateway, however many workers it runs (as a JWKS is).
    const shared = async (): Promise<FetchedDocument> => {
      const got = await ctx.sharedFetches.fetch(`openapi:url:${url}`, { maxAgeMs: REFRESH_TIMING.minMs, after: remote.fetchedAt }, fetchNow);
      remote.fetchedAt = got.at;
      return got.value;
    };
    const key = `openapi:url:${url}`;
    const remote = ctx.resources.get(key, () => new RemoteDocument(label, ctx.logger.child({ openapi: url }), shared, url), (r) => r.dispose());
    handFetcher(ctx, key, remote, shared);
    source = remote;
  }
  try {
    await source.load();
  } catch (err) {
    return ctx.fail((err as Error).message, ['schema', field]);
  }
  return { source, loaded: source.current!, label, field };
}

/** What a target serves from one version of its document. */
interface TargetView {
  readonly serverInfo: Implementation;
  readonly tools: readonly Tool[];
  readonly byName: ReadonlyMap<string, OpenApiTool>;
  readonly basePath: string;
}

/** The base path `path` gives, else the document's first server's. */
function viewOf(loaded: LoadedDocument, configured: string | undefined): TargetView {
  const info = (loaded.doc.info ?? {}) as Record<string, unknown>;
  return {
    serverInfo: {
      name: 'openapi',
      version: typeof info.version === 'string' ? info.version : '0.0.0',
      ...(typeof info.title === 'string' ? { title: info.title } : {}),
    },
    tools: loaded.tools.map((t) => t.tool),
    byName: new Map(loaded.tools.map((t) => [t.tool.name, t])),
    basePath: configured ?? loaded.server.path,
  };
}

/**
 * Compile an `openapi` target: resolve the connection, load and convert the document (every failure is a
 * config error at the field concerned), and return the transport whose `connect` makes an in-process MCP
 * server per client session. Calls go through one pooled upstream, built by `configure` with the target's
 * effective policies (`backendTLS`: TLS settings and https for a scheme-less `host`; `timeout`: the deadline of
 * each call, else the `config.defaultTimeouts` response and idle deadlines), or with the backend's policies when
 * `configure` was not called. A call that runs out of time is a JSON-RPC error naming the target and the deadline.
 *
 * Base path: `path` (or the path of a `host` URL) when given, else the path of the operation's (or its path
 * item's) first `servers[].url`, else the document's, else none.
 *
 * The document is read again when it changes (a file) or expires (a URL): sessions opened after see its tools,
 * and live ones are sent `notifications/tools/list_changed` (ADR 0137).
 */
export async function compileOpenApiTarget(config: OpenApiTargetConfig, ctx: CompileContext): Promise<McpTransportInstance> {
  const compilePolicies = (ctx as Partial<BackendCompileContext>).policies;
  const first = parseConnection(config, compilePolicies?.facets.tls !== undefined);
  if ('field' in first) return ctx.fail(first.message, [first.field]);

  const { source, loaded, label, field } = await loadDocument(config, ctx);
  for (const warning of loaded.warnings.slice(0, MAX_WARNINGS)) ctx.warn(`OpenAPI document ${label}: ${warning}`, ['schema', field]);
  if (loaded.warnings.length > MAX_WARNINGS) {
    ctx.warn(`OpenAPI document ${label}: ${loaded.warnings.length - MAX_WARNINGS} more warnings not shown`, ['schema', field]);
  }
  if (loaded.tools.length === 0) ctx.warn(`the OpenAPI document ${label} has no operations, so this target offers no tools`, ['schema', field]);

  let view = viewOf(loaded, first.basePath);
  if (first.basePath === undefined) {
    const server = loaded.server;
    if (server.count > 1) {
      ctx.warn(`the OpenAPI document ${label} lists ${server.count} servers; using the path of the first (\`${view.basePath || '/'}\`). Set \`path\` to choose.`, ['schema', field]);
    }
  }
  let viewFor = loaded;
  /** The view of the document held now (made again once after each change). */
  const current = (): TargetView => {
    const held = source.current!;
    if (held !== viewFor) {
      view = viewOf(held, first.basePath);
      viewFor = held;
    }
    return view;
  };
  const source_ = documentSource(config);

  /** The pool and deadline, from the target's effective policies (`configure`), else the backend's. */
  let binding: { origin: string; upstream: UpstreamTarget; timeoutMs: number | undefined; deadlines: McpDeadlines } | undefined;
  const bind = (origin: string, upstream: UpstreamTarget, policies: PolicySet | undefined): void => {
    binding = { origin, upstream, timeoutMs: policies?.facets.requestTimeoutMs, deadlines: mcpDeadlines(policies, ctx) };
  };
  /** The target's connection with its policies, as every plugin's own connection is made (`ctx.connect`). At load. */
  const configure = async (policies: PolicySet | undefined): Promise<void> => {
    const { host, port, path } = config;
    const connection = await ctx.connect({ host, port, path, paths: 'allow', defaultPath: '/', inherit: policies, allow: [], what: 'the API', authority: 'target' });
    bind(connection.origin, connection.target, policies);
  };

  return {
    kind: 'openapi',
    describe: `${first.origin}${view.basePath} (${source_}, ${loaded.tools.length} tools)`,
    configure,
    connect(options: McpConnectOptions) {
      // Compiled outside an MCP backend (never configured): the backend's policies' TLS, a plain pool.
      if (!binding) bind(first.origin, ctx.http.target({ origin: first.origin, tls: first.secure ? compilePolicies?.facets.tls : undefined, authority: 'target' }), compilePolicies);
      const { origin, upstream, timeoutMs, deadlines } = binding!;
      const label = options.label ?? `the API at ${origin}`;
      /** A call that ran out of time: a JSON-RPC error naming the target and the deadline (not an `isError` result). */
      const expired = (err: unknown, idle: boolean): Error => {
        if (idle) return new Error(`${label} ${new McpDeadlineError('idle', deadlines.idleMs, deadlines.idleSource).describe('tools/call')}`);
        if (timeoutMs) return new Error(`${label} did not answer \`tools/call\` within ${formatMs(timeoutMs)} (timeout.requestTimeout)`);
        if (deadlines.responseMs > 0) return new Error(`${label} ${new McpDeadlineError('response', deadlines.responseMs, deadlines.responseSource).describe('tools/call')}`);
        return err as Error;
      };
      const logger = options.logger;
      const handler: ToolHandler = {
        get serverInfo() {
          return current().serverInfo;
        },
        get tools() {
          return current().tools;
        },
        hasTool: (name) => current().byName.has(name),
        onToolsChanged: (listener) => source.onChange(listener),
        async callTool(name, args, signal): Promise<CallToolResult> {
          const { byName, basePath } = current();
          const operation = byName.get(name)!.operation;
          // `path` (or a `host` URL) wins; else the operation's own servers, else the document's.
          const base = first.basePath ?? operation.basePath ?? basePath;
          const built = buildRequest(operation, base, args, options.headers);
          if (typeof built === 'string') return errorResult(`Invalid arguments for tool '${name}': ${built}`);
          const started = performance.now();
          try {
            const response = await upstream.request({
              method: built.method,
              path: built.path,
              headers: built.headers,
              body: built.body ?? null,
              signal,
              onAttempt: options.onAttempt,
              ...(operation.credentialLocation ? { credentialLocation: operation.credentialLocation } : {}),
              ...(timeoutMs ? { timeoutMs } : {}),
              headersTimeoutMs: deadlines.responseMs,
              idleTimeoutMs: deadlines.idleMs,
            });
            const body = await readCapped(response.body, MAX_RESPONSE_BYTES);
            const type = response.headers['content-type'];
            const contentType = Array.isArray(type) ? type[0] : type;
            logger.debug('openapi tool call', { tool: name, method: built.method, path: built.path, status: response.status, ms: Math.round(performance.now() - started) });
            return toToolResult({ status: response.status, contentType, body, url: `${origin}${built.path}` });
          } catch (err) {
            if (signal.aborted) throw err;
            if (isUpstreamTimeout(err)) throw expired(err, (err as { code?: unknown }).code === 'UND_ERR_BODY_TIMEOUT');
            logger.debug('openapi tool call failed', { tool: name, method: built.method, path: built.path, error: (err as Error).message });
            return errorResult(`Calling ${built.method} ${origin}${built.path} for tool '${name}' failed: ${(err as Error).message}`);
          }
        },
      };
      return new OpenApiSession(handler);
    },
  };
}
