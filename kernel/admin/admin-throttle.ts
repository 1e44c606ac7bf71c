import type { IncomingMessage } from 'node:http';
import type { Logger } from '../sdk/index.ts';
import type { AdminUiConfig } from '../compile/snapshot.ts';
import { adminCredentials, hasAdminCredentials } from './admin-access.ts';
import type { Refusal } from './admin-access.ts';

/**
 * Failed admin credentials, bounded per client address (docs/adr/0160). After MAX_FAILURES wrong credentials from one
 * address within WINDOW_MS, that address gets 429 with `Retry-After` for BLOCK_MS on every guarded path, without its
 * credentials being compared (a right guess must not show either). A request that presents no credential is not a
 * guess and does not count (a browser's first request, a probe). A right credential clears its address's count.
 * Loopback counts as any address: containers forward to it. IPv6 clients count by /64 (`clientKey`). At most
 * MAX_ADDRESSES are tracked; an address is forgotten only once its window and block are over. When the table is full
 * of live ones, failures from addresses not in it add up in one shared count, whose block refuses every such address:
 * fresh addresses (the /64s of a /48) must not buy fresh guesses, nor push a block out.
 */
export const MAX_FAILURES = 10;
export const WINDOW_MS = 60_000;
export const BLOCK_MS = 60_000;
const MAX_ADDRESSES = 10_000;

interface Entry {
  windowStart: number;
  failures: number;
  blockedUntil: number;
}

/**
 * What the throttle counts by: an IPv4 address (also written IPv4-mapped), or the /64 of an IPv6 one: a host is
 * given a whole /64, and counting single addresses would let it try 2^64 times as often.
 */
export function clientKey(address: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (v4) return v4[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? front : [...front, ...Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back];
  return `${groups.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16)).join(':')}::/64`;
}

export class CredentialThrottle {
  private readonly entries = new Map<string, Entry>();
  /** The shared count of addresses that found the table full. */
  private readonly overflow: Entry = { windowStart: -Infinity, failures: 0, blockedUntil: 0 };
  private readonly logger: Logger;
  private readonly now: () => number;

  constructor(logger: Logger, now: () => number = () => performance.now()) {
    this.logger = logger;
    this.now = now;
  }

  /** 429 while `address` is refused; undefined to compare its credentials. */
  refusal(address: string): Refusal | undefined {
    const entry = this.entries.get(address) ?? this.overflow;
    const left = entry.blockedUntil - this.now();
    if (left <= 0) return undefined;
    return {
      status: 429,
      message: 'too many failed admin credentials from this address: try again later',
      headers: { 'retry-after': String(Math.ceil(left / 1000)) },
    };
  }

  /** The outcome of one comparison: `ok` clears the address's count, a failure counts towards MAX_FAILURES. */
  record(address: string, ok: boolean): void {
    if (ok) {
      this.entries.delete(address);
      return;
    }
    const now = this.now();
    let entry = this.entries.get(address);
    if (!entry || now - entry.windowStart >= WINDOW_MS) {
      if (entry) this.entries.delete(address);
      if (this.makeRoom(now)) {
        entry = { windowStart: now, failures: 0, blockedUntil: 0 };
        this.entries.set(address, entry);
      } else {
        entry = this.overflow;
        if (now - entry.windowStart >= WINDOW_MS) {
          entry.windowStart = now;
          entry.failures = 0;
        }
      }
    }
    if (++entry.failures < MAX_FAILURES || entry.blockedUntil > now) return;
    entry.blockedUntil = now + BLOCK_MS;
    // Once per block: a flood of guesses writes one line, not one per guess.
    const shared = entry === this.overflow;
    this.logger.warn(shared ? 'admin credentials failed too often from addresses past the tracked ones: refusing all of them with 429 for a while' : 'admin credentials failed too often from one address: refusing it with 429 for a while', {
      address,
      failures: entry.failures,
      windowSeconds: WINDOW_MS / 1000,
      refusedSeconds: BLOCK_MS / 1000,
    });
  }

  /**
   * Forget addresses whose window and block are over, oldest first (insertion order is window-start order); false
   * when the table stays full. A blocked entry is never forgotten before its block ends.
   */
  private makeRoom(now: number): boolean {
    for (const [address, entry] of this.entries) {
      if (now - entry.windowStart >= WINDOW_MS && entry.blockedUntil <= now) {
        this.entries.delete(address);
        continue;
      }
      if (this.entries.size < MAX_ADDRESSES) return true;
      // A counting entry still in its window: every later one started later, so nothing after it is over either.
      if (entry.blockedUntil <= now) return false;
    }
    return this.entries.size < MAX_ADDRESSES;
  }

  /**
   * The admin credentials check with the throttle before it: 429 for an address refused, else `adminCredentials`,
   * whose outcome counts when the request presented a credential.
   */
  check(config: AdminUiConfig | undefined, req: IncomingMessage): Refusal | undefined {
    if (!hasAdminCredentials(config)) return undefined;
    const address = clientKey(req.socket.remoteAddress ?? '');
    const refused = this.refusal(address);
    if (refused) return refused;
    const denied = adminCredentials(config, req.headers);
    if (req.headers.authorization !== undefined || req.headers['x-api-key'] !== undefined) this.record(address, denied === undefined);
    return denied;
  }
}
