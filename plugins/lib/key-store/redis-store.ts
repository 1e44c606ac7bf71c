// The shared store (ADR 0035): keys and budget counters in Redis, so several gateway replicas draw from the same
// budgets. A reservation is one Lua script, which Redis runs atomically: check every counter, then add to each. A
// request makes one round trip (ADR 0061): its key comes from a short-lived cache that the reservation's script
// confirms, and its settlement rides on a later reservation.
import { createHash } from 'node:crypto';
import { KeyCache } from './key-cache.ts';
import { RedisError, RespClient } from './resp.ts';
import { SettlementQueue } from './settlement-queue.ts';
import type { RespValue } from './resp.ts';
import { KEY_GONE } from './types.ts';
import type { CounterDelta, CounterLine, KeyRecord, KeyStore } from './types.ts';

/**
 * A request's whole store round trip (ADR 0048, 0061): check that the request's key still exists (when asked), apply
 * the queued settlements, check every line's counter and add to each. ARGV[1]: n, the lines; ARGV[2]: k, 1 when
 * KEYS[1] is the key's digest entry to check (0: no check). Then one row per counter, KEYS[k+1..]: the n lines
 * first, then counters with only a settlement; ARGV per row from ARGV[3]: limit, amount, settlement, expiresAt. A
 * line's check counts its settlement ((value + settle) >= limit). Returns the refusing line's index, -2 when the
 * key is gone (nothing taken), or -1; settlements apply whatever the answer. Each counter is read once and written
 * once (GET, then SET of the sum in Lua, 17 significant digits: a double read back exactly), cheaper in Redis than
 * INCRBYFLOAT.
 */
const RESERVE = `
local n = tonumber(ARGV[1])
local k = tonumber(ARGV[2])
local rows = #KEYS - k
local refused = -1
if k == 1 and redis.call('EXISTS', KEYS[1]) == 0 then refused = -2 end
local vals = {}
for r = 1, rows do
  local v = tonumber(redis.call('GET', KEYS[k + r]) or '0') + tonumber(ARGV[r * 4 + 1])
  vals[r] = v
  if refused == -1 and r <= n and v >= tonumber(ARGV[r * 4 - 1]) then refused = r - 1 end
end
for r = 1, rows do
  local v = vals[r]
  if refused == -1 and r <= n then v = v + tonumber(ARGV[r * 4]) elseif tonumber(ARGV[r * 4 + 1]) == 0 then v = nil end
  if v then
    redis.call('SET', KEYS[k + r], string.format('%.17g', v))
    local exp = tonumber(ARGV[r * 4 + 2])
    if exp > 0 then redis.call('PEXPIREAT', KEYS[k + r], exp) end
  end
end
return refused`;

/** KEYS: counters. ARGV: amount, expiresAt per counter. */
const SETTLE = `
for i = 1, #KEYS do
  redis.call('INCRBYFLOAT', KEYS[i], ARGV[i * 2 - 1])
  local exp = tonumber(ARGV[i * 2])
  if exp > 0 then redis.call('PEXPIREAT', KEYS[i], exp) end
end
return 0`;

/**
 * KEYS: old digest key, new digest key, id key. ARGV: record JSON, new digest, the digest the id must still map to
 * ('' when creating). Moves a key to a new secret atomically; 0 when another replica changed or revoked it first.
 */
const MOVE = `
local current = redis.call('GET', KEYS[3])
if (ARGV[3] == '' and current) or (ARGV[3] ~= '' and current ~= ARGV[3]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], ARGV[2])
return 1`;

const sha1 = (s: string): string => createHash('sha1').update(s).digest('hex');
/** The scripts' SHA-1s, computed once (not on every call). */
const SHAS = new Map<string, string>([RESERVE, SETTLE, MOVE].map((body) => [body, sha1(body)]));
const shaOf = (body: string): string => SHAS.get(body) ?? sha1(body);
/** Parsed key records kept (by their stored JSON), emptied when full. */
const PARSED_MAX = 4096;

export class RedisKeyStore implements KeyStore {
  readonly kind = 'redis';
  private readonly client: RespClient;
  private readonly prefix: string;
  private readonly parsed = new Map<string, KeyRecord>();
  /** Records found lately, confirmed by each reservation's script (key-cache.ts). */
  private readonly cache = new KeyCache();
  /** Settlements not sent yet, summed by counter: they ride on the next reservation's script. */
  private readonly pending = new SettlementQueue(() => void this.flush().catch(() => undefined));

  static async open(url: string, prefix: string): Promise<RedisKeyStore> {
    const store = new RedisKeyStore(new RespClient(url), prefix);
    await store.client.command('PING');
    return store;
  }

  private constructor(client: RespClient, prefix: string) {
    this.client = client;
    this.prefix = prefix;
  }

  /** EVALSHA, falling back to EVAL the first time a server sees the script. */
  private async script(body: string, keys: readonly string[], args: readonly (string | number)[]): Promise<RespValue> {
    try {
      return await this.client.command('EVALSHA', shaOf(body), keys.length, ...keys, ...args);
    } catch (err) {
      if (err instanceof RedisError && err.message.startsWith('NOSCRIPT')) return this.client.command('EVAL', body, keys.length, ...keys, ...args);
      throw err;
    }
  }

  private digestKey(digest: string): string {
    return `${this.prefix}digest:${digest}`;
  }

  private idKey(id: string): string {
    return `${this.prefix}id:${id}`;
  }

  private counterKey(name: string): string {
    return `${this.prefix}c:${name}`;
  }

  find(digest: string): KeyRecord | undefined | Promise<KeyRecord | undefined> {
    return this.cache.get(digest, Date.now()) ?? this.fetch(digest);
  }

  private async fetch(digest: string): Promise<KeyRecord | undefined> {
    const json = await this.client.command('GET', this.digestKey(digest));
    if (typeof json !== 'string') return undefined;
    // An unchanged key is not parsed again (and keeps its identity, so the policy's per-record views are reused).
    let record = this.parsed.get(json);
    if (!record) {
      if (this.parsed.size >= PARSED_MAX) this.parsed.clear();
      record = JSON.parse(json) as KeyRecord;
      this.parsed.set(json, record);
    }
    this.cache.set(digest, record, Date.now());
    return record;
  }

  /** Take the queued settlements (summed by counter) as script keys and arguments. */
  private takePending(): { keys: string[]; args: (string | number)[] } | undefined {
    if (this.pending.size === 0) return undefined;
    const keys: string[] = [];
    const args: (string | number)[] = [];
    for (const d of this.pending.rows()) {
      keys.push(this.counterKey(d.counter));
      args.push(d.amount, d.expiresAt);
    }
    this.pending.clear();
    return { keys, args };
  }

  /** One script, one round trip: the key's check (with `digest`), queued settlements, the reservation. */
  async reserve(lines: readonly CounterLine[], digest?: string): Promise<number> {
    if (lines.length === 0 && digest === undefined) return -1;
    const keys: string[] = [];
    const args: (string | number)[] = [lines.length, digest === undefined ? 0 : 1];
    if (digest !== undefined) keys.push(this.digestKey(digest));
    const pending = this.pending;
    for (const l of lines) {
      keys.push(this.counterKey(l.counter));
      args.push(l.limit, l.amount, pending.amountOf(l.counter), l.expiresAt);
    }
    if (pending.size > 0) {
      for (const d of pending.rows()) {
        if (lines.some((l) => l.counter === d.counter)) continue;
        keys.push(this.counterKey(d.counter));
        args.push(0, 0, d.amount, d.expiresAt);
      }
      pending.clear();
    }
    const refused = Number(await this.script(RESERVE, keys, args));
    if (refused === KEY_GONE) this.cache.drop(digest);
    return refused;
  }

  /**
   * Queued, summed by counter, and sent with the next reservation's script or within SETTLE_DELAY_MS (ADR 0048):
   * one round trip per request instead of two on a busy gateway.
   */
  settle(deltas: readonly CounterDelta[]): void {
    this.pending.add(deltas);
  }

  /** Send queued settlements now. */
  async flush(): Promise<void> {
    const queued = this.takePending();
    if (queued) await this.script(SETTLE, queued.keys, queued.args);
  }

  async values(counters: readonly string[]): Promise<number[]> {
    await this.flush();
    if (counters.length === 0) return [];
    const got = (await this.client.command('MGET', ...counters.map((c) => this.counterKey(c)))) as (string | null)[];
    return got.map((v) => (v === null ? 0 : Number(v)));
  }

  async create(record: KeyRecord, digest: string): Promise<void> {
    if (Number(await this.script(MOVE, [this.digestKey(''), this.digestKey(digest), this.idKey(record.id)], [JSON.stringify(record), digest, ''])) !== 1) {
      throw new Error(`key id ${record.id} exists`);
    }
    await this.client.command('SADD', `${this.prefix}ids`, record.id);
  }

  /** The current digest of a key id and its record. */
  private async current(id: string): Promise<{ digest: string; record: KeyRecord } | undefined> {
    const digest = await this.client.command('GET', this.idKey(id));
    if (typeof digest !== 'string') return undefined;
    const json = await this.client.command('GET', this.digestKey(digest));
    return typeof json === 'string' ? { digest, record: JSON.parse(json) as KeyRecord } : undefined;
  }

  async get(id: string): Promise<KeyRecord | undefined> {
    return (await this.current(id))?.record;
  }

  async list(): Promise<KeyRecord[]> {
    const ids = ((await this.client.command('SMEMBERS', `${this.prefix}ids`)) as string[]).sort();
    const records = await Promise.all(ids.map((id) => this.get(id)));
    return records.filter((r): r is KeyRecord => r !== undefined);
  }

  async rotate(id: string, digest: string, prefix: string, at: string): Promise<boolean> {
    const cur = await this.current(id);
    if (!cur || cur.record.revokedAt !== undefined) return false;
    const moved = await this.script(MOVE, [this.digestKey(cur.digest), this.digestKey(digest), this.idKey(id)], [JSON.stringify({ ...cur.record, prefix, rotatedAt: at }), digest, cur.digest]);
    this.cache.drop(cur.digest);
    return Number(moved) === 1;
  }

  async revoke(id: string, at: string): Promise<boolean> {
    const cur = await this.current(id);
    if (!cur || cur.record.revokedAt !== undefined) return false;
    // Kept under a digest no secret has, so the revoked secret cannot even be looked up.
    const moved = await this.script(MOVE, [this.digestKey(cur.digest), this.digestKey(`revoked:${id}`), this.idKey(id)], [JSON.stringify({ ...cur.record, revokedAt: at }), `revoked:${id}`, cur.digest]);
    this.cache.drop(cur.digest);
    return Number(moved) === 1;
  }

  async close(): Promise<void> {
    try {
      await this.flush();
    } catch {
      // Closing anyway: those corrections are lost, their requests stay charged their estimate.
    } finally {
      this.client.close();
    }
  }
}
