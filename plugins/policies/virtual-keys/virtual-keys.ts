// `virtualKeys` (docs/llm-economics.md, ADR 0035): authenticate a gateway-issued key, then hand the LLM backend a
// limiter that reserves the call's estimated cost on every budget of the key and its team before the call, and
// settles the real cost (from the backend's usage and price catalog, `llmCall`) once the answer has ended.
import { addLlmTokenLimiter, defineAttribute, didYouMean, jsonErrorReply, llmCall, notChecked, principal } from 'switchyard/sdk';
import type { AttributeKey, CompileContext, Exchange, PolicyInstance, Reply } from 'switchyard/sdk';
import { KEY_HEADERS, presentedKey, takeSubprotocolKey, unpresentableKey } from '../../lib/credentials/credentials.ts';
import { openStore, storeIdentity } from '../../lib/key-store/open-store.ts';
import { digestOf, displayPrefix } from '../../lib/key-store/secrets.ts';
import type { Budget, KeyRecord, KeyStore } from '../../lib/key-store/types.ts';
import { keysAdminApi } from './admin-api.ts';
import { KeyNumbers } from './key-numbers.ts';
import { checkDeclaredRoutes } from './declared-routes.ts';
import { toBudget } from './config.ts';
import type { BudgetConfig, VirtualKeysConfig } from './config.ts';
import { keyStateOf, sharedSlotLists } from './key-state.ts';
import type { KeyState, Slot } from './key-state.ts';
import { KeyReservation, unauthorized } from './reservation.ts';

/** What CEL sees as `key`. */
export interface KeyAttribute {
  readonly id: string;
  readonly name: string;
  readonly owner: string;
  readonly team: string;
  readonly models: readonly string[];
  readonly metadata: Readonly<Record<string, unknown>>;
}

/** The `key` attribute (CEL `key.id`, `key.owner`, `key.team`, `key.metadata.<field>`). */
export const keyAttribute: AttributeKey<KeyAttribute> = defineAttribute<KeyAttribute>('key');

/** Everything shared by the `virtualKeys` policies of one config: one store, one set of teams and declared keys. */
export interface KeyDirectory {
  readonly store: KeyStore;
  readonly declared: ReadonlyMap<string, KeyRecord>;
  readonly declaredById: ReadonlyMap<string, KeyRecord>;
  readonly teams: ReadonlyMap<string, readonly Budget[]>;
  /** Budgets every key draws from (`virtualKeys.budgets`). */
  readonly shared: readonly Budget[];
  readonly outputEstimate: number;
  readonly metrics: KeyMetrics;
  /** Every key's lifetime sums and cost waiting to be handed on (ADR 0177), kept with the store across reloads. */
  readonly numbers: KeyNumbers;
  /** Per key digest: the key's slots, names, CEL view and series (key-state.ts), while it names the same record. */
  readonly byDigest: Map<string, KeyState>;
  /** Per declared team (and `''` for keys without one): the team's and the organisation's slots, shared by its keys. */
  readonly sharedSlots: ReadonlyMap<string, readonly Slot[]>;
}

type Inc = { inc(by?: number): void };

/** `/metrics` series of virtual keys: spend by team and by key, refusals by reason (docs/observability.md). */
export interface KeyMetrics {
  /** What the LLM answers of a team's keys cost in USD (`none` for keys without a team): resolved at a key's first flush of the numbers. */
  teamSpend(team: string): Inc;
  /** What one key's LLM answers cost in USD, by key id: resolved at a key's first flush of the numbers (ADR 0177). */
  keySpend(key: string): Inc;
  /** Run `fn` before `/metrics` shows the keys' cost (the numbers hand theirs on then), until the returned function is called. */
  beforeScrape(fn: () => void): () => void;
  /** A refused request: `unauthenticated`, `route`, `model` or `budget`. */
  denied(reason: 'unauthenticated' | 'route' | 'model' | 'budget'): void;
}

function keyMetrics(ctx: CompileContext): KeyMetrics {
  const spend = ctx.counter('switchyard_virtual_key_spend_usd_total', 'USD the LLM answers of virtual keys cost (charged to their budgets, if any), by team.');
  const keySpend = ctx.counter('switchyard_virtual_key_cost_usd_total', 'What the LLM answers of each virtual key cost in USD (price catalog), by key id.');
  const denials = ctx.counter('switchyard_virtual_key_denials_total', 'Requests refused by the virtualKeys policy, by reason (unauthenticated, route, model, budget).');
  const reasons = {
    unauthenticated: denials.child({ reason: 'unauthenticated' }),
    route: denials.child({ reason: 'route' }),
    model: denials.child({ reason: 'model' }),
    budget: denials.child({ reason: 'budget' }),
  };
  return {
    teamSpend: (team) => spend.child({ team }),
    keySpend: (key) => keySpend.child({ key }),
    // On the team series only: `/metrics` runs a counter's hooks as it renders it, and that one was made (is
    // rendered) first, so the hook runs once per scrape, before either series shows.
    beforeScrape: (fn) => spend.beforeScrape(fn),
    denied: (reason) => reasons[reason].inc(),
  };
}

/** A store kept across reloads while its settings are unchanged. */
class StoreHandle {
  readonly ready: Promise<KeyStore>;
  /** The keys' numbers (ADR 0177): a reload that keeps the store keeps what they hold. */
  readonly numbers = new KeyNumbers();
  /** Removes the `/metrics` hook that hands the numbers' costs on (one per handle, whichever load set it). */
  private unhook: (() => void) | undefined;
  constructor(open: () => Promise<KeyStore>) {
    this.ready = open();
    this.ready.then((s) => (this.numbers.store = s), () => undefined);
  }
  /**
   * Awaited by the gateway's stop (and a reload that drops the store): the numbers hand on what they hold, then a
   * SQLite store folds its WAL in and writes its lifetime sums at close.
   */
  close(): Promise<void> {
    return this.ready.then(async (s) => {
      await this.numbers.flush();
      this.unhook?.();
      await s.close();
    }, () => undefined);
  }

  /**
   * `/metrics` hands the numbers' costs to the series when it is read, while this handle lives; the lifetime sums
   * keep their FLUSH_MS timer.
   */
  hookScrape(metrics: KeyMetrics): void {
    this.unhook ??= metrics.beforeScrape(() => this.numbers.flushSpend());
  }
}

function budgets(list: BudgetConfig[] | undefined, ctx: CompileContext, at: (string | number)[]): Budget[] {
  return (list ?? []).map((b, i) => toBudget(b) ?? ctx.fail('a budget needs exactly one of `usd`, `tokens`, `requests` (a positive number) and a `period`', [...at, i]));
}

async function directory(config: VirtualKeysConfig, ctx: CompileContext): Promise<KeyDirectory> {
  const identity = storeIdentity(config.store, ctx.cwd);
  if (config.store?.sqlite?.path === ':memory:' && ctx.sharedEvents.others) {
    ctx.warn('`:memory:` is one database per worker with `config.workers`: a key made through `/keys` works only on the connections of the worker that made it; name a file to share keys between workers', ['store', 'sqlite', 'path']);
  }
  const teams = new Map<string, readonly Budget[]>();
  (config.teams ?? []).forEach((t, i) => {
    if (teams.has(t.name)) ctx.fail(`team \`${t.name}\` is declared twice`, ['teams', i, 'name']);
    teams.set(t.name, budgets(t.budgets, ctx, ['teams', i, 'budgets']));
  });
  const declared = new Map<string, KeyRecord>();
  const declaredById = new Map<string, KeyRecord>();
  const createdAt = new Date().toISOString();
  (config.keys ?? []).forEach((k, i) => {
    if (declaredById.has(k.id)) ctx.fail(`key id \`${k.id}\` is declared twice`, ['keys', i, 'id']);
    const problem = unpresentableKey(k.key);
    if (problem !== undefined) ctx.fail(problem, ['keys', i, 'key']);
    const digest = digestOf(k.key);
    // The message names positions, never the secret.
    if (declared.has(digest)) ctx.fail(`this key is the same as the one of \`${declared.get(digest)!.id}\`; each key must be unique`, ['keys', i, 'key']);
    if (k.team !== undefined && !teams.has(k.team)) {
      const guess = didYouMean(k.team, teams.keys());
      ctx.warn(`team \`${k.team}\` is not declared under \`teams\`${guess !== undefined ? ` (did you mean \`${guess}\`?)` : ''}: the key has no team budget`, ['keys', i, 'team']);
    }
    const record: KeyRecord = {
      id: k.id,
      name: k.name,
      owner: k.owner,
      team: k.team,
      models: k.models,
      routes: k.routes,
      budgets: budgets(k.budgets, ctx, ['keys', i, 'budgets']),
      metadata: k.metadata,
      prefix: displayPrefix(k.key),
      createdAt,
      source: 'config',
    };
    declared.set(digest, record);
    declaredById.set(k.id, record);
  });
  const shared = budgets(config.budgets, ctx, ['budgets']);
  // Opened after the checks above, which the admin UI's validator makes without it (ADR 0131); `:memory:` touches nothing.
  if (ctx.checkOnly && config.store?.sqlite?.path !== ':memory:') notChecked(ctx, 'the key store', ['store']);
  const handle = ctx.resources.get(`virtualKeys:store:${identity}`, () => new StoreHandle(() => openStore(config.store, ctx.cwd)), (h) => h.close());
  let store: KeyStore;
  try {
    store = await handle.ready;
  } catch (err) {
    ctx.fail(`cannot open the key store: ${(err as Error).message}`, ['store']);
  }
  const metrics = keyMetrics(ctx);
  const numbers = handle.numbers;
  // Set by the handle's first load: the store and the registry are the same for its life, and a later compile (a
  // staged reload another worker refused, an admin UI paste) must not re-point the logger.
  numbers.store ??= store;
  numbers.seriesOf ??= metrics.keySpend;
  numbers.teamSeriesOf ??= metrics.teamSpend;
  numbers.logger ??= ctx.logger;
  handle.hookScrape(metrics);
  return { store, declared, declaredById, teams, shared, outputEstimate: config.outputEstimate ?? 256, metrics, numbers, byDigest: new Map(), sharedSlots: sharedSlotLists(teams, shared) };
}

export async function compileVirtualKeys(config: VirtualKeysConfig, ctx: CompileContext): Promise<PolicyInstance> {
  // All virtualKeys policies of a config describe one set of keys: the first compiles it, the others must agree.
  const shared = ctx.loadState('virtualKeys', () => ({
    signature: JSON.stringify([config.store, config.budgets, config.teams, config.keys, config.outputEstimate]),
    dir: undefined as Promise<KeyDirectory> | undefined,
    // The routes of this config that take keys: the names a made key's `routes` may hold (ADR 0191).
    routes: new Set<string>(),
  }));
  if (shared.signature !== JSON.stringify([config.store, config.budgets, config.teams, config.keys, config.outputEstimate])) {
    ctx.fail('every `virtualKeys` policy of a config must have the same `store`, `budgets`, `teams`, `keys` and `outputEstimate` (write them once and reuse them with a YAML anchor)');
  }
  if (ctx.route !== undefined) shared.routes.add(ctx.route);
  const first = shared.dir === undefined;
  // The routes a declared key lists, once every route is compiled (ADR 0196); added before the store opens, so the
  // admin UI's validator, which leaves the store unchecked, checks them too.
  const keys = config.keys ?? [];
  if (first && keys.some((k) => k.routes !== undefined)) ctx.afterLoad?.((load) => checkDeclaredRoutes(keys, load, ctx));
  shared.dir ??= directory(config, ctx);
  const dir = await shared.dir;
  if (first) ctx.adminRoute?.('/keys', keysAdminApi(dir, shared.routes));
  const mode = config.mode ?? 'strict';

  const admit = (ex: Exchange, key: KeyState): Reply | undefined => {
    const routes = key.routes;
    if (routes && !routes.includes(ex.route.name)) {
      dir.metrics.denied('route');
      return jsonErrorReply(403, 'permission_denied', `virtual key \`${key.id}\` may not use route \`${ex.route.name}\``);
    }
    ex.set(keyAttribute, key.attribute);
    ex.set(principal, key.principal);
    ex.logField('key.id', key.id);
    if (key.team !== undefined) ex.logField('key.team', key.team);
    addLlmTokenLimiter(ex, new KeyReservation(ex, dir, key, ctx.logger));
    return undefined;
  };

  /** A record the store found (or not) for `digest`. */
  const admitFound = (ex: Exchange, record: KeyRecord | undefined, digest: string): Reply | undefined => {
    if (record !== undefined && record.revokedAt === undefined) return admit(ex, keyStateOf(dir, record, digest));
    // A key gone or revoked since it was seen: its state goes (an unknown digest never gets one).
    dir.byDigest.delete(digest);
    dir.metrics.denied('unauthenticated');
    return unauthorized(record === undefined ? 'invalid credentials' : 'key revoked');
  };

  return {
    credentialHeaders: KEY_HEADERS,
    onRequest(ex) {
      // As `apiKey` reads keys, a browser's WebSocket subprotocol last (ADR 0195).
      const fromSubprotocol = takeSubprotocolKey(ex.headers);
      const presented = presentedKey(ex.headers) ?? fromSubprotocol;
      if (presented === undefined) {
        if (mode !== 'strict') return undefined;
        dir.metrics.denied('unauthenticated');
        return unauthorized('no key found');
      }
      const digest = digestOf(presented);
      // A key seen before: its state (ADR 0112) holds the store's lookup of it, so the store confirms its record
      // without a lookup of its own; the digest the map holds is the instance that lookup was made with, so the
      // memo's check compares two pointers.
      const known = dir.byDigest.get(digest);
      if (known === undefined) {
        const declared = dir.declared.get(digest);
        if (declared) return admit(ex, keyStateOf(dir, declared, digest, true));
      } else if (known.digest === undefined) return admit(ex, known);
      const at = known?.digest ?? digest;
      const found = dir.store.find(at, known);
      if (known !== undefined && found === known.record) return admit(ex, known);
      return found instanceof Promise ? found.then((r) => admitFound(ex, r, at)) : admitFound(ex, found, at);
    },
    onLog(ex, status) {
      const reservation = KeyReservation.of(ex);
      if (reservation === undefined) return;
      reservation.settle(ex, status);
      // Every key's cost, budgets or not (a key without budgets makes no reservation).
      const usd = ex.get(llmCall)?.cost;
      if (usd) dir.numbers.addSpend(reservation.key, usd);
    },
  };
}
