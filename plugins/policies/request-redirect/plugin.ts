import { ErrorCode, GatewayError, definePolicy, localReply } from 'switchyard/sdk';
import { PREFIX_NEEDS_PREFIX_MATCH, authoritySchema, compilePathRewrite, pathRewriteError, pathRewriteSchema } from '../../lib/path-rewrite/path-rewrite.ts';
import type { PathRewriteConfig } from '../../lib/path-rewrite/path-rewrite.ts';

interface RedirectConfig {
  scheme?: 'http' | 'https';
  authority?: { host?: string; full?: string };
  path?: PathRewriteConfig;
  status?: 301 | 302 | 303 | 307 | 308;
}

const DEFAULT_PORT: Record<string, string> = { http: '80', https: '443' };

function splitAuthority(authority: string): { host: string; port: string | undefined } {
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(authority);
  return m ? { host: m[1]!, port: m[2] } : { host: authority, port: undefined };
}

/** `requestRedirect`: the gateway answers with a redirect built from the (possibly rewritten) request. */
export default definePolicy<RedirectConfig>({
  key: 'requestRedirect',
  description: 'Answer with a redirect (`Location` built from the request); the backend is not contacted.',
  schema: {
    type: 'object',
    description: 'Redirect the client. Unset parts of the location come from the request (after `urlRewrite`).',
    properties: {
      scheme: { enum: ['http', 'https'], description: 'Scheme of the location. Default: the request scheme.' },
      authority: {
        type: 'object',
        description: 'Exactly one of `host` (keeps the request port unless it is the default for the scheme) or `full` (`host[:port]`).',
        properties: {
          host: authoritySchema(false, 'New host name.'),
          full: authoritySchema(true, 'New authority, `host[:port]`.'),
        },
        additionalProperties: false,
        exactlyOneOf: ['host', 'full'],
      },
      path: pathRewriteSchema,
      status: { enum: [301, 302, 303, 307, 308], description: 'Redirect status. Default 302.' },
    },
    additionalProperties: false,
  },
  attach: ['routePolicies'],
  phase: 'respond',
  // Reads the path, authority and query only, never `ex.req` as a stream: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 10,
  compile(config, ctx) {
    const invalid = config.path ? pathRewriteError(config.path, true) : undefined;
    if (invalid) return ctx.fail(invalid[1], ['path', invalid[0]]);
    const status = config.status ?? 302;
    const rewrite = config.path ? compilePathRewrite(config.path) : undefined;
    // A query in `path.full` replaces the request's (Envoy's path_redirect), never a second `?` after it.
    const ownQuery = config.path?.full?.includes('?') === true;
    return {
      onRequest(ex) {
        const scheme = config.scheme ?? ex.scheme;
        let authority = ex.authority;
        if (config.authority?.full !== undefined) authority = config.authority.full;
        else if (config.authority?.host !== undefined) {
          const { port } = splitAuthority(ex.authority);
          // The request port is kept unless the scheme was set explicitly or it is the scheme's default.
          const keepPort = port !== undefined && config.scheme === undefined && port !== DEFAULT_PORT[scheme];
          authority = keepPort ? `${config.authority.host}:${port}` : config.authority.host;
        } else if (config.scheme !== undefined) {
          const { host, port } = splitAuthority(ex.authority);
          if (port === DEFAULT_PORT[ex.scheme] || port === DEFAULT_PORT[scheme]) authority = host;
        }
        // An HTTP/1.0 request may come without a Host: `https:///x/y` is read by browsers as https://x/y.
        if (authority === '') throw new GatewayError(400, 'bad_request', 'the request has no Host to build the redirect from', ErrorCode.badRequest);
        let path = ex.path;
        if (rewrite) {
          const rewritten = rewrite(ex.path, ex.matchedPrefix);
          if (rewritten === undefined) throw new GatewayError(500, 'invalid_filter', PREFIX_NEEDS_PREFIX_MATCH, ErrorCode.internal);
          path = rewritten;
        }
        return localReply(status, null, { location: `${scheme}://${authority}${path}${ownQuery ? '' : ex.query}` });
      },
    };
  },
});
