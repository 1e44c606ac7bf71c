import type { AttemptHook, CompileContext, PolicySet, UpstreamTarget } from 'switchyard/sdk';
import { mcpDeadlines } from './deadlines.ts';
import type { McpDeadlines } from './deadlines.ts';
import { fetchOverTarget } from './fetch-adapter.ts';
import { parseTargetAddress } from './target-address.ts';
import type { TargetAddress, TargetAddressConfig } from './target-address.ts';
import { shownUrl } from '../credentials/shown-url.ts';

/** The resolved endpoint of an HTTP-based MCP target and a `fetch` over the gateway's pool for it. */
export interface HttpTargetEndpoint {
  readonly address: TargetAddress;
  readonly target: UpstreamTarget;
  readonly fetch: typeof fetch;
  /** The deadlines of its requests, from the target's `timeout` policy or `config.defaultTimeouts`. */
  readonly deadlines: McpDeadlines;
}

/**
 * Compile-time helper of the HTTP-based transports: validates the connection form now (a config error names the
 * field), and builds the pool once the target's policies are known (`configure`), so `backendTLS` applies.
 */
export class HttpTargetBinding {
  private readonly config: TargetAddressConfig;
  private readonly ctx: CompileContext;
  private readonly defaultPath: string;
  private endpoint: HttpTargetEndpoint | undefined;
  readonly describe: string;

  constructor(config: TargetAddressConfig, ctx: CompileContext, defaultPath: string) {
    this.config = config;
    this.ctx = ctx;
    this.defaultPath = defaultPath;
    const parsed = parseTargetAddress(config, false, defaultPath);
    if ('error' in parsed) ctx.fail(parsed.error, [parsed.field]);
    // Origin and path only: errors naming the target reach MCP clients, and a query may carry a key.
    this.describe = shownUrl(parsed.url);
  }

  /** Connect with the target's policies (`ctx.connect`: their `backendTLS` decides TLS and the pool). At load. */
  async configure(policies: PolicySet | undefined): Promise<void> {
    const { host, port, path } = this.config;
    const connection = await this.ctx.connect({ host, port, path, paths: 'allow', defaultPath: this.defaultPath, inherit: policies, allow: [], what: 'the MCP target' });
    const address: TargetAddress = { origin: connection.origin, secure: connection.secure, path: connection.path, url: new URL(connection.path, connection.origin) };
    this.bind(address, connection.target, policies);
  }

  private bind(address: TargetAddress, target: UpstreamTarget, policies: PolicySet | undefined): void {
    const deadlines = mcpDeadlines(policies, this.ctx);
    this.endpoint = { address, target, fetch: fetchOverTarget(target, undefined, deadlines), deadlines };
  }

  /** The endpoint; with `onAttempt` (a connection's backendAuth), a `fetch` that runs it on every request. */
  get(onAttempt?: AttemptHook): HttpTargetEndpoint {
    if (!this.endpoint) {
      // Compiled outside an MCP backend (never configured): no policies, plain pool.
      const parsed = parseTargetAddress(this.config, false, this.defaultPath);
      if ('error' in parsed) this.ctx.fail(parsed.error, [parsed.field]);
      this.bind(parsed, this.ctx.http.target({ origin: parsed.origin }), undefined);
    }
    const endpoint = this.endpoint!;
    return onAttempt ? { ...endpoint, fetch: fetchOverTarget(endpoint.target, onAttempt, endpoint.deadlines) } : endpoint;
  }
}
