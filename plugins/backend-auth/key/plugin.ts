import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineBackendAuth } from 'switchyard/sdk';
import type { BackendAuthInstance } from '../../lib/backend-auth/contract.ts';
import { authorizationValue } from './key-value.ts';
import schema from './schema.json' with { type: 'json' };

type KeyConfig = string | { file: string };

/** `key`: a static `Authorization` value, inline or from a file read at each config load. */
export default defineBackendAuth<KeyConfig, BackendAuthInstance>({
  key: 'key',
  description: 'Send a static credential as the upstream `Authorization` header (a bare token becomes `Bearer <token>`).',
  schema,
  compile(config, ctx) {
    let raw: string;
    let what: string;
    if (typeof config === 'string') {
      raw = config;
      what = 'the key';
    } else {
      const file = resolve(ctx.cwd, config.file);
      what = `the key file \`${config.file}\``;
      try {
        raw = readFileSync(file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
        return ctx.fail(`cannot read ${what} (${file}): ${why}`, ['file']);
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
