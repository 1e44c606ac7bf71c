import { ErrorCode, GatewayError, definePolicy } from 'switchyard/sdk';
import { PREFIX_NEEDS_PREFIX_MATCH, authoritySchema, compilePathRewrite, pathRewriteError, pathRewriteSchema } from '../../lib/path-rewrite/path-rewrite.ts';
import type { PathRewriteConfig } from '../../lib/path-rewrite/path-rewrite.ts';

interface UrlRewriteConfig {
  path?: PathRewriteConfig;
  authority?: { full: string };
}

/** `urlRewrite`: change the path and/or the authority (Host) sent upstream; the query string is kept. */
export default definePolicy<UrlRewriteConfig>({
  key: 'urlRewrite',
  description: 'Rewrite the path (`full` or matched `prefix`) and the authority sent upstream.',
  schema: {
    type: 'object',
    description: 'Rewrite the request URL before it goes upstream (and before any redirect is built).',
    properties: {
      path: pathRewriteSchema,
      authority: {
        type: 'object',
        description: 'Replace the Host header sent upstream.',
        properties: { full: authoritySchema(true, 'The new authority, `host[:port]`.') },
        required: ['full'],
        additionalProperties: false,
      },
    },
    additionalProperties: false,
  },
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'mutate',
  // Edits the path and authority only, never reads `ex.req` as a stream: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 30,
  compile(config, ctx) {
    const invalid = config.path ? pathRewriteError(config.path, false) : undefined;
    if (invalid) return ctx.fail(invalid[1], ['path', invalid[0]]);
    const path = config.path ? compilePathRewrite(config.path) : undefined;
    const authority = config.authority?.full;
    return {
      onRequest(ex) {
        if (path) {
          const rewritten = path(ex.path, ex.matchedPrefix);
          if (rewritten === undefined) throw new GatewayError(500, 'invalid_filter', PREFIX_NEEDS_PREFIX_MATCH, ErrorCode.internal);
          ex.path = rewritten;
        }
        if (authority !== undefined) ex.authority = authority;
      },
    };
  },
});
