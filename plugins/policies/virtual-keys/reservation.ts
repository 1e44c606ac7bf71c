import { declineReply, defineAttribute, jsonErrorReply, llmCall, llmSettlement } from 'switchyard/sdk';
import type { Exchange, LlmCallQuote, LlmTokenLimiter, LlmTokenUsage, Logger, Reply } from 'switchyard/sdk';
import { windowOf } from '../../lib/key-store/periods.ts';
import { KEY_GONE } from '../../lib/key-store/types.ts';
import type { BudgetUnit, CounterDelta, CounterLine } from '../../lib/key-store/types.ts';
import { counterName } from './key-state.ts';
import type { KeyState, LineOwner, Slot } from './key-state.ts';
import type { KeyDirectory } from './virtual-keys.ts';

const RESERVATION = defineAttribute<KeyReservation>('virtualKeys.reservation');

export const unauthorized = (message: string): Reply => jsonErrorReply(401, 'authentication_failed', `virtual key authentication failure: ${message}`);

/** Whether `model` matches a `*` pattern (linear: no regex, no backtracking). */
export function modelMatches(pattern: string, model: string): boolean {
  if (!pattern.includes('*')) return pattern === model;
  const parts = pattern.split('*');
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (model.length < first.length + last.length || !model.startsWith(first) || !model.endsWith(last)) return false;
  let at = first.length;
  const end = model.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = model.indexOf(parts[i]!, at);
    if (found === -1 || found + parts[i]!.length > end) return false;
    at = found + parts[i]!.length;
  }
  return true;
}

const DAY_MS = 86_400_000;

/**
 * A reservation's line with its budget's unit, which the settlement reads to pick the real amount: the line is the
 * request's own (young, warm), while its key's slot is cold again by the time the answer has ended (ADR 0112).
 */
interface KeyLine extends CounterLine {
  readonly unit: BudgetUnit;
}

/**
 * One request's claim on its key's and team's budgets (ADR 0035). `reserve` (called by the LLM backend once it knows
 * the model and the prompt) checks the model, then atomically takes the estimate from every budget, refusing when
 * one is used up; `settle` (in `onLog`, after the answer, streams included) adds what the real usage differs by.
 * A request passes while a budget has anything left, so concurrent requests overshoot it by at most one estimate.
 */
export class KeyReservation implements LlmTokenLimiter {
  private readonly dir: KeyDirectory;
  /** The key's state (record, slots, lifetime counters, series: key-state.ts). */
  readonly key: KeyState;
  private readonly logger: Logger;
  private lines: KeyLine[] | undefined;
  /** What was reserved in tokens and USD: what an answer without usage is settled at (ADR 0116). */
  private estimatedTokens = 0;
  private estimatedUsd = 0;

  /** Made when the key is admitted, and kept on the exchange (`of`) for `onLog`, reserved or not. */
  constructor(ex: Exchange, dir: KeyDirectory, key: KeyState, logger: Logger) {
    this.dir = dir;
    this.key = key;
    this.logger = logger;
    ex.set(RESERVATION, this);
  }

  static of(ex: Exchange): KeyReservation | undefined {
    return ex.get(RESERVATION);
  }

  /** Synchronous when the store answers at once (SQLite): no promise and no microtask per request. */
  reserve(ex: Exchange, estimate: number, quote?: LlmCallQuote): Reply | undefined | Promise<Reply | undefined> {
    const key = this.key;
    const models = key.models;
    if (models) {
      // A passthrough request's model is not read: a key limited to some models may not use such routes.
      // A virtual model (`ai.virtualModels`) is allowed or not by the name the client used, whichever target serves it.
      // A refusal declines this backend: under failover another one whose model the key may use serves (ADR 0150),
      // and the denial is counted when it is the answer (`settle`).
      const model = quote?.virtualModel ?? quote?.model;
      if (model === undefined) return this.refuseModel(`virtual key \`${key.id}\` is limited to some models and this request names none the gateway can read`);
      if (!models.some((p) => modelMatches(p, model))) return this.refuseModel(`virtual key \`${key.id}\` may not use model \`${model}\``);
    }
    // A failover to another provider calls reserve again: the first reservation stands.
    if (this.lines) return undefined;
    const outputTokens = quote?.maxOutputTokens ?? this.dir.outputEstimate;
    const price = quote?.price;
    const tokens = estimate + outputTokens;
    const usd = price ? (estimate * price.input + outputTokens * price.output) / 1_000_000 : 0;
    this.estimatedTokens = tokens;
    this.estimatedUsd = usd;
    const now = Date.now();
    const slots = key.slots;
    const lines = this.linesAt(now, 1, tokens, usd);
    if (lines.length === 0 && key.digest === undefined) {
      // Nothing to reserve, but the answer's usage still settles on the key's lifetime counters.
      this.lines = lines;
      return undefined;
    }
    // A stored key is confirmed in the reservation's own round trip: rotated or revoked meanwhile (maybe on another
    // replica, after this process cached the record), the request is refused like an unknown key. The key's state is
    // where the store keeps its lookup of the key (ADR 0110).
    const refused = this.dir.store.reserve(lines, key.digest, key);
    return typeof refused === 'number' ? this.reserved(lines, slots, now, refused) : refused.then((r) => this.reserved(lines, slots, now, r));
  }

  /** A line per budget slot in the window `now` falls in, with the amount of its unit. */
  private linesAt(now: number, requests: number, tokens: number, usd: number): KeyLine[] {
    const slots = this.key.slots;
    // Of its final size: pushes grew it from 0 (a request-long array, sometimes promoted under load).
    const lines = new Array<KeyLine>(slots.length);
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i]!;
      const b = s.budget;
      const w = windowOf(b.period, now);
      if (w.tag !== s.tag) {
        s.tag = w.tag;
        s.counter = counterName(s.scope, b, w.tag);
        // Counters outlive their window by a day, so a late settlement still lands on its own window.
        s.expiresAt = w.endsAt === 0 ? 0 : w.endsAt + DAY_MS;
      }
      const unit = b.unit;
      lines[i] = { counter: s.counter, limit: b.limit, amount: unit === 'requests' ? requests : unit === 'tokens' ? tokens : usd, expiresAt: s.expiresAt, memo: s, unit };
    }
    return lines;
  }

  /** A backend refused for its model: the first such refusal, counted as a denial if it is the client's answer. */
  private modelRefusal: Reply | undefined;

  private refuseModel(message: string): Reply {
    const reply = declineReply(jsonErrorReply(403, 'permission_denied', message));
    this.modelRefusal ??= reply;
    return reply;
  }

  /** The store's answer to a reservation: a refusal, or the lines kept for the settlement. */
  private reserved(lines: KeyLine[], slots: readonly Slot[], now: number, refused: number): Reply | undefined {
    if (refused === KEY_GONE) {
      this.dir.metrics.denied('unauthenticated');
      return unauthorized('invalid credentials');
    }
    if (refused >= 0) {
      this.dir.metrics.denied('budget');
      return exhausted(slots[refused]!, now);
    }
    this.lines = lines;
    return undefined;
  }

  /**
   * A realtime session's response (ADR 0190): its tokens and cost added to every budget and the key's lifetime usage,
   * then the budgets checked as a new request's reservation would be (nothing taken): one used up, or the key revoked
   * or rotated meanwhile, ends the session with the refusal a new request would get.
   */
  charge(_ex: Exchange, usage: LlmTokenUsage, cost: number | undefined): Reply | undefined | Promise<Reply | undefined> {
    if (!this.lines) return undefined;
    const tokens = (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
    const usd = cost ?? 0;
    if (tokens !== 0 || usd !== 0) this.dir.numbers.addLifetime(this.key, tokens, usd);
    if (this.key.slots.length === 0 && this.key.digest === undefined) return undefined;
    // The windows of now: a session open across midnight charges the new day.
    const now = Date.now();
    const deltas: CounterDelta[] = [];
    for (const line of this.linesAt(now, 0, tokens, usd)) {
      if (line.amount !== 0) deltas.push({ counter: line.counter, amount: line.amount, expiresAt: line.expiresAt, memo: line.memo });
    }
    const check = (): Reply | undefined | Promise<Reply | undefined> => {
      const refused = this.dir.store.reserve(this.linesAt(now, 0, 0, 0), this.key.digest, this.key);
      return typeof refused === 'number' ? this.stillAllowed(refused, now) : refused.then((r) => this.stillAllowed(r, now));
    };
    // A failed settlement is logged, as after a request; the check that follows decides whether the session goes on.
    const failed = (err: unknown): void => this.logger.error('virtual key budget settlement failed', { key: this.key.id, error: err as Error });
    let settled: void | Promise<void> = undefined;
    try {
      settled = deltas.length === 0 ? undefined : this.dir.store.settle(deltas);
    } catch (err) {
      failed(err);
    }
    if (!(settled instanceof Promise)) return check();
    return settled.then(check, (err: unknown) => {
      failed(err);
      return check();
    });
  }

  /** The check after a realtime session's charge: the refusal a new request would get, or nothing. */
  private stillAllowed(refused: number, now: number): Reply | undefined {
    if (refused === KEY_GONE) return unauthorized('invalid credentials');
    if (refused >= 0) {
      this.dir.metrics.denied('budget');
      return exhausted(this.key.slots[refused]!, now);
    }
    return undefined;
  }

  /**
   * After the answer (`status` as `onLog` gets it): the real amounts replace the estimates. An answer without usage
   * keeps its estimates; a call that failed without usage gives its reservation back, its request included (ADR 0116).
   */
  settle(ex: Exchange, status: number): void {
    const lines = this.lines;
    if (!lines) {
      if (this.modelRefusal !== undefined && status === 403) this.dir.metrics.denied('model');
      return;
    }
    this.lines = undefined;
    const call = ex.get(llmCall);
    const settlement = llmSettlement(call, status);
    let tokens = 0;
    let usd = 0;
    if (settlement === 'usage') {
      tokens = (call!.usage.inputTokens ?? 0) + (call!.usage.outputTokens ?? 0);
      usd = call!.cost ?? 0;
    } else if (settlement === 'estimate') {
      tokens = this.estimatedTokens;
      usd = this.estimatedUsd;
    }
    const requests = settlement === 'refund' ? 0 : 1;
    const deltas: CounterDelta[] = [];
    const key = this.key;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      const unit = line.unit;
      const real = unit === 'requests' ? requests : unit === 'tokens' ? tokens : usd;
      const delta = real - line.amount;
      if (delta !== 0) deltas.push({ counter: line.counter, amount: delta, expiresAt: line.expiresAt, memo: line.memo });
    }
    // Lifetime usage (the usage API's `lifetime`): the real amounts, unless a `total` budget's line is that counter;
    // summed in the key's numbers and handed to the store from there (ADR 0177).
    if (tokens !== 0 || usd !== 0) this.dir.numbers.addLifetime(key, tokens, usd);
    if (deltas.length === 0) return;
    try {
      const done = this.dir.store.settle(deltas);
      if (done instanceof Promise) done.catch((err: unknown) => this.logger.error('virtual key budget settlement failed', { key: this.key.id, error: err as Error }));
    } catch (err) {
      this.logger.error('virtual key budget settlement failed', { key: this.key.id, error: err as Error });
    }
  }
}

const UNIT_WORDS: Record<BudgetUnit, string> = { usd: 'USD', tokens: 'tokens', requests: 'requests' };
/** `1 request`, `1 token`: a limit of one said in the singular. */
const unitWord = (unit: BudgetUnit, limit: number): string => (limit === 1 && unit !== 'usd' ? UNIT_WORDS[unit].slice(0, -1) : UNIT_WORDS[unit]);

/** The longest `Retry-After` the OpenAI and Anthropic SDKs wait for; past it they retry at once, twice by default. */
const SDK_RETRY_AFTER_MAX_S = 60;

/**
 * 429 in the client API's error shape (the `ai` backend shapes it). A budget that resets within the hour says when
 * (`Retry-After`). One that resets later than a minute from now also tells the OpenAI and Anthropic SDKs not to retry
 * (`x-should-retry: false`): they ignore a longer `Retry-After` and would retry straight away.
 */
function exhausted(owner: LineOwner, now: number): Reply {
  const { budget } = owner;
  const ends = windowOf(budget.period, now).endsAt;
  const headers: Record<string, string> = {};
  if (ends !== 0) headers['x-budget-reset'] = new Date(ends).toISOString();
  const seconds = Math.max(1, Math.ceil((ends - now) / 1000));
  if (budget.period === 'minute' || budget.period === 'hour') headers['retry-after'] = String(seconds);
  if (ends === 0 || seconds > SDK_RETRY_AFTER_MAX_S) headers['x-should-retry'] = 'false';
  const per = budget.period === 'total' ? 'in total' : `per ${budget.period}`;
  return jsonErrorReply(429, 'budget_exceeded', `budget exceeded: ${owner.who} has used its ${budget.limit} ${unitWord(budget.unit, budget.limit)} ${per}`, headers);
}
