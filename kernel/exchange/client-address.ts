import { BlockList } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import { ipFamily } from '../sdk/ip-family.ts';

/**
 * The X-Forwarded-For trust model (docs/adr/0014-hosts-and-forwarding-headers.md).
 *
 * A peer in `config.trustedProxies` is a proxy in front of the gateway: its `X-Forwarded-For`, `X-Real-IP`,
 * `Forwarded` and `X-Forwarded-Client-Cert` pass on, and the client is the right-most `X-Forwarded-For` address that is not itself a trusted proxy
 * (nginx's `real_ip_recursive`). Any other peer is the client: whatever forwarding headers it sent are dropped.
 */
export type TrustedProxies = (address: string) => boolean;

/** Compile `config.trustedProxies` (addresses and CIDR ranges, IPv4 or IPv6); null when the list is empty. */
export function compileTrustedProxies(entries: readonly string[]): TrustedProxies | null {
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries) {
    const slash = entry.indexOf('/');
    const address = slash === -1 ? entry : entry.slice(0, slash);
    const family = ipFamily(address) === 6 ? 'ipv6' : 'ipv4';
    if (slash === -1) list.addAddress(address, family);
    else list.addSubnet(address, Number(entry.slice(slash + 1)), family);
  }
  return (address) => {
    const v = ipFamily(address);
    return v !== 0 && list.check(address, v === 6 ? 'ipv6' : 'ipv4');
  };
}

/** Why a `trustedProxies` entry is invalid, or undefined when it is an address or a CIDR range. */
export function trustedProxyProblem(entry: string): string | undefined {
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const v = ipFamily(address);
  if (v === 0) return `\`${entry}\` is not an IP address or CIDR range`;
  if (slash === -1) return undefined;
  const bits = entry.slice(slash + 1);
  const max = v === 6 ? 128 : 32;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return `\`${entry}\`: the prefix length must be 0-${max}`;
  return undefined;
}

/** IPv4 clients of a dual-stack bind appear as `::ffff:1.2.3.4`; logs, CEL and headers show `1.2.3.4`. */
export function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/**
 * The client address of a request from `peer`, applying the trust model to `headers` (mutated: forwarding headers
 * of an untrusted peer are removed).
 */
export function clientAddress(peer: string, headers: IncomingHttpHeaders, trusted: TrustedProxies | null): string {
  if (trusted === null || !trusted(peer)) {
    // Removed, not set to undefined: some forwarders copy the header object and reject undefined values.
    if (headers['x-forwarded-for'] !== undefined) delete headers['x-forwarded-for'];
    if (headers['x-real-ip'] !== undefined) delete headers['x-real-ip'];
    if (headers.forwarded !== undefined) delete headers.forwarded;
    // Envoy's default (`SANITIZE`): a client's own account of a client certificate is never believed (ADR 0138).
    if (headers['x-forwarded-client-cert'] !== undefined) delete headers['x-forwarded-client-cert'];
    return peer;
  }
  const xff = headers['x-forwarded-for'];
  if (xff === undefined) return peer;
  const list = Array.isArray(xff) ? xff.join(',') : xff;
  let client = peer;
  let end = list.length;
  while (end > 0) {
    const comma = list.lastIndexOf(',', end - 1);
    const entry = plainAddress(list.slice(comma + 1, end).trim());
    if (ipFamily(entry) === 0) break;
    client = entry;
    if (!trusted(entry)) break;
    end = comma === -1 ? 0 : comma;
  }
  return client;
}
