/**
 * IP addresses and CIDR ranges for CEL, after the Kubernetes CEL IP/CIDR libraries (BEHAVIOUR.md §10):
 * `ip(s)`, `isIP(s)`, `cidr(s)`, `isCIDR(s)`, `cidr(s).containsIP(ip|string)`, `containsCIDR`, `ip()`, `masked()`,
 * `prefixLength()`, `ip(s).family()`, `isLoopback()`, ...
 *
 * One deliberate difference: an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) is taken as the IPv4 address it
 * carries, so `cidr("10.0.0.0/8").containsIP("::ffff:10.1.2.3")` holds (dual-stack listeners see IPv4 clients
 * that way).
 */

/** An IP address: 4 bytes (IPv4) or 16 bytes (IPv6). The CEL type `net.IP`. */
export class CelIP {
  readonly bytes: Uint8Array;
  private text: string | undefined;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.text = undefined;
  }

  get family(): 4 | 6 {
    return this.bytes.length === 4 ? 4 : 6;
  }

  toString(): string {
    this.text ??= formatIP(this.bytes);
    return this.text;
  }

  equals(other: CelIP): boolean {
    return sameBytes(this.bytes, other.bytes);
  }
}

/** A CIDR range: an address and a prefix length. The CEL type `net.CIDR`. */
export class CelCIDR {
  readonly ip: CelIP;
  readonly prefix: number;

  constructor(ip: CelIP, prefix: number) {
    this.ip = ip;
    this.prefix = prefix;
  }

  toString(): string {
    return `${this.ip.toString()}/${this.prefix}`;
  }

  /** The range with the host bits cleared (`10.1.2.3/8` -> `10.0.0.0/8`). */
  masked(): CelCIDR {
    const out = new Uint8Array(this.ip.bytes.length);
    for (let i = 0; i < out.length; i++) out[i] = this.ip.bytes[i]! & byteMask(this.prefix, i);
    return new CelCIDR(new CelIP(out), this.prefix);
  }

  containsIP(ip: CelIP): boolean {
    let bytes = ip.bytes;
    const range = this.ip.bytes;
    // An IPv4 address matches an IPv6 range through its IPv4-mapped form (`::ffff:0:0/96`).
    if (bytes.length !== range.length) {
      if (bytes.length === 4) bytes = mapped(bytes);
      else return false;
    }
    return prefixEqual(range, bytes, this.prefix);
  }

  containsCIDR(other: CelCIDR): boolean {
    if (other.ip.bytes.length !== this.ip.bytes.length) {
      if (other.ip.bytes.length !== 4) return false;
      return other.prefix + 96 >= this.prefix && prefixEqual(this.ip.bytes, mapped(other.ip.bytes), this.prefix);
    }
    return other.prefix >= this.prefix && prefixEqual(this.ip.bytes, other.ip.bytes, this.prefix);
  }

  equals(other: CelCIDR): boolean {
    return this.prefix === other.prefix && this.ip.equals(other.ip);
  }
}

function byteMask(prefix: number, index: number): number {
  const bits = prefix - index * 8;
  if (bits >= 8) return 0xff;
  if (bits <= 0) return 0;
  return (0xff << (8 - bits)) & 0xff;
}

function prefixEqual(a: Uint8Array, b: Uint8Array, prefix: number): boolean {
  const full = prefix >> 3;
  for (let i = 0; i < full; i++) if (a[i] !== b[i]) return false;
  const rest = prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (a[full]! & mask) === (b[full]! & mask);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function mapped(v4: Uint8Array): Uint8Array {
  const out = new Uint8Array(16);
  out[10] = 0xff;
  out[11] = 0xff;
  out.set(v4, 12);
  return out;
}

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

function parseV4(text: string): Uint8Array | undefined {
  const m = V4.exec(text);
  if (!m) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = m[i + 1]!;
    // Leading zeros are ambiguous (octal in some parsers): refused, as Go's netip does.
    if (part.length > 1 && part[0] === '0') return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

function parseV6(text: string): Uint8Array | undefined {
  if (text.includes('%')) return undefined; // zones are not addresses
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (s: string): string[] | undefined => (s === '' ? [] : s.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const words: number[] = [];
  const readGroups = (list: string[], isLastList: boolean): number[] | undefined => {
    const out: number[] = [];
    for (let i = 0; i < list.length; i++) {
      const g = list[i]!;
      if (isLastList && i === list.length - 1 && g.includes('.')) {
        const v4 = parseV4(g);
        if (!v4) return undefined;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (HEX_GROUP.test(g)) out.push(parseInt(g, 16));
      else return undefined;
    }
    return out;
  };
  const headWords = readGroups(head, halves.length === 1);
  const tailWords = readGroups(tail, true);
  if (!headWords || !tailWords) return undefined;
  if (halves.length === 1) {
    if (headWords.length !== 8) return undefined;
    words.push(...headWords);
  } else {
    const missing = 8 - headWords.length - tailWords.length;
    if (missing < 1) return undefined;
    words.push(...headWords, ...new Array<number>(missing).fill(0), ...tailWords);
  }
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    out[i * 2] = words[i]! >> 8;
    out[i * 2 + 1] = words[i]! & 0xff;
  }
  return out;
}

function isV4Mapped(b: Uint8Array): boolean {
  if (b.length !== 16 || b[10] !== 0xff || b[11] !== 0xff) return false;
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return true;
}

/** Parse an IPv4 or IPv6 address; an IPv4-mapped IPv6 address becomes IPv4. Undefined when invalid. */
export function parseIP(text: string): CelIP | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > 64) return undefined;
  const v4 = text.includes(':') ? undefined : parseV4(text);
  if (v4) return new CelIP(v4);
  if (!text.includes(':')) return undefined;
  const v6 = parseV6(text);
  if (!v6) return undefined;
  return new CelIP(isV4Mapped(v6) ? v6.slice(12) : v6);
}

/** Parse `address/prefix`. Host bits may be set (`10.1.2.3/8`); `masked()` clears them. */
export function parseCIDR(text: string): CelCIDR | undefined {
  if (typeof text !== 'string') return undefined;
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const addrText = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText) || (prefixText.length > 1 && prefixText[0] === '0')) return undefined;
  let prefix = Number(prefixText);
  const ip = parseIP(addrText);
  if (!ip) return undefined;
  // `::ffff:10.0.0.0/104` is the IPv4 range 10.0.0.0/8.
  if (ip.family === 4 && addrText.includes(':')) {
    if (prefix < 96) return undefined;
    prefix -= 96;
  }
  if (prefix > ip.bytes.length * 8) return undefined;
  return new CelCIDR(ip, prefix);
}

function formatIP(b: Uint8Array): string {
  if (b.length === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  const words: number[] = [];
  for (let i = 0; i < 8; i++) words.push((b[i * 2]! << 8) | b[i * 2 + 1]!);
  // RFC 5952: compress the longest run (length >= 2) of zero words, the first one on ties.
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]): string => ws.map((w) => w.toString(16)).join(':');
  if (bestStart < 0) return hex(words);
  return `${hex(words.slice(0, bestStart))}::${hex(words.slice(bestStart + bestLen))}`;
}

/** `isLoopback`: 127.0.0.0/8 or ::1. */
export function isLoopback(ip: CelIP): boolean {
  const b = ip.bytes;
  if (b.length === 4) return b[0] === 127;
  return b.every((v, i) => (i === 15 ? v === 1 : v === 0));
}

/** `isUnspecified`: 0.0.0.0 or ::. */
export function isUnspecified(ip: CelIP): boolean {
  return ip.bytes.every((v) => v === 0);
}

/** `isLinkLocalUnicast`: 169.254.0.0/16 or fe80::/10. */
export function isLinkLocalUnicast(ip: CelIP): boolean {
  const b = ip.bytes;
  if (b.length === 4) return b[0] === 169 && b[1] === 254;
  return b[0] === 0xfe && (b[1]! & 0xc0) === 0x80;
}

/** `isLinkLocalMulticast`: 224.0.0.0/24 or ff02::/16. */
export function isLinkLocalMulticast(ip: CelIP): boolean {
  const b = ip.bytes;
  if (b.length === 4) return b[0] === 224 && b[1] === 0 && b[2] === 0;
  return b[0] === 0xff && (b[1]! & 0x0f) === 0x02;
}

/** `isGlobalUnicast`: not unspecified, loopback, link-local, multicast or the IPv4 broadcast address (Go's rule). */
export function isGlobalUnicast(ip: CelIP): boolean {
  const b = ip.bytes;
  if (isUnspecified(ip) || isLoopback(ip) || isLinkLocalUnicast(ip)) return false;
  if (b.length === 4) return !(b[0]! >= 224 && b[0]! < 240) && !(b[0] === 255 && b[1] === 255 && b[2] === 255 && b[3] === 255);
  return b[0] !== 0xff;
}
