import { definePolicy } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };
import type { MirrorConfig } from './request-mirror.ts';

/**
 * `requestMirror`: fire-and-forget copies. Runs in the dispatch phase, so the copy carries the request as
 * rewritten by earlier policies, its body copied as it streams upstream. The primary never waits for the mirror nor
 * sees its failures.
 */
export default definePolicy<MirrorConfig>({
  key: 'requestMirror',
  description: 'Copy a share of requests (method, path, headers, body) to another backend and discard its answers.',
  schema,
  attach: ['routePolicies'],
  phase: 'dispatch',
  // Reads headers and the body through `ex.copyBody` only (the kernel copies the stream as it is forwarded, ADR 0148),
  // never `ex.req` as a stream: its routes may be served lean (ADR 0088, 0095).
  requestStream: false,
  order: 10,
  async compile(config, ctx) {
    // The implementation loads only when a config uses this policy.
    const { compileRequestMirror } = await import('./request-mirror.ts');
    return compileRequestMirror(config, ctx);
  },
});
