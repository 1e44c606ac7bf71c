// `switchyard keys ...`: a client of the `/keys` management API that the `virtualKeys` policy serves on the admin
// address (docs/llm-economics.md). It speaks HTTP only, so the kernel knows nothing of the plugin.
import { ConfigLoadError } from '../config/format-issues.ts';
import { parseConfigText, readConfigFile } from '../config/load-config.ts';
import { positionRedacted } from '../config/redact-issues.ts';
import { BodyTooLargeError, readCappedText } from '../sdk/streams.ts';
import { unknownArgument } from './unknown-argument.ts';

// Loaded with every start of the CLI: node:http through getBuiltinModule (an ES import loads Node's bundled undici)
// and the YAML parser on first use (docs/adr/0034).
const { request } = process.getBuiltinModule('node:http');

export const KEYS_USAGE = `Usage: switchyard keys COMMAND [options]
  list [--team T]                       keys (declared and made here), never their secrets
  create [--name N] [--owner O] [--team T] [--model M]... [--route R]...
         [--budget UNIT=N/PERIOD]... [--meta K=V]...
                                        make a key; its secret is printed once
  show ID, usage ID                     a key and the use of its and its team's budgets
  rotate ID                             a new secret; the old one stops working at once
  revoke ID                             the key stops working at once

  UNIT is usd, tokens or requests; PERIOD is minute, hour, day, month or total (usd=50/month).
  Exit status: 0 done (revoking a key already revoked too, said so on stdout), 1 the gateway refused
  (unknown key, rotating a revoked or declared key, ...) or could not be reached, 2 a usage error.

Options:
  --admin ADDR     the gateway's admin address (host:port or URL); default: ADMIN_ADDR, else the
                   config's adminAddr (-f FILE), else 127.0.0.1:15000
  --admin-key KEY  the admin address's config.adminUi.apiKey, when set; default: ADMIN_API_KEY
                   (prefer the variable: a command line shows in the process list)
  -f, --file FILE  read adminAddr from this config
  --json           print the API's JSON answer
`;

interface KeysArgs {
  command: string;
  id?: string;
  admin?: string;
  adminKey?: string;
  file?: string;
  json: boolean;
  team?: string;
  body: Record<string, unknown>;
}

/**
 * Bytes of an admin answer the CLI reads: a list of about 100,000 keys with their budgets. An address that answers
 * more (not a gateway, or a broken one) is an error, not a CLI that runs out of memory.
 */
export const ADMIN_ANSWER_LIMIT = 64 * 1024 * 1024;

const BUDGET = /^(usd|tokens|requests)=([0-9]+(?:\.[0-9]+)?)\/(minute|hour|day|month|total)$/;

const KEYS_COMMANDS = ['list', 'create', 'show', 'usage', 'rotate', 'revoke'];

/** The flags parseKeysArgs takes for `command`, for the did-you-mean of an unknown one. */
function flagsOf(command: string): string[] {
  const common = ['--admin', '--admin-key', '-f', '--file', '--json'];
  if (command === 'list') return [...common, '--team'];
  if (command === 'create') return [...common, '--name', '--owner', '--team', '--model', '--route', '--budget', '--meta'];
  return common;
}

function parseKeysArgs(argv: readonly string[]): KeysArgs | string {
  const [command, ...rest] = argv;
  if (!command || !KEYS_COMMANDS.includes(command)) return command ? unknownArgument(command, KEYS_COMMANDS, 'keys command') : 'a keys command is required';
  const args: KeysArgs = { command, json: false, body: {} };
  const list = (k: string, v: unknown): void => {
    ((args.body[k] ??= []) as unknown[]).push(v);
  };
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    const value = (): string => {
      const v = rest[++i];
      // `--model --admin X` is a missing value, not a model named `--admin`; so is `--model ""` (an unset variable).
      if (v === undefined || v === '' || v.startsWith('--')) throw new Error(`${a} needs a value`);
      return v;
    };
    try {
      if (a === '--admin') args.admin = value();
      else if (a === '--admin-key') args.adminKey = value();
      else if (a === '-f' || a === '--file') args.file = value();
      else if (a === '--json') args.json = true;
      else if (a === '--team' && command === 'list') args.team = value();
      else if (command === 'create' && ['--name', '--owner', '--team'].includes(a)) args.body[a.slice(2)] = value();
      else if (command === 'create' && a === '--model') list('models', value());
      else if (command === 'create' && a === '--route') list('routes', value());
      else if (command === 'create' && a === '--budget') {
        const m = BUDGET.exec(value());
        if (!m) return `--budget takes UNIT=N/PERIOD (usd=50/month, tokens=100000/day, requests=60/minute)`;
        list('budgets', { [m[1]!]: Number(m[2]), period: m[3] });
      } else if (command === 'create' && a === '--meta') {
        const kv = value();
        const eq = kv.indexOf('=');
        if (eq < 1) return '--meta takes KEY=VALUE';
        ((args.body.metadata ??= {}) as Record<string, string>)[kv.slice(0, eq)] = kv.slice(eq + 1);
      } else if (!a.startsWith('-') && args.id === undefined && ['show', 'usage', 'rotate', 'revoke'].includes(command)) args.id = a;
      else return unknownArgument(a, flagsOf(command));
    } catch (err) {
      return (err as Error).message;
    }
  }
  if (['show', 'usage', 'rotate', 'revoke'].includes(command) && args.id === undefined) return `keys ${command} needs a key id`;
  // A URL parser drops `.` and `..` steps (encoded or not): `keys show ..` would ask the admin address's `/`.
  if (args.id === '.' || args.id === '..') return `\`${args.id}\` is not a key id`;
  return args;
}

/**
 * The admin base URL: --admin, ADMIN_ADDR, the config's adminAddr, the default. A wildcard address is reached on
 * loopback. `from` says which, for the error when nothing answers there (a first `keys create` against a gateway
 * whose admin address is not the default would otherwise read as a gateway that is down).
 */
interface Admin {
  base: string;
  from: string;
}

export async function adminBase(args: Pick<KeysArgs, 'admin' | 'file'>): Promise<Admin> {
  // An empty ADMIN_ADDR (set to nothing in a shell profile) is no address, as for ADMIN_API_KEY.
  const env = process.env.ADMIN_ADDR || undefined;
  let addr = args.admin ?? env;
  let from = args.admin !== undefined ? 'given by --admin' : env !== undefined ? 'given by ADMIN_ADDR' : undefined;
  if (addr === undefined && args.file !== undefined) {
    // Parsed as the gateway parses it: `${VAR}` expanded. Only an unset one in adminAddr is an error: the operator's
    // shell rarely has the gateway's provider keys, which this command never needs.
    const parsed = parseConfigText(args.file, await readConfigFile(args.file));
    const unset = parsed.envIssues.filter((i) => i.path.length === 2 && i.path[0] === 'config' && i.path[1] === 'adminAddr');
    if (unset.length > 0) throw new ConfigLoadError(positionRedacted(parsed.source, unset, parsed.secrets));
    addr = (parsed.value as { config?: { adminAddr?: string } } | null)?.config?.adminAddr;
    from = addr !== undefined ? `the adminAddr of ${args.file}` : `the default: ${args.file} sets no adminAddr; name the gateway's with --admin ADDR or ADMIN_ADDR`;
  }
  addr ??= '127.0.0.1:15000';
  from ??= "the default; name the gateway's with --admin ADDR, ADMIN_ADDR or -f FILE";
  if (addr === 'off') throw new Error('the admin address is off in this config; keys are managed there');
  // Credentials in the address would show in this command's errors and the process list: the key has its own option.
  if (/^(?:[a-z][a-z0-9+.-]*:\/\/)?[^/]*@/i.test(addr)) throw new Error('the admin address must not carry credentials: give the admin key in ADMIN_API_KEY (or --admin-key)');
  if (/^https?:\/\//i.test(addr)) return { base: addr.replace(/\/$/, ''), from };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(addr)) throw new Error(`--admin takes host:port or an http(s) URL, got \`${addr}\``);
  return { base: `http://${addr.replace(/^0\.0\.0\.0:/, '127.0.0.1:').replace(/^\[::\]:/, '127.0.0.1:')}`, from };
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  /** The address asked for a user and password (`adminUi.basicAuth`), which this command cannot send. */
  basic?: boolean;
}

function call({ base, from }: Admin, key: string | undefined, method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    // node:https only for an https address (TLS in front of the admin address): a plain one does not load TLS.
    const send = /^https:/i.test(base) ? process.getBuiltinModule('node:https').request : request;
    const headers: Record<string, string> = payload ? { 'content-type': 'application/json' } : {};
    if (key !== undefined) headers.authorization = `Bearer ${key}`;
    const req = send(`${base}${path}`, { method, headers }, (res) => {
      readCappedText(res, ADMIN_ANSWER_LIMIT).then(
        (text) => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown>, basic: /^basic\b/i.test(res.headers['www-authenticate'] ?? '') });
          } catch {
            reject(new Error(res.statusCode === 404 ? 'the gateway serves no /keys endpoint: is a `virtualKeys` policy configured?' : `unexpected answer ${res.statusCode}: ${text.slice(0, 200)}`));
          }
        },
        (e: unknown) =>
          reject(
            e instanceof BodyTooLargeError
              ? new Error(`the answer of ${base}${path} is larger than 64 MiB, the limit of this command: is that address the gateway's admin address?`)
              : new Error(`the answer of ${base}${path} broke off: ${(e as Error).message}`),
          ),
      );
    });
    req.on('error', (err) => reject(new Error(`cannot reach the admin address ${base} (${from}): ${err.message}`)));
    req.end(payload);
  });
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

type Key = Record<string, unknown> & { id: string; budgets?: Record<string, unknown>[] };
const budgetText = (b: Record<string, unknown>): string => {
  const unit = ['usd', 'tokens', 'requests'].find((u) => b[u] !== undefined)!;
  return `${unit}=${String(b[unit])}/${String(b.period)}`;
};

/**
 * Every key: `GET /keys` page after page (ADR 0172), as one answer `{keys, total}`. A gateway from before pages
 * answers all keys at once without `next`, which ends the loop as well.
 */
async function listAll(admin: Admin, adminKey: string | undefined, team: string | undefined): Promise<Answer> {
  const keys: unknown[] = [];
  let cursor: string | undefined;
  for (;;) {
    const query = new URLSearchParams({ ...(team !== undefined ? { team } : {}), ...(cursor !== undefined ? { cursor } : {}) }).toString();
    const answer = await call(admin, adminKey, 'GET', `/keys${query ? `?${query}` : ''}`);
    if (answer.status >= 400) return answer;
    keys.push(...((answer.body.keys as unknown[] | undefined) ?? []));
    const next = answer.body.next;
    if (typeof next !== 'string' || next === cursor) return { status: answer.status, body: { keys, total: answer.body.total ?? keys.length } };
    cursor = next;
  }
}

/** Run `switchyard keys ...`; resolves with the exit code. */
export async function keysMain(argv: readonly string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const args = parseKeysArgs(argv);
  if (typeof args === 'string') {
    err(`switchyard: ${args}\n\n${KEYS_USAGE}`);
    return 2;
  }
  try {
    const admin = await adminBase(args);
    const { base } = admin;
    const id = encodeURIComponent(args.id ?? '');
    // An empty ADMIN_API_KEY is no key (a variable set to nothing in a shell profile).
    const adminKey = args.adminKey ?? (process.env.ADMIN_API_KEY || undefined);
    // The gateway takes only such keys (config schema); said here rather than as Node's header error.
    if (adminKey !== undefined && !/^[!-~]+$/.test(adminKey)) throw new Error('the admin key (ADMIN_API_KEY or --admin-key) must be printable ASCII without spaces');
    const answer =
      args.command === 'list'
        ? await listAll(admin, adminKey, args.team)
        : args.command === 'create'
          ? await call(admin, adminKey, 'POST', '/keys', args.body)
          : args.command === 'rotate' || args.command === 'revoke'
            ? await call(admin, adminKey, 'POST', `/keys/${id}/${args.command}`)
            : await call(admin, adminKey, 'GET', `/keys/${id}`);
    if (answer.status === 401) {
      err(
        adminKey === undefined
          ? `switchyard: the admin address ${base} needs credentials: set ADMIN_API_KEY (or --admin-key) to its config.adminUi.apiKey${answer.basic ? " (this command cannot send basicAuth's user and password: a config with basicAuth alone needs an apiKey too)" : ''}\n`
          : `switchyard: the admin address ${base} refused the admin key (401): check ADMIN_API_KEY or --admin-key against config.adminUi.apiKey\n`,
      );
      return 1;
    }
    // Revoking a revoked key leaves it as the user wants it (a retried script, two operators): said, not an error.
    const gone = answer.body.key as Key | undefined;
    if (args.command === 'revoke' && answer.status === 409 && typeof gone?.revokedAt === 'string') {
      out(args.json ? `${JSON.stringify(answer.body, null, 2)}\n` : `key ${gone.id} was already revoked (at ${gone.revokedAt})\n`);
      return 0;
    }
    if (answer.status >= 400) {
      err(`switchyard: ${String((answer.body.error as { message?: string } | undefined)?.message ?? `error ${answer.status}`)}\n`);
      return 1;
    }
    if (args.json) {
      out(`${JSON.stringify(answer.body, null, 2)}\n`);
      return 0;
    }
    const key = answer.body.key as Key | undefined;
    if (args.command === 'list') {
      const keys = answer.body.keys as Key[];
      const rows = keys.map((k) => [k.id, String(k.owner ?? ''), String(k.team ?? ''), String(k.prefix ?? ''), k.revokedAt ? 'revoked' : 'active', String(k.source), (k.budgets ?? []).map(budgetText).join(' ')]);
      out(table([['ID', 'OWNER', 'TEAM', 'SECRET', 'STATE', 'SOURCE', 'BUDGETS'], ...rows]));
    } else if (args.command === 'create' || args.command === 'rotate') {
      out(`${args.command === 'create' ? 'created' : 'rotated'} key ${key!.id}; its secret (shown only now):\n${String(answer.body.secret)}\n`);
    } else if (args.command === 'revoke') {
      out(`revoked key ${key!.id}\n`);
    } else {
      out(`key ${key!.id}  owner ${String(key!.owner ?? '-')}  team ${String(key!.team ?? '-')}  ${key!.revokedAt ? 'revoked' : 'active'}\n`);
      const usage = answer.body.usage as Record<string, unknown>[];
      if (usage.length) out(table([['SCOPE', 'BUDGET', 'USED', 'REMAINING', 'RESETS'], ...usage.map((u) => [String(u.scope), budgetText(u), String(u.used), String(u.remaining), String(u.resetsAt ?? 'never')])]));
      else out('no budgets\n');
      const life = answer.body.lifetime as { tokens?: number; usd?: number } | undefined;
      if (life) out(`lifetime: ${String(life.tokens ?? 0)} tokens, ${String(life.usd ?? 0)} USD\n`);
    }
    return 0;
  } catch (e) {
    err(`switchyard: ${(e as Error).message}\n`);
    return 1;
  }
}
