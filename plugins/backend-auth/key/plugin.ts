import { resolve } from 'node:path';
import { FILE_SIZE_LIMITS, notChecked, readSharedFile } from 'switchyard/sdk';
import { defineBackendAuth } from '../../lib/slots/backend-auth.ts';
import { authorizationValue } from './key.ts';
import schema from './schema.json' with { type: 'json' };

type KeyConfig = string | { file: string };

/** `key`: a static `Authorization` value, inline or from a file read at each config load. */
export default defineBackendAuth<KeyConfig>({
  key: 'key',
  description: 'Send a static credential as the upstream `Authorization` header (a bare token becomes `Bearer <token>`).',
  schema,
  async compile(config, ctx) {
    let raw: string;
    let what: string;
    if (typeof config === 'string') {
      raw = config;
      what = 'the key';
    } else {
      if (ctx.checkOnly) notChecked(ctx, `the key file \`${config.file}\``, ['file']);
      const file = resolve(ctx.cwd, config.file);
      what = `the key file \`${config.file}\``;
      try {
        raw = await readSharedFile(ctx.sharedFetches, file, FILE_SIZE_LIMITS.key);
      } catch (err) {
        return ctx.fail(`cannot read ${what} (${file}): ${(err as Error).message}`, ['file']);
      }
    }
    const value = authorizationValue(raw);
    if (typeof value !== 'string') return ctx.fail(`${what} ${value.error}`, typeof config === 'string' ? [] : ['file']);
    return {
      apply(_ex, attempt) {
        attempt.headers.authorization = value;
      },
    };
  },
});
