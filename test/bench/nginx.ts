import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const TEMP_KINDS = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'] as const;

/**
 * The `*_temp_path` lines of an nginx `http` block, each in its own folder under `dir` (created here): nginx run as
 * the bench's user cannot write its compiled-in defaults.
 */
export function nginxTempPaths(dir: string): string {
  for (const d of TEMP_KINDS) mkdirSync(join(dir, d), { recursive: true });
  return TEMP_KINDS.map((d) => `  ${d}_temp_path ${dir}/${d};`).join('\n');
}
