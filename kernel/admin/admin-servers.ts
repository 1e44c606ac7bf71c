import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AdminRouteHandler, Logger } from '../sdk/index.ts';
import type { AdminUiConfig, StaticConfig } from '../compile/snapshot.ts';
import { hasAdminCredentials, isLoopbackAddress } from './admin-access.ts';
import { CredentialThrottle } from './admin-throttle.ts';
import { compileHostCheck, splitAuthority } from './host-check.ts';
import { findPluginRoute, servePluginRoute } from './plugin-routes.ts';

// Not `import ... from 'node:http'`: an ES import builds http's namespace, which reads its lazy WebSocket getters and so
// loads Node's bundled undici (about 13 MiB and 25 ms at start, docs/perf.md "Startup").
const { createServer } = process.getBuiltinModule('node:http');

/** A GET endpoint of one of the admin-side servers. */
export type AdminHandler = (req: IncomingMessage, res: ServerResponse) => void;
/** `/ui` and everything under it (any method: the UI posts configs to validate); `bound` is where the server listens. */
export type UiHandler = (req: IncomingMessage, res: ServerResponse, bound: AddressInfo) => void;

export interface AdminEndpoints {
  /** `readinessAddr`: `/healthz/ready`, `/healthz/live`. */
  readiness: Record<string, AdminHandler>;
  /** `statsAddr`: `/metrics`. */
  stats: Record<string, AdminHandler>;
  /** `adminAddr`: `/config_dump`. */
  admin: Record<string, AdminHandler>;
  /**
   * `adminAddr`: the live config's plugin endpoint for a path prefix (`CompileContext.adminRoute`), looked up per
   * request; a supervisor of workers answers with a handler that asks a worker.
   */
  adminPlugins?: (prefix: string) => AdminRouteHandler | undefined;
  /** `adminAddr`: the admin UI under `/ui` (docs/admin-ui.md). */
  ui?: UiHandler;
  /**
   * `config.adminUi` of the live config, read per request: its credentials guard every path of the admin server but
   * `/healthz/ready` and `/metrics` (ADR 0136).
   */
  adminUi?: () => AdminUiConfig | undefined;
}

/**
 * A request (head and body) must have arrived within 10 s: admin bodies are at most 1 MiB from a nearby client, and an
 * upload left hanging held one of the admin UI's 5 validation places for Node's default of 5 min. Node answers 408;
 * it checks every second. Answers (the live tail's stream) are not limited.
 */
const ADMIN_SERVER_OPTIONS = { requestTimeout: 10_000, headersTimeout: 10_000, connectionsCheckingInterval: 1_000 };

/** A listen address (checked at load against ADDRESS_PATTERN: `host:port` or `[v6]:port`) as listen() takes it. */
function splitAddress(addr: string): { host: string; port: number } {
  const { host, port } = splitAuthority(addr)!;
  return { host: host === 'localhost' ? '127.0.0.1' : host, port: Number(port) };
}

/**
 * The readiness, stats and admin servers (BEHAVIOUR.md DECIDED 16). Endpoints of servers configured on the
 * same address share one listener. Only GET (and HEAD) are served; other methods get 405. A request whose `Host` or
 * `Origin` names another site gets 403 (DNS rebinding, ADR 0017). With `config.adminUi` credentials, every request to
 * the admin server must present them (401), the readiness and stats endpoints aside (ADR 0136); an address that
 * presented wrong ones too often gets 429 for a while (ADR 0160).
 */
export class AdminServers {
  private readonly servers: Server[] = [];
  private readonly bound = new Map<string, AddressInfo>();
  private readonly logger: Logger;
  /** Failed credentials per client address, across the admin server's addresses (ADR 0160). */
  private readonly throttle: CredentialThrottle;

  constructor(logger: Logger) {
    this.logger = logger;
    this.throttle = new CredentialThrottle(logger);
  }

  async start(config: Pick<StaticConfig, 'adminAddr' | 'statsAddr' | 'readinessAddr'>, endpoints: AdminEndpoints): Promise<void> {
    const byAddress = new Map<string, { roles: string[]; routes: Record<string, AdminHandler>; open: Set<string> }>();
    const add = (role: 'readiness' | 'stats' | 'admin', addr: string): void => {
      if (addr === 'off') return;
      const group = byAddress.get(addr) ?? { roles: [], routes: {}, open: new Set<string>() };
      group.roles.push(role);
      Object.assign(group.routes, endpoints[role]);
      // Probes and scrapers send no credentials: the readiness and stats endpoints stay open wherever they are served.
      if (role !== 'admin') for (const path of Object.keys(endpoints[role])) group.open.add(path);
      byAddress.set(addr, group);
    };
    add('readiness', config.readinessAddr);
    add('stats', config.statsAddr);
    add('admin', config.adminAddr);
    for (const [addr, group] of byAddress) {
      // Known once the server listens (port 0 picks one); no request arrives before.
      let refuse: ReturnType<typeof compileHostCheck> = () => 'Host';
      let info!: AddressInfo;
      const server = createServer(ADMIN_SERVER_OPTIONS, (req, res) => {
        const refused = refuse(req.headers);
        if (refused) {
          res.writeHead(403, { 'content-type': 'text/plain' }).end(`forbidden: the ${refused} header does not name this server\n`);
          return;
        }
        const path = (req.url ?? '/').split('?')[0]!;
        const denied = group.roles.includes('admin') && !group.open.has(path) ? this.throttle.check(endpoints.adminUi?.(), req) : undefined;
        if (denied) {
          // The UI (and `/`, which leads there) is a browser's: plain text; the JSON endpoints answer in their error shape.
          const page = path === '/' || path === '/ui' || path.startsWith('/ui/');
          res.writeHead(denied.status, { 'content-type': page ? 'text/plain' : 'application/json', ...denied.headers });
          res.end(page ? `${denied.message}\n` : `${JSON.stringify({ error: { message: denied.message } })}\n`);
          return;
        }
        if (endpoints.ui && group.roles.includes('admin') && (path === '/ui' || path.startsWith('/ui/') || path === '/')) {
          if (path === '/') res.writeHead(302, { location: '/ui/' }).end();
          else endpoints.ui(req, res, info);
          return;
        }
        const handler = group.routes[path];
        const plugin = !handler && group.roles.includes('admin') ? findPluginRoute(endpoints.adminPlugins, path) : undefined;
        if (plugin) {
          void servePluginRoute(req, res, plugin, this.logger);
          return;
        }
        if (!handler) {
          res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
          return;
        }
        if (req.method !== 'GET' && req.method !== 'HEAD') {
          res.writeHead(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' }).end('method not allowed\n');
          return;
        }
        try {
          handler(req, res);
        } catch (err) {
          this.logger.error('admin endpoint failed', { path, error: err as Error });
          if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('internal error\n');
        }
      });
      const { host, port } = splitAddress(addr);
      await new Promise<void>((resolve, reject) => {
        // Said with the config keys that name the address: Node's "listen EADDRINUSE" leaves the user to guess which.
        const failed = (err: NodeJS.ErrnoException): void => {
          const keys = group.roles.map((r) => `config.${r}Addr`).join(', ');
          const why = err.code === 'EADDRINUSE' ? 'the address is in use (EADDRINUSE: another gateway?); set another address or `off`' : err.message;
          reject(new Error(`cannot listen on ${addr} (${keys}): ${why}`));
        };
        server.once('error', failed);
        server.listen(port, host, () => {
          server.off('error', failed);
          resolve();
        });
      });
      this.servers.push(server);
      info = server.address() as AddressInfo;
      refuse = compileHostCheck(info);
      for (const role of group.roles) this.bound.set(role, info);
      this.logger.info('admin server listening', { roles: group.roles.join(','), address: `${info.address}:${info.port}` });
      if (group.roles.includes('admin') && !isLoopbackAddress(info.address) && !hasAdminCredentials(endpoints.adminUi?.())) {
        this.logger.warn('the admin address is not loopback and without credentials: whoever reaches it can read /config_dump and use plugin endpoints such as /keys (make virtual keys); set config.adminUi.apiKey or basicAuth (ADR 0136)', {
          address: `${info.address}:${info.port}`,
        });
      }
    }
  }

  /** Where a role's server actually listens (port 0 in config picks a free one). */
  address(role: 'readiness' | 'stats' | 'admin'): AddressInfo | undefined {
    return this.bound.get(role);
  }

  async close(): Promise<void> {
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
    this.servers.length = 0;
  }
}
