// A complete third-party Switchyard plugin. Plain JavaScript, so it runs on any Node the gateway supports
// without a build step; `switchyard/sdk` is the only part of Switchyard it imports (a peer dependency).
import { randomUUID } from 'node:crypto';
import { defineAttribute, definePolicy } from 'switchyard/sdk';
// JSON Schema of the policy's value. Every property has a `description`: it is what editors show.
import schema from './schema.json' with { type: 'json' };

/** The id of the current request, for later policies (`ex.get(requestIdAttribute)`). */
export const requestIdAttribute = defineAttribute('requestId');

// Headers the gateway manages itself: carrying the id in one of them would break the request.
const RESERVED = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'upgrade', 'te', 'trailer']);
const VISIBLE = /^[\x21-\x7e]{1,200}$/;

/**
 * `addRequestId`: tag each request with an id. The id goes upstream in a header and comes back on the
 * response, whoever produced it: the upstream, a local reply, or an error.
 */
export default definePolicy({
  key: 'addRequestId',
  description: 'Tag each request with an id sent upstream and echoed on the response.',
  schema,
  attach: ['routePolicies', 'backendPolicies'],
  // Early in the pipeline, so requests rejected by later policies (auth, rate limits) carry an id too.
  phase: 'ingress',
  order: 5,
  compile(config, ctx) {
    // Runs once per config load: validate what the schema cannot express, precompute, never per request.
    const header = (config.header ?? 'x-request-id').toLowerCase();
    if (RESERVED.has(header)) ctx.fail(`\`${header}\` is managed by the gateway; choose another header for the request id`, ['header']);
    const trustIncoming = config.trustIncoming ?? true;
    const prefix = config.prefix ?? '';
    return {
      onRequest(ex) {
        const incoming = ex.headers[header];
        const id = trustIncoming && typeof incoming === 'string' && VISIBLE.test(incoming) ? incoming : `${prefix}${randomUUID()}`;
        ex.headers[header] = id; // what goes upstream
        ex.queueResponseHeader(header, id); // added to whatever response this request gets
        ex.set(requestIdAttribute, id);
        ex.logField('requestId', id);
      },
    };
  },
});
