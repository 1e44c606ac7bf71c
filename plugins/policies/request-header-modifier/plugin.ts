import { definePolicy } from 'switchyard/sdk';
import { applyHeaderModifier, compileHeaderModifier, SETS_COOKIE, framingEdit, framingMessage, headerModifierSchema, hostToAuthority } from '../../lib/header-modifier/header-modifier.ts';
import type { HeaderModifierConfig } from '../../lib/header-modifier/header-modifier.ts';

/** `requestHeaderModifier`: add, set and remove request headers before the backend. */
export default definePolicy<HeaderModifierConfig>({
  key: 'requestHeaderModifier',
  description: 'Add, set or remove headers on the request sent upstream.',
  schema: headerModifierSchema('request'),
  attach: ['routePolicies', 'backendPolicies', 'mcpTargetPolicies'],
  phase: 'mutate',
  // Reads headers and attributes only, never `ex.req` as a stream: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 20,
  compile(config, ctx) {
    const framing = framingEdit(config);
    if (framing) return ctx.fail(framingMessage(framing[1], 'request'), framing);
    const modifier = compileHeaderModifier(config);
    if (typeof modifier === 'string') return ctx.fail(modifier);
    const host = [...modifier.add, ...modifier.set].some(([name]) => name === 'host');
    const setsCookie = [...modifier.add, ...modifier.set].some(([name]) => name === 'cookie');
    return {
      ...(setsCookie ? { provides: [SETS_COOKIE.of(true)] } : {}),
      onRequest(ex) {
        applyHeaderModifier(modifier, ex.headers);
        if (host) hostToAuthority(ex);
      },
    };
  },
});
