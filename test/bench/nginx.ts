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

/**
 * The start of an nginx config up to and including the opening of its `http` block: one worker in the foreground,
 * pid and error log under `dir`, no access log, the temp paths above. `user` names the worker's user (needed when
 * the bench runs as root and `dir` is private to it).
 */
export function nginxHead(dir: string, user?: string): string {
  return `worker_processes 1;
${user ? `user ${user};\n` : ''}daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
${nginxTempPaths(dir)}`;
}
