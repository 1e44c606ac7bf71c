import { defineBackend } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };

/** `backend: <name>`: use a top-level named backend. */
export default defineBackend<string>({
  key: 'backend',
  description: 'Use a named backend from the top-level `backends` list.',
  schema,
  compile(name, ctx) {
    return ctx.namedBackend(name, []);
  },
});
