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
  compile(config) {
    const body = config.body === undefined ? null : Buffer.from(config.body);
    const status = config.status;
    // A fresh headers object per reply: response hooks mutate it.
    return { onRequest: () => localReply(status, body, {}) };
  },
});
