import { defineGuard } from '../../lib/slots/ai.ts';
import type { WebhookGuardConfig } from './webhook.ts';

/** `webhook`: ask an external guardrail service (Gloo-style webhook protocol) to pass, mask or reject. */
export default defineGuard<WebhookGuardConfig>({
  key: 'webhook',
  description: 'Send the messages to a guardrail webhook (`POST /request`, `POST /response`) that passes, masks or rejects them.',
  schema: {
    type: 'object',
    description: 'A guardrail webhook speaking the Gloo-style protocol: `POST /request` with `{"body":{"messages":[…]}}`, `POST /response` with `{"body":{"choices":[…]}}`; the answer `{"action":…}` masks, rejects or passes.',
    properties: {
      target: {
        type: 'object',
        description: 'Where the webhook lives: exactly one of `host`, `service`, `backend`.',
        properties: {
          host: {
            type: 'string',
            minLength: 1,
            description: 'The webhook\'s `host:port` (`http://`/`https://` in front chooses plaintext or TLS; plaintext by default).',
          },
          service: {
            type: 'object',
            description: 'A Kubernetes-style service reference, resolved by DNS: the gateway calls `http://<hostname>:<port>`.',
            properties: {
              name: {
                type: ['object', 'string'],
                description: 'The service: `{namespace, hostname}`, or the string `<namespace>/<hostname>`.',
                properties: {
                  namespace: { type: 'string', description: 'The service\'s namespace.' },
                  hostname: { type: 'string', description: 'The service\'s DNS name, dialled with `port`.' },
                },
                required: ['namespace', 'hostname'],
                additionalProperties: false,
              },
              port: { type: 'integer', minimum: 1, maximum: 65535, description: 'The service\'s port.' },
            },
            required: ['name', 'port'],
            additionalProperties: false,
          },
          backend: { type: 'string', minLength: 1, description: 'Name of a top-level `host` backend that is the webhook (its pool and TLS settings are used).' },
        },
        additionalProperties: false,
        exactlyOneOf: ['host', 'service', 'backend'],
      },
      forwardHeaderMatches: {
        type: 'array',
        description: 'Client request headers sent to the webhook: a header is forwarded (all its values) when at least one value matches. No other client header is sent.',
        items: {
          type: 'object',
          description: 'A header to forward and the values that qualify.',
          properties: {
            name: { $ref: 'switchyard:defs#/$defs/headerName', description: 'The header name (case-insensitive).' },
            value: { $ref: 'switchyard:defs#/$defs/stringMatch', description: 'How a value must match: `exact`, or `regex` (whole value).' },
          },
          required: ['name', 'value'],
          additionalProperties: false,
        },
      },
      failureMode: {
        enum: ['failClosed', 'failOpen'],
        description: 'When the webhook cannot be reached, times out (10 s), answers an error status or an unreadable body: `failClosed` (default) answers 503 `failed to process LLM request: prompt guard failed`; `failOpen` lets the request or response through.',
      },
    },
    required: ['target'],
    additionalProperties: false,
  },
  async compile(config, ctx) {
    const { compileWebhookGuard } = await import('./webhook.ts');
    return compileWebhookGuard(config, ctx);
  },
});
