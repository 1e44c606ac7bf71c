import { existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** The file `switchyard init` writes when no `-f` is given. */
export const DEFAULT_INIT_FILE = 'switchyard.yaml';

/** The plugins the full starter uses; a trimmed distribution without one of them gets the proxy-only starter. */
const FULL_STARTER_KEYS = ['directResponse', 'responseHeaderModifier', 'backend', 'host'];

const ADDRESSES = `config:
  adminAddr: 127.0.0.1:15000
  statsAddr: 127.0.0.1:15020
  readinessAddr: 127.0.0.1:15021
`;

/**
 * The starter config, of the plugins installed (a trimmed distribution's preset, docs/adr/0012). With the full
 * set it runs with nothing else installed: port 3000 is the front door; port 3001 stands in for the user's
 * service until `backends[].host` is pointed at the real one. A distribution without `directResponse` has no
 * way to answer by itself, so its starter only proxies port 3000 to the user's service on 3001.
 */
function starterConfig(schemaRef: string | undefined, runAs: string, installed: ReadonlySet<string> | undefined): string {
  const header = schemaRef ? `# yaml-language-server: $schema=${schemaRef}\n` : '';
  if (installed && !FULL_STARTER_KEYS.every((k) => installed.has(k))) {
    if (!installed.has('host')) throw new Error('this distribution has no `host` backend to write a starter config with; `switchyard plugins` lists what it has');
    return `${header}# A starter Switchyard config, written by \`switchyard init\` for this trimmed distribution. Run it:
#   switchyard -f ${runAs}
#   curl -i localhost:3000/anything           # proxied to your service on 127.0.0.1:3001 (an error until it listens)
# Point backends[].host at your own service. The file is watched: saved changes apply without a restart (an
# invalid change is logged and the running config keeps serving). \`switchyard plugins\` lists what else it has.
${ADDRESSES}binds:
- port: 3000
  listeners:
  - name: front
    routes:
    - name: app
      backends:
      - host: 127.0.0.1:3001
`;
  }
  return `${header}# A starter Switchyard config, written by \`switchyard init\`. Run it:
#   ${launchCommand()} -f ${runAs}
#   curl -i localhost:3000/hello              # answered by the gateway itself
#   curl -i localhost:3000/api/anything       # proxied to the upstream (port 3001 below, a stand-in)
# Point backends[].host at your own service and remove the second bind. The file is watched: saved changes
# apply without a restart (an invalid change is logged and the running config keeps serving).
${ADDRESSES}binds:
- port: 3000
  listeners:
  - name: front
    routes:
    - name: hello
      matches:
      - path: { exact: /hello }
      policies:
        directResponse: { status: 200, body: "Hello from Switchyard!\\n" }
        responseHeaderModifier:
          set: { content-type: text/plain; charset=utf-8 }
    - name: api
      matches:
      - path: { pathPrefix: /api }
      backends:
      - backend: app
- port: 3001
  address: 127.0.0.1      # the stand-in is reached through the gateway only
  listeners:
  - name: stand-in-upstream
    routes:
    - name: echo
      policies:
        directResponse: { status: 200, body: "{\\"upstream\\":\\"ok\\"}\\n" }
        responseHeaderModifier:
          set: { content-type: application/json }
backends:
- name: app
  host: 127.0.0.1:3001
`;
}

/**
 * The command that runs the CLI the way it was run now: `npx switchyard` when npx launched it (a local install, whose
 * bare `switchyard` is not on PATH), else `switchyard`. npx names what it runs in npm_lifecycle_script; another
 * command under npx (`npx node ...`) is not this launch.
 */
export function launchCommand(env: NodeJS.ProcessEnv = process.env): string {
  return env.npm_command === 'exec' && /^'?switchyard\b/.test(env.npm_lifecycle_script ?? '') ? 'npx switchyard' : 'switchyard';
}

/** How the header names the schema: relative to the config's folder (as editors resolve it), POSIX slashes. */
function schemaReference(configFile: string, schemaFile: string | undefined): string | undefined {
  if (!schemaFile || !existsSync(schemaFile)) return undefined;
  const rel = relative(dirname(configFile), schemaFile);
  if (isAbsolute(rel)) return schemaFile; // another drive (Windows)
  return rel.split(sep).join('/');
}

export interface InitResult {
  readonly file: string;
  /** False when the file existed and `force` was not given; nothing was written. */
  readonly written: boolean;
}

/** Write the starter config to `file` (of the `installed` plugin keys; default all); an existing file is kept unless `force`. */
export function writeStarterConfig(file: string, options: { force: boolean; schemaFile?: string; installed?: ReadonlySet<string> }): InitResult {
  const target = resolve(file);
  const text = starterConfig(schemaReference(target, options.schemaFile), file, options.installed);
  // A folder given for the file (`-f conf`) is said as such, with or without --force (`wx` would call it existing).
  if (statSync(target, { throwIfNoEntry: false })?.isDirectory()) throw new Error(cannotWrite(target, 'EISDIR', file));
  try {
    // `wx` refuses an existing file in the same system call that would create it: no check-then-write race.
    writeFileSync(target, text, { flag: options.force ? 'w' : 'wx' });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return { file: target, written: false };
    throw new Error(cannotWrite(target, code, file, (err as Error).message));
  }
  return { file: target, written: true };
}

/** One line for a starter config that cannot be written, in words rather than an errno. */
function cannotWrite(target: string, code: string | undefined, given: string, message?: string): string {
  const why =
    code === 'ENOENT'
      ? `the folder ${dirname(target)} does not exist`
      : code === 'EISDIR'
        ? `it is a folder (give a file name: -f ${join(given, 'config.yaml')})`
        : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
          ? 'permission denied'
          : code === 'ENOTDIR'
            ? 'a part of its path is a file, not a folder'
            : (message ?? String(code));
  return `cannot write ${target}: ${why}`;
}
