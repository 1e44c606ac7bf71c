// The opt-in verdict cache of the guards that call a paid service (`cache` of `openAIModeration`,
// `bedrockGuardrails`, `googleModelArmor`, `webhook`; ADR 0188). An agent resends its tool definitions and the whole
// history every turn; a text the guard's service passed is not sent again within `ttl`. Only passes are kept: a
// mask or a rejection is judged again every time. Entries are digests (no text is kept), at most `maxEntries`, the
// least recently used dropped first (a tenth at a time), so a client sending endless distinct texts cannot grow memory past the bound.
import { createHash, hash } from 'node:crypto';
import { parseDuration } from 'switchyard/sdk';
import type { CompileContext } from 'switchyard/sdk';
import type { GuardMessage } from '../llm/contract.ts';

export interface GuardCacheConfig {
  maxEntries?: number;
  ttl?: string;
}

export const DEFAULT_CACHE_ENTRIES = 10_000;
export const DEFAULT_CACHE_TTL = '10m';

/** Digests of passed texts with their expiry; a Map keeps insertion order, so its first key is the least recently used. */
export class PassCache {
  private readonly entries = new Map<string, number>();
  private readonly maxEntries: number;
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(maxEntries: number, ttlMs: number, now: () => number = () => performance.now()) {
    this.maxEntries = maxEntries;
    this.ttlMs = ttlMs;
    this.now = now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** True when `key` passed within the TTL (it becomes the most recently used). */
  has(key: string): boolean {
    const expires = this.entries.get(key);
    if (expires === undefined) return false;
    this.entries.delete(key);
    if (expires <= this.now()) return false;
    this.entries.set(key, expires);
    return true;
  }

  /** Remember that `key` passed now. */
  add(key: string): void {
    this.entries.delete(key);
    this.entries.set(key, this.now() + this.ttlMs);
    if (this.entries.size <= this.maxEntries) return;
    // The least recently used tenth goes at once: one walk from the front, where a walk per entry would step over
    // every entry deleted before it (V8 compacts a Map's deleted slots only when it resizes).
    let drop = Math.max(1, Math.ceil(this.maxEntries / 10));
    for (const k of this.entries.keys()) {
      this.entries.delete(k);
      if (--drop === 0) break;
    }
  }
}

type Phase = 'request' | 'response';

/** What a guard asks of its cache. */
export interface GuardVerdictCache {
  /** The digest of one text as the guard's service judges it: the phase, the message's role and JSON mark, its text. */
  keyOf(phase: Phase, message: GuardMessage): string;
  /** The digest of a whole message list (for a guard whose service judges the texts together), and of `extra`. */
  keyOfAll(phase: Phase, messages: readonly GuardMessage[], extra?: string): string;
  /** Whether the key passed within the TTL; counted as a hit or a miss. */
  lookup(phase: Phase, key: string): boolean;
  /**
   * For a service that judges each text on its own: the messages not passed within the TTL (to send), their indexes
   * in `messages` and their keys (to remember once the service passed them).
   */
  unjudged(phase: Phase, messages: readonly GuardMessage[]): { send: GuardMessage[]; indexes: number[]; keys: string[] };
  /** Remember the keys as passed. */
  passed(keys: readonly string[]): void;
}

/** A message as the bytes digested: lengths first, so no two different messages give the same bytes. */
function messageText(m: GuardMessage): string {
  return `${m.role.length}:${m.role}:${m.json === true ? 1 : 0}:${m.joined === true ? 1 : 0}:${m.content.length}:${m.content}`;
}

/**
 * The guard's cache, or undefined when `config` (the guard's `cache`) is absent: a guard without one pays nothing.
 * `identity` is what decides the guard's verdicts (its config but `cache`, the endpoint): the store is kept across
 * config reloads while the guard type, identity and cache settings are unchanged, and a changed guard starts empty.
 */
export function guardVerdictCache(ctx: CompileContext, guard: string, identity: unknown, config: GuardCacheConfig | undefined): GuardVerdictCache | undefined {
  if (config === undefined) return undefined;
  const maxEntries = config.maxEntries ?? DEFAULT_CACHE_ENTRIES;
  const ttlMs = parseDuration(config.ttl ?? DEFAULT_CACHE_TTL);
  if (ttlMs === undefined || ttlMs <= 0) return ctx.fail('`ttl` must be a duration above 0', ['cache', 'ttl']);
  // A digest: the identity may hold credentials (`policies.backendAuth`), which the resource key must not carry.
  const id = createHash('sha256').update(JSON.stringify({ guard, identity, maxEntries, ttlMs })).digest('base64');
  const store = ctx.resources.get(`guard-verdict-cache:${id}`, () => new PassCache(maxEntries, ttlMs));
  const counter = ctx.counter('switchyard_guardrail_cache_total', 'Texts a prompt guard with a `cache` looked up, by guard type, phase and result (hit: passed before within the TTL, not sent to the service; miss: sent).');
  const counts = {
    request: { hit: counter.child({ guard, phase: 'request', result: 'hit' }), miss: counter.child({ guard, phase: 'request', result: 'miss' }) },
    response: { hit: counter.child({ guard, phase: 'response', result: 'hit' }), miss: counter.child({ guard, phase: 'response', result: 'miss' }) },
  };
  // One-shot hashing: a Hash object per text cost about 5 us, 0.5 s for the 100,000 small texts a 2 MiB body holds.
  const keyOf = (phase: Phase, message: GuardMessage): string => hash('sha256', `${phase}:${messageText(message)}`, 'base64');
  const lookup = (phase: Phase, key: string): boolean => {
    const hit = store.has(key);
    counts[phase][hit ? 'hit' : 'miss'].inc();
    return hit;
  };
  return {
    keyOf,
    lookup,
    keyOfAll(phase, messages, extra = '') {
      const h = createHash('sha256').update(`${phase}:${messages.length}:${extra.length}:${extra}:`);
      for (const m of messages) h.update(messageText(m));
      return h.digest('base64');
    },
    unjudged(phase, messages) {
      const out = { send: [] as GuardMessage[], indexes: [] as number[], keys: [] as string[] };
      messages.forEach((m, i) => {
        const key = keyOf(phase, m);
        if (lookup(phase, key)) return;
        out.send.push(m);
        out.indexes.push(i);
        out.keys.push(key);
      });
      return out;
    },
    passed(keys) {
      for (const k of keys) store.add(k);
    },
  };
}
