import { isIPv4, isIPv6 } from 'node:net';

/**
 * `net.isIP(s)`'s answer: 4 for an IPv4 address, 6 for an IPv6 one (a zone index such as `%eth0` allowed), 0 for
 * anything else, without running Node's IPv6 pattern on a string that has no `:`. Every IPv6 form has a `:` and no
 * IPv4 form has one, so the answer is the same; but `net.isIP` tries the IPv6 pattern on whatever is not IPv4, a host
 * name included, and that pattern is large: its first run keeps ~100 KiB of regexp bytecode and its second ~160 KiB
 * of native code for the process's life (docs/perf.md "Session 14, tidy"). Use this for names that are usually not
 * addresses (an upstream's host, a service's DNS name, a `Host` header).
 */
export function ipFamily(s: string): 0 | 4 | 6 {
  if (s.includes(':')) return isIPv6(s) ? 6 : 0;
  return isIPv4(s) ? 4 : 0;
}
