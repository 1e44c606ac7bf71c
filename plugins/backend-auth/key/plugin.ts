import { resolve } from 'node:path';
import { FILE_SIZE_LIMITS, notChecked, readSharedFile } from 'switchyard/sdk';
import type { CompileContext } from 'switchyard/sdk';
import { defineBackendAuth } from '../../lib/slots/backend-auth.ts';
import { keyPlacement } from './key.ts';
import type { KeyLocation } from './key.ts';
import schema from './schema.json' with { type: 'json' };

type KeyValue = string | { file: string };
/** The SPEC's string or `{file}`, or the reference's `{value, location}`. */
type KeyConfig = KeyValue | { value?: KeyValue; location?: KeyLocation; file?: string };

/** `key`: a static credential, inline or from a file read at each config load, in `Authorization` or at `location`. */
export default defineBackendAuth<KeyConfig>({
  key: 'key',
  description: 'Send a static credential upstream: as the `Authorization` header (a bare token becomes `Bearer <token>`), or at `location` (another header, a query parameter, a cookie).',
  schema,
  async compile(config, ctx) {
    let value: KeyValue;
    let at: string[] = [];
    let location: KeyLocation | undefined;
    if (typeof config === 'string' || !('value' in config || 'location' in config)) {
      value = config as KeyValue;
    } else {
      if ('file' in config) return ctx.fail('takes `file` or `value`, not both (`value: {file: ...}` reads the value from a file)', ['file']);
      if (config.value === undefined) return ctx.fail('`location` needs a `value`', ['location']);
      value = config.value;
      location = config.location;
      at = ['value'];
    }
    const raw = await readValue(value, at, ctx);
    const placement = keyPlacement(raw.text, location);
    if (typeof placement !== 'function') {
      const path = placement.path.length > 0 ? ['location', ...placement.path] : raw.path;
      return ctx.fail(placement.path.length > 0 ? `\`location\` ${placement.error}` : placement.error.replace(/^the key/, raw.what), path);
    }
    return {
      apply(_ex, attempt) {
        // Without a location of its own, the key goes where the API says (an OpenAPI operation's security scheme).
        const hint = location === undefined ? attempt.credentialLocation : undefined;
        if (hint === undefined) return placement(attempt);
        const hinted = keyPlacement(raw.text, hint);
        if (typeof hinted !== 'function') throw new Error(`the key cannot go where the API's security scheme puts it: ${hinted.error}`);
        hinted(attempt);
      },
    };
  },
});

/** The key's text with what to call it in an error (never quoting it) and where it was configured. */
async function readValue(value: KeyValue, at: string[], ctx: CompileContext): Promise<{ text: string; what: string; path: string[] }> {
  if (typeof value === 'string') return { text: value, what: 'the key', path: at };
  const path = [...at, 'file'];
  if (ctx.checkOnly) notChecked(ctx, `the key file \`${value.file}\``, path);
  const file = resolve(ctx.cwd, value.file);
  const what = `the key file \`${value.file}\``;
  let text: string;
  try {
    text = await readSharedFile(ctx.sharedFetches, file, FILE_SIZE_LIMITS.key);
  } catch (err) {
    return ctx.fail(`cannot read ${what} (${file}): ${(err as Error).message}`, path);
  }
  // As secret as an inline key: a service echoing it in an error (logged by a guard) must not show it.
  ctx.hideInLog(text);
  return { text, what, path };
}
