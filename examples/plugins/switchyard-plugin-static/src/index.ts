// A backend kind: a key of `routes[].backends[]` (and of top-level `backends[]`, being `named`), written only against
// the published `switchyard/sdk`. It answers requests itself from a folder instead of forwarding them.
import { stat, readFile, realpath } from 'node:fs/promises';
import { extname, isAbsolute, join, resolve, sep } from 'node:path';
import { defineBackend, jsonErrorReply } from 'switchyard/sdk';
import type { BackendInstance, Exchange, Reply } from 'switchyard/sdk';

/** The validated value of `staticFiles` in a backend list. */
export interface StaticFilesConfig {
  /** The folder to serve; relative paths resolve against the gateway's working directory. */
  readonly root: string;
  /** The file served for a folder. Default `index.html`. */
  readonly index?: string;
  /** `Cache-Control: max-age` in seconds. Default: no header. */
  readonly maxAge?: number;
}

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

export default defineBackend<StaticFilesConfig>({
  key: 'staticFiles',
  description: 'Serve the files of a local folder (GET and HEAD).',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['root'],
    properties: {
      root: { type: 'string', minLength: 1, description: 'The folder to serve, absolute or relative to the gateway\'s working directory.' },
      index: { type: 'string', pattern: '^[^/\\\\]+$', description: 'The file served for a folder. Default `index.html`.' },
      maxAge: { type: 'integer', minimum: 0, description: '`Cache-Control: max-age` in seconds. Default: none.' },
    },
  },
  named: true,
  async compile(config, ctx): Promise<BackendInstance> {
    const wanted = isAbsolute(config.root) ? config.root : resolve(ctx.cwd, config.root);
    // Checked at load: a typo in `root` is a config error with its position, not a 404 on every request.
    const root = await realpath(wanted).catch(() => ctx.fail(`no folder ${wanted}`, ['root']));
    if (!(await stat(root)).isDirectory()) ctx.fail(`${wanted} is not a folder`, ['root']);
    const index = config.index ?? 'index.html';
    const cache = config.maxAge === undefined ? undefined : `max-age=${config.maxAge}`;

    /** The file a request path names, or undefined when it is outside `root` or is not a file. */
    async function locate(path: string): Promise<string | undefined> {
      let decoded: string;
      try {
        decoded = decodeURIComponent(path);
      } catch {
        return undefined;
      }
      if (decoded.includes('\0')) return undefined;
      let file = join(root, decoded);
      // The real path, so a symbolic link inside the folder cannot lead out of it either.
      file = await realpath(file).catch(() => '');
      if (file === '' || (file !== root && !file.startsWith(root + sep))) return undefined;
      const info = await stat(file);
      if (info.isDirectory()) return locate(join(decoded, index));
      return info.isFile() ? file : undefined;
    }

    return {
      protocol: 'static',
      label: `staticFiles:${config.root}`,
      async handle(ex: Exchange): Promise<Reply> {
        if (ex.method !== 'GET' && ex.method !== 'HEAD') {
          return jsonErrorReply(405, 'method_not_allowed', `${ex.method} is not served here`, { allow: 'GET, HEAD' });
        }
        // Under a route's path prefix the files sit at the folder's top: /docs/a.html with prefix /docs serves a.html.
        const prefix = ex.matchedPrefix?.replace(/\/$/, '') ?? '';
        const file = await locate((ex.path.startsWith(prefix) ? ex.path.slice(prefix.length) : ex.path) || '/');
        if (file === undefined) return jsonErrorReply(404, 'not_found', `no file at ${ex.path}`);
        const body = await readFile(file);
        const headers: Reply['headers'] = { 'content-type': TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream', 'content-length': body.length };
        if (cache !== undefined) headers['cache-control'] = cache;
        return { status: 200, headers, body: ex.method === 'HEAD' ? null : body, local: false };
      },
    };
  },
});
