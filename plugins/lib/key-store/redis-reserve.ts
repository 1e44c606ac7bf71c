// The RESERVE script (its Lua text) and the building of each call of it (ADR 0048, 0061, 0091, 0101, 0106, 0108): what
// the Redis store sends for a batch of reservations and the settlements riding on it. Apart from redis-store.ts, which
// batches the reservations, sends the calls and acts on their answers, and keeps the keys. The building runs once per
// script, over every line of the batch: the store's per-line work on the serving path is here.
import { lineStates } from './counter-groups.ts';
import { DRAWN, LeasedCounter } from './counter-leases.ts';
import type { LeaseBook, LeasedLine } from './counter-leases.ts';
import type { KeysVersionCache, RowHold } from './keys-version-cache.ts';
import type { SettlementQueue } from './settlement-queue.ts';
import type { CounterLine } from './types.ts';

/**
 * The reservations of one event-loop turn in one script (ADR 0048, 0061, 0091, 0101): one round trip, and one wake-up
 * of Redis, for all the requests that reached their reservation together. KEYS: the counters the batch names, once
 * each (ARGV[1] of them), then its digest entries, then the keys version (ADR 0106). ARGV: the counter count; for
 * each counter its expiresAt ('0': none) and its queued settlement ('0': none); R, then R reservations: the digest
 * entry's index among the digests (0: no check; -1: the keys version vouches for the key), n, then n lines (counter
 * index, limit, amount); last, the keys version the store expects. Settlements apply first; then each reservation in
 * order checks that its key still exists (by its digest, or by the version: another version answers -3, nothing
 * taken, to be sent again with the digest), checks every line against the values so far (its settlements and the
 * batch's earlier reservations included) and, if none is at its limit, adds to each. Every counter is read by one MGET
 * and each changed one written once at the end, as the sum computed in Lua with 17 significant digits (a double read
 * back exactly; inside a script INCRBYFLOAT costs Redis several times a SET), or as an integer when it is one (the
 * same text, without the floating-point formatting: token counters). A counter the MGET found keeps its
 * expiry (SET ... KEEPTTL: its window's end, set when it was made, does not change); a new one gets it with PXAT (one
 * command, ADR 0091). The digests are checked by one EXISTS of them all; only when it counts fewer than there are is
 * each asked alone (a key gone meanwhile: rare). With many keys most of Redis's work per request is per argument
 * (parsed, made an object, then a Lua string, then a number) and per command called from Lua, so a counter's expiry
 * and settlement go once per counter, not with every line and settlement row naming it (ADR 0101). Returns one
 * answer per reservation: the refusing line's index, -2 when the key is gone (nothing taken), -3 when the version
 * changed (nothing taken) or -1; then the keys version. `pxat`: the server has SET's PXAT option (Redis 6.2); an
 * older one gets SET then PEXPIREAT.
 */
export const reserveScript = (pxat: boolean): string => `
local nc = tonumber(ARGV[1])
local vals, was, dirty, live = {}, {}, {}, {}
for from = 1, nc, 4000 do
  local to = math.min(nc, from + 3999)
  local got = redis.call('MGET', unpack(KEYS, from, to))
  for i = from, to do
    local v = got[i - from + 1]
    was[i] = v
    local s = ARGV[2 * i + 1]
    if s == '0' then vals[i] = tonumber(v or '0')
    else
      vals[i] = tonumber(v or '0') + tonumber(s)
      dirty[i] = true
    end
  end
end
local nk = #KEYS - 1
local nd = nk - nc
if nd > 0 then
  local all = 0
  for from = nc + 1, nk, 4000 do all = all + redis.call('EXISTS', unpack(KEYS, from, math.min(nk, from + 3999))) end
  if all == nd then
    for d = 1, nd do live[d] = true end
  end
end
local ver = tonumber(redis.call('GET', KEYS[#KEYS]) or '0')
local same = ver == tonumber(ARGV[#ARGV])
local out, ix = {}, {}
local p = 2 * nc + 2
local rs = tonumber(ARGV[p])
p = p + 1
for r = 1, rs do
  local d = tonumber(ARGV[p])
  local n = tonumber(ARGV[p + 1])
  p = p + 2
  local res = -1
  if d > 0 then
    local ok = live[d]
    if ok == nil then
      ok = redis.call('EXISTS', KEYS[nc + d]) == 1
      live[d] = ok
    end
    if not ok then res = -2 end
  elseif d < 0 and not same then res = -3
  end
  if res == -1 then
    for l = 1, n do
      local q = p + (l - 1) * 3
      local i = tonumber(ARGV[q])
      ix[l] = i
      if vals[i] >= tonumber(ARGV[q + 1]) then
        res = l - 1
        break
      end
    end
  end
  if res == -1 then
    for l = 1, n do
      local i = ix[l]
      vals[i] = vals[i] + tonumber(ARGV[p + (l - 1) * 3 + 2])
      dirty[i] = true
    end
  end
  out[r] = res
  p = p + n * 3
end
for i in pairs(dirty) do
  local e, v = ARGV[2 * i], vals[i]
  if v == math.floor(v) and v > -1e15 and v < 1e15 then v = string.format('%d', v) else v = string.format('%.17g', v) end
${
  pxat
    ? `  if e == '0' or was[i] then redis.call('SET', KEYS[i], v, 'KEEPTTL')
  else redis.call('SET', KEYS[i], v, 'PXAT', e) end`
    : `  redis.call('SET', KEYS[i], v)
  if e ~= '0' then redis.call('PEXPIREAT', KEYS[i], e) end`
}
end
out[rs + 1] = ver
return out`;

/** The script for servers with SET's PXAT (Redis 6.2 and later), and for older ones. */
export const RESERVE = reserveScript(true);
export const RESERVE_OLD = reserveScript(false);

/** A key's Redis key, by its digest. */
export const digestKey = (prefix: string, digest: string): string => `${prefix}digest:${digest}`;

/** A reservation waiting to be sent (the store's), as a script call is built from it and its answer read. */
export interface Waiting extends RowHold {
  readonly lines: readonly CounterLine[];
  readonly digest: string | undefined;
  /** The reservation carries its digest to be checked (set by ReserveCalls.build for the answer, or to send it again). */
  check: boolean;
  /**
   * Its lines drawn from leases or leasing (ADR 0108), in line order, as the script being answered was built (none:
   * every line went as it is).
   */
  leased: LeasedLine<RedisCounter>[] | undefined;
  resolve(refused: number): void;
  reject(err: unknown): void;
}

/** Digests' slots kept, emptied when full (10,000 keys in use and some). */
const DIGEST_SLOTS_MAX = 16_384;

/**
 * A digest's Redis key, made once, and its place in the script being built (ADR 0101): one Map lookup per
 * reservation finds both.
 */
interface Slot {
  readonly key: string;
  /** The script (`scripts` count) whose KEYS hold this key, at `at` (1-based). */
  script: number;
  at: number;
}

/** A counter's Redis key under the store's prefix. */
export function counterKeyOf(prefix: string, counter: string): string {
  return `${prefix}c:${counter}`;
}

/**
 * A counter's settlement state (the queue's) and its slot (ADR 0101, 0102): its Redis key, made once, and its place in
 * the script being built. A line's counter is looked up once, in the queue's Map, for its held refund and its place
 * both; a due settlement is its counter's state already (no lookup). With 1,000 keys in turn the counters are a Map of
 * thousands, each lookup a cache miss, and the queue's and the slots' lookups were most of the store's work per line.
 */
export class RedisCounter extends LeasedCounter {
  readonly key: string;
  /** The script (`scripts` count) whose KEYS hold this key, at `at` (1-based). */
  script = 0;
  at = 0;

  constructor(counter: string, prefix: string) {
    super(counter);
    this.key = counterKeyOf(prefix, counter);
  }
}

/**
 * Builds the RESERVE script's calls for one store: keeps the digests' slots and the count of scripts built, which
 * tell whether a counter or a digest is in the call being built (one lookup each, ADR 0101, 0102).
 */
export class ReserveCalls {
  private readonly digestSlots = new Map<string, Slot>();
  /** Scripts built so far (a slot's `script` says whether it is in the one being built). */
  private scripts = 0;
  private readonly pending: SettlementQueue<RedisCounter>;
  private readonly leases: LeaseBook<RedisCounter>;
  private readonly cache: KeysVersionCache;
  private readonly prefix: string;
  private readonly versionKey: string;

  constructor(pending: SettlementQueue<RedisCounter>, leases: LeaseBook<RedisCounter>, cache: KeysVersionCache, prefix: string, versionKey: string) {
    this.pending = pending;
    this.leases = leases;
    this.cache = cache;
    this.prefix = prefix;
    this.versionKey = versionKey;
  }

  /**
   * The RESERVE script's keys and arguments for these reservations, with the queued settlements (taken out of the
   * queue). Counters first (the script reads them with one MGET), then the digest entries the batch checks. ARGV is
   * `args` then `reservations` (sent as they are: not copied into one array first).
   */
  build(batch: readonly Waiting[]): { keys: string[]; args: (string | number)[]; reservations: (string | number)[] } {
    // Between scripts only: a state dropped and made anew in the middle of one would give its counter a second index.
    this.pending.trim();
    if (this.digestSlots.size >= DIGEST_SLOTS_MAX) this.digestSlots.clear();
    const script = ++this.scripts;
    const keys: string[] = [];
    // ARGV[1], then each counter's expiresAt and queued settlement (ADR 0101), then the reservations.
    const args: (string | number)[] = [0];
    const at = (c: RedisCounter, expiresAt: number): number => {
      if (c.script !== script) {
        c.script = script;
        c.at = keys.push(c.key);
        args.push(expiresAt, 0);
      } else if (expiresAt !== 0 && args[2 * c.at - 1] === 0) args[2 * c.at - 1] = expiresAt;
      return c.at;
    };
    const pending = this.pending;
    const now = Date.now();
    const digests: string[] = [];
    const reservations: (string | number)[] = [batch.length];
    // Each line's state is its first line's group's (ADR 0102, counter-groups.ts); its held refund rides on this
    // script (its counter is written anyway, ADR 0097) and its place in the script is on the same state.
    let lines: readonly CounterLine[] = [];
    let w: Waiting;
    let sentLines = 0;
    const leases = this.leases;
    const visit = (c: RedisCounter, i: number): void => {
      const l = lines[i]!;
      // A lease's room serves the line without the store (ADR 0108); a line sent may lease room beyond its amount.
      if (leases.draw(c, l, now)) {
        (w.leased ??= []).push({ c, line: i, size: DRAWN });
        return;
      }
      pending.claimState(c, now);
      const size = leases.sizeFor(c, l, now);
      if (size > 0) {
        c.leasing = true;
        (w.leased ??= []).push({ c, line: i, size });
      }
      sentLines++;
      reservations.push(at(c, l.expiresAt), l.limit - size, l.amount + size);
    };
    const cache = this.cache;
    for (w of batch) {
      let d = 0;
      // The keys version vouches for a key kept and checked lately (ADR 0106); any other carries its digest.
      if (w.digest !== undefined && !w.check && !cache.needsCheck(w, now)) d = -1;
      else if (w.digest !== undefined) {
        w.check = true;
        let slot = this.digestSlots.get(w.digest);
        if (slot === undefined) this.digestSlots.set(w.digest, (slot = { key: digestKey(this.prefix, w.digest), script: 0, at: 0 }));
        if (slot.script !== script) {
          slot.script = script;
          slot.at = digests.push(slot.key);
        }
        d = slot.at;
      }
      lines = w.lines;
      const n = reservations.push(d, lines.length) - 1;
      sentLines = 0;
      lineStates(pending, lines, visit);
      reservations[n] = sentLines;
    }
    // Ripe refunds ride too (ADR 0097); a timer's call has no batch: they still go with it.
    pending.ripen(now);
    for (let i = 0; i < pending.size; i++) {
      const c = pending.at(i);
      args[2 * at(c, c.expiresAt)] = c.amount;
    }
    pending.clear();
    args[0] = keys.length;
    for (const d of digests) keys.push(d);
    keys.push(this.versionKey);
    reservations.push(cache.expected);
    return { keys, args, reservations };
  }
}
