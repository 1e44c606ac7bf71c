// The management API on the admin address (docs/llm-economics.md "Managing keys"): create, list, show with usage,
// rotate and revoke keys. `switchyard keys ...` is a client of it. Secrets are shown once, when made.
import { didYouMean } from 'switchyard/sdk';
import type { AdminRequest, AdminResponse, AdminRouteHandler } from 'switchyard/sdk';
import { windowOf } from '../../lib/key-store/periods.ts';
import { digestOf, displayPrefix, newKeyId, newSecret } from '../../lib/key-store/secrets.ts';
import type { Budget, KeyRecord } from '../../lib/key-store/types.ts';
import { fromBudget, toBudget } from './config.ts';
import { someNames } from './declared-routes.ts';
import type { BudgetConfig } from './config.ts';
import { counterName, lifetimeCounters } from './key-state.ts';
import type { KeyDirectory } from './virtual-keys.ts';

const ok = (body: unknown, status = 200): AdminResponse => ({ status, body });
const problem = (status: number, message: string): AdminResponse => ({ status, body: { error: { message } } });

/**
 * The answer to rotating or revoking a revoked key: 409 with the key as it is, so that a client can tell "already
 * revoked" (and since when) from other conflicts; `switchyard keys revoke` then exits 0 (ADR 0191).
 */
function revoked(record: KeyRecord): AdminResponse {
  const since = record.revokedAt !== undefined ? ` since ${record.revokedAt}` : '';
  return { status: 409, body: { error: { message: `key \`${record.id}\` is revoked${since}` }, key: view(record) } };
}

/** A key as the API shows it: budgets in the config's spelling. */
function view(record: KeyRecord): Record<string, unknown> {
  return { ...record, budgets: record.budgets.map(fromBudget) };
}

const STRING_FIELDS = ['name', 'owner', 'team'] as const;

/**
 * Bounds of a made key (ADR 0183): `GET /keys` answers up to 1,000 keys a page, so a key of nearly the body limit
 * (1 MiB) in each field made pages of about a gigabyte. Names and lists sized for people and model names.
 */
const MAX_TEXT = 256;
const MAX_LIST = 100;
const MAX_BUDGETS = 16;
const MAX_METADATA_BYTES = 4096;

/** The fields of a create request, checked; a message when something is wrong. */
function parseCreate(body: unknown): Omit<KeyRecord, 'id' | 'prefix' | 'createdAt' | 'source'> | string {
  if (body === undefined) body = {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body must be a JSON object';
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (![...STRING_FIELDS, 'models', 'routes', 'budgets', 'metadata'].includes(k)) return `unknown field \`${k}\``;
  for (const k of STRING_FIELDS) {
    if (b[k] !== undefined && (typeof b[k] !== 'string' || b[k] === '')) return `\`${k}\` must be a non-empty string`;
    if (typeof b[k] === 'string' && b[k].length > MAX_TEXT) return `\`${k}\` is longer than ${MAX_TEXT} characters`;
  }
  for (const k of ['models', 'routes'] as const) {
    if (b[k] !== undefined && (!Array.isArray(b[k]) || !(b[k] as unknown[]).every((v) => typeof v === 'string' && v !== ''))) return `\`${k}\` must be a list of names`;
    const list = b[k] as string[] | undefined;
    if (list && (list.length > MAX_LIST || list.some((v) => v.length > MAX_TEXT))) return `\`${k}\` takes at most ${MAX_LIST} names of at most ${MAX_TEXT} characters`;
  }
  if (b.metadata !== undefined && (typeof b.metadata !== 'object' || b.metadata === null || Array.isArray(b.metadata))) return '`metadata` must be an object';
  if (b.metadata !== undefined && Buffer.byteLength(JSON.stringify(b.metadata)) > MAX_METADATA_BYTES) return `\`metadata\` is larger than ${MAX_METADATA_BYTES} bytes of JSON`;
  const budgets: Budget[] = [];
  if (b.budgets !== undefined) {
    if (!Array.isArray(b.budgets)) return '`budgets` must be a list';
    if (b.budgets.length > MAX_BUDGETS) return `\`budgets\` takes at most ${MAX_BUDGETS} budgets`;
    for (const [i, raw] of (b.budgets as unknown[]).entries()) {
      const budget = typeof raw === 'object' && raw !== null ? toBudget(raw as BudgetConfig) : undefined;
      if (!budget) return `\`budgets[${i}]\` needs exactly one of \`usd\`, \`tokens\`, \`requests\` (a positive number) and a \`period\` (minute, hour, day, month, total)`;
      budgets.push(budget);
    }
  }
  return {
    name: b.name as string | undefined,
    owner: b.owner as string | undefined,
    team: b.team as string | undefined,
    models: b.models as string[] | undefined,
    routes: b.routes as string[] | undefined,
    metadata: b.metadata as Record<string, unknown> | undefined,
    budgets,
  };
}

/** Each budget of the key and of its team in its current window: limit, used (settled + reserved), reset time. */
async function usage(dir: KeyDirectory, record: KeyRecord): Promise<Record<string, unknown>[]> {
  const now = Date.now();
  const rows: { scope: string; budget: Budget; counter: string; tag: string; endsAt: number }[] = [];
  const add = (scope: string, prefix: string, budgets: readonly Budget[]): void => {
    for (const b of budgets) {
      const w = windowOf(b.period, now);
      rows.push({ scope, budget: b, counter: counterName(prefix, b, w.tag), tag: w.tag, endsAt: w.endsAt });
    }
  };
  add(`key:${record.id}`, `k:${record.id}`, record.budgets);
  const team = record.team !== undefined ? dir.teams.get(record.team) : undefined;
  if (team) add(`team:${record.team!}`, `t:${record.team!}`, team);
  add('all', 'g', dir.shared);
  const values = await dir.store.values(rows.map((r) => r.counter));
  return rows.map((r, i) => ({
    scope: r.scope,
    ...fromBudget(r.budget),
    limit: r.budget.limit,
    used: shown(values[i]!),
    remaining: shown(Math.max(0, r.budget.limit - values[i]!)),
    window: r.tag,
    resetsAt: r.endsAt === 0 ? null : new Date(r.endsAt).toISOString(),
  }));
}

/** What the key's LLM calls have used since it was made (settled; plus what calls in flight have reserved on a `total` budget). */
async function lifetime(dir: KeyDirectory, record: KeyRecord): Promise<{ tokens: number; usd: number }> {
  const c = lifetimeCounters(record.id);
  // What this process's answers added and the numbers still hold goes to the store first (ADR 0177).
  await dir.numbers.flush();
  const [tokens, usd] = await dir.store.values([c.tokens, c.usd]);
  return { tokens: shown(tokens!), usd: shown(usd!) };
}

/**
 * A counter as the API shows it: 12 significant digits. USD counters are sums of many reservations and settlements
 * in binary floating point, which read `0.00015500000000000236` for 0.000155.
 */
function shown(value: number): number {
  return Number(value.toPrecision(12));
}

/** The refusal of a key for a team the config does not declare. */
function unknownTeam(team: string, declared: Iterable<string>): string {
  const names = [...declared];
  const guess = didYouMean(team, names);
  const known = names.length === 0 ? 'the config declares no teams' : `declared: ${names.map((n) => `\`${n}\``).join(', ')}`;
  return `team \`${team}\` is not declared under \`virtualKeys.teams\` (${guess !== undefined ? `did you mean \`${guess}\`? ` : ''}${known}); declare it there, with or without budgets, to make keys for it`;
}

/** The refusal of a key naming a route that takes no keys in this config (ADR 0191). */
function unknownRoute(route: string, known: ReadonlySet<string>): string {
  const names = [...known].sort();
  const guess = didYouMean(route, names);
  const shown = someNames(names);
  return `route \`${route}\` has no \`virtualKeys\` policy in this config (${guess !== undefined ? `did you mean \`${guess}\`? ` : ''}routes that take keys: ${shown}); a key limited to it would be refused everywhere: add the route (and reload) first`;
}

/**
 * Ids as made (`vk_` + base64url) and as the config's schema takes them; `.` and `..` are path steps that a client's
 * URL parser removes, so such an id would never reach its key.
 */
const KEY_ID = /^[A-Za-z0-9_.-]+$/;
const validId = (id: string): boolean => KEY_ID.test(id) && id !== '.' && id !== '..';

/** Keys a `GET /keys` answers at most, and without `limit` (ADR 0172): 10,000 keys were one 3 MB answer. */
const MAX_PAGE = 1000;

/** `limit` of a list request, MAX_PAGE when absent; undefined when it is not a whole number from 1 to MAX_PAGE. */
function pageLimit(text: string | null): number | undefined {
  if (text === null) return MAX_PAGE;
  const n = /^[0-9]{1,4}$/.test(text) ? Number(text) : 0;
  return n >= 1 && n <= MAX_PAGE ? n : undefined;
}

/**
 * JSON bytes of keys a page carries at most, `limit` or not (ADR 0191): 1,000 keys of the largest kind a create
 * takes (ADR 0183) were a 35 MB page and 400 MB of memory to answer it. Past this the page ends early with `next`.
 */
const MAX_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * One page of keys in id order: those after `cursor` (the last id of the previous page), with the count of all
 * keys listed and, unless this is the last page, the cursor of the next. Ids never change and keys are never
 * deleted (a revoked key stays listed), so a key made while a client pages shows on a later page or not at all,
 * and none shows twice. A page ends at `limit` keys or MAX_PAGE_BYTES, whichever comes first (one key at least).
 */
function keysPage(all: readonly KeyRecord[], limit: number, cursor: string | null): Record<string, unknown> {
  const sorted = [...all].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const after = cursor === null ? sorted : sorted.filter((k) => k.id > cursor);
  const keys: Record<string, unknown>[] = [];
  let bytes = 0;
  for (const record of after) {
    if (keys.length === limit) break;
    const shown = view(record);
    bytes += JSON.stringify(shown).length;
    if (bytes > MAX_PAGE_BYTES && keys.length > 0) break;
    keys.push(shown);
  }
  return { keys, total: sorted.length, ...(after.length > keys.length ? { next: keys[keys.length - 1]!.id } : {}) };
}

export function keysAdminApi(dir: KeyDirectory, routes: ReadonlySet<string>): AdminRouteHandler {
  const find = async (id: string): Promise<KeyRecord | undefined> => dir.declaredById.get(id) ?? (await dir.store.get(id));

  return async (req: AdminRequest): Promise<AdminResponse> => {
    const parts = req.subpath.split('/').filter((p) => p !== '');
    if (parts.length === 0) {
      if (req.method === 'GET') {
        const limit = pageLimit(req.query.get('limit'));
        if (limit === undefined) return problem(400, `\`limit\` must be a whole number from 1 to ${MAX_PAGE}`);
        const team = req.query.get('team');
        const all = [...dir.declaredById.values(), ...(await dir.store.list())].filter((k) => team === null || k.team === team);
        // A mistyped team listed nothing, as if the team had no keys; a team only declared keys name still lists them.
        if (team !== null && all.length === 0 && !dir.teams.has(team)) return problem(400, unknownTeam(team, dir.teams.keys()));
        return ok(keysPage(all, limit, req.query.get('cursor')));
      }
      if (req.method === 'POST') {
        const fields = parseCreate(req.body);
        if (typeof fields === 'string') return problem(400, fields);
        // A mistyped team would escape every team budget; in the config file the same mistake is a warning at load.
        if (fields.team !== undefined && !dir.teams.has(fields.team)) return problem(400, unknownTeam(fields.team, dir.teams.keys()));
        // A mistyped route would make a key refused on every route (403), and nothing would say why.
        const stray = fields.routes?.find((r) => !routes.has(r));
        if (stray !== undefined) return problem(400, unknownRoute(stray, routes));
        const secret = newSecret();
        const record: KeyRecord = { id: newKeyId(), ...fields, prefix: displayPrefix(secret), createdAt: new Date().toISOString(), source: 'api' };
        await dir.store.create(record, digestOf(secret));
        return ok({ key: view(record), secret }, 201);
      }
      return problem(405, `method ${req.method} not allowed on /keys`);
    }
    const id = parts[0]!;
    const action = parts[1];
    if (!validId(id)) return problem(400, 'malformed key id: an id is letters, digits, `_`, `.` and `-` (not `.` or `..` alone)');
    if (parts.length > 2 || (action !== undefined && !['rotate', 'revoke', 'usage'].includes(action))) return problem(404, 'not found');
    const record = await find(id);
    if (!record) return problem(404, `no key \`${id}\``);
    if (req.method === 'GET' && (action === undefined || action === 'usage')) {
      const [budgets, total] = await Promise.all([usage(dir, record), lifetime(dir, record)]);
      return ok({ key: view(record), usage: budgets, lifetime: total });
    }
    const revoke = (req.method === 'POST' && action === 'revoke') || (req.method === 'DELETE' && action === undefined);
    const rotate = req.method === 'POST' && action === 'rotate';
    if (!revoke && !rotate) return problem(405, `method ${req.method} not allowed here`);
    if (record.source === 'config') return problem(409, `key \`${id}\` is declared in the config file: change it there`);
    if (record.revokedAt !== undefined) return revoked(record);
    const at = new Date().toISOString();
    if (revoke) {
      // Revoked meanwhile (another request or gateway): answered as a key that was revoked before.
      if (!(await dir.store.revoke(id, at))) return revoked((await find(id)) ?? record);
      return ok({ key: view({ ...record, revokedAt: at }) });
    }
    const secret = newSecret();
    if (!(await dir.store.rotate(id, digestOf(secret), displayPrefix(secret), at))) return revoked((await find(id)) ?? record);
    return ok({ key: view({ ...record, prefix: displayPrefix(secret), rotatedAt: at }), secret });
  };
}
