import { definePolicy } from 'switchyard/sdk';
import { applyHeaderModifier, applyHeaderModifierToList, compileHeaderModifier, headerModifierSchema, framingEdit, framingMessage } from '../../lib/header-modifier/header-modifier.ts';
import type { HeaderModifierConfig } from '../../lib/header-modifier/header-modifier.ts';

/** `responseHeaderModifier`: add, set and remove response headers, on every response. */
export default definePolicy<HeaderModifierConfig>({
  key: 'responseHeaderModifier',
  description: 'Add, set or remove headers on every response, local replies and errors included.',
  schema: headerModifierSchema('response'),
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'mutate',
  // Reads headers and attributes only, never `ex.req` as a stream: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 21,
  compile(config, ctx) {
    const framing = framingEdit(config);
    if (framing) return ctx.fail(framingMessage(framing[1], 'response'), framing);
    const modifier = compileHeaderModifier(config);
    if (typeof modifier === 'string') return ctx.fail(modifier);
    return {
      onResponse(_ex, reply) {
        applyHeaderModifier(modifier, reply.headers);
      },
      // The same edit on an answer forwarded straight through: the route keeps the kernel's direct forward.
      onResponseHeaders(_ex, _status, headers) {
        applyHeaderModifierToList(modifier, headers);
      },
    };
  },
});
