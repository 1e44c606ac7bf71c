import { definePolicy, localReply } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };

interface DirectResponseConfig {
  status: number;
  body?: string;
}

/** `directResponse`: a static answer made by the gateway. */
export default definePolicy<DirectResponseConfig>({
  key: 'directResponse',
  description: 'Answer with a fixed status and body without contacting a backend.',
  schema,
  attach: ['routePolicies'],
  phase: 'respond',
  // Answers without reading the request at all: its routes may be served lean (ADR 0088).
  requestStream: false,
  order: 20,
  compile(config, ctx) {
    const status = config.status;
    // RFC 9110 §8.6: a 204 carries no Content-Length, and neither answer a body; even `body: ''` sent `content-length: 0`.
    const bodiless = status === 204 || status === 304;
    if (bodiless && config.body) ctx.fail(`a ${status} answer has no body; drop \`body\` or use another status`, ['body']);
    const body = config.body === undefined || bodiless ? null : Buffer.from(config.body);
    // A fresh headers object per reply: response hooks mutate it.
    return { onRequest: () => localReply(status, body, {}) };
  },
});
