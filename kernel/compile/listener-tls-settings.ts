import type { ConfigPath } from '../sdk/index.ts';
import { didYouMean } from '../sdk/index.ts';

// A listener's `tls.minTLSVersion`, `maxTLSVersion` and `cipherSuites` (BEHAVIOUR 2.1b, ADR 0140), as node:tls
// options of the port's server: node:tls negotiates the version and the suite before SNI selects a listener (a
// SecureContext returned by SNICallback carries the certificate only), so the HTTPS listeners of one port must agree.

type Version = 'TLSv1.2' | 'TLSv1.3';

/** The settings of one port's TLS server; every field set, so a reload that drops one restores node:tls's default. */
export interface TlsSettings {
  readonly minVersion: Version;
  readonly maxVersion: Version;
  /** node:tls's `ciphers`: OpenSSL names, TLS 1.3 suites (`TLS_...`) among them; the server's order of preference. */
  readonly ciphers: string;
}

/** The spellings of a version: the reference's (`TLS_V1_2`), the bare number (`1.2`), OpenSSL's (`TLSv1.2`). */
const VERSIONS = new Map<string, Version | 'old'>([
  ['TLS_V1_2', 'TLSv1.2'],
  ['TLS_V1_3', 'TLSv1.3'],
  ['1.2', 'TLSv1.2'],
  ['1.3', 'TLSv1.3'],
  ['TLSv1.2', 'TLSv1.2'],
  ['TLSv1.3', 'TLSv1.3'],
  ...['TLS_V1_0', 'TLS_V1_1', '1.0', '1.1', 'TLSv1', 'TLSv1.0', 'TLSv1.1'].map((v) => [v, 'old'] as [string, 'old']),
]);

/**
 * The suites node:tls's OpenSSL offers that a listener may list (Envoy's default server list: forward-secret AEAD
 * only): the IANA name, OpenSSL's name, and whether it is a TLS 1.3 suite. rustls spells TLS 1.3 ones `TLS13_...`.
 */
const SUITES: readonly (readonly [iana: string, openssl: string, tls13: boolean])[] = [
  ['TLS_AES_128_GCM_SHA256', 'TLS_AES_128_GCM_SHA256', true],
  ['TLS_AES_256_GCM_SHA384', 'TLS_AES_256_GCM_SHA384', true],
  ['TLS_CHACHA20_POLY1305_SHA256', 'TLS_CHACHA20_POLY1305_SHA256', true],
  ['TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256', 'ECDHE-ECDSA-AES128-GCM-SHA256', false],
  ['TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384', 'ECDHE-ECDSA-AES256-GCM-SHA384', false],
  ['TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256', 'ECDHE-ECDSA-CHACHA20-POLY1305', false],
  ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', false],
  ['TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384', 'ECDHE-RSA-AES256-GCM-SHA384', false],
  ['TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256', 'ECDHE-RSA-CHACHA20-POLY1305', false],
];

const SUITE_BY_NAME = new Map<string, (typeof SUITES)[number]>();
for (const s of SUITES) {
  SUITE_BY_NAME.set(s[0], s).set(s[1], s);
  if (s[2]) SUITE_BY_NAME.set(s[0].replace('TLS_', 'TLS13_'), s);
}

/** node:tls's defaults (a listener without settings). */
export function defaultTlsSettings(): TlsSettings {
  return { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3', ciphers: process.getBuiltinModule('node:tls').DEFAULT_CIPHERS };
}

function version(raw: unknown, at: ConfigPath, issue: (path: ConfigPath, message: string) => void): Version | undefined {
  if (raw === undefined) return undefined;
  // YAML reads an unquoted 1.2 as a number.
  const text = typeof raw === 'number' && Number.isInteger(raw) ? raw.toFixed(1) : String(raw);
  const v = VERSIONS.get(text);
  if (v === 'old') {
    issue(at, `\`${text}\` is not usable: TLS 1.0 and 1.1 are refused (node:tls's minimum is TLS 1.2); write \`TLS_V1_2\` or \`TLS_V1_3\``);
    return undefined;
  }
  if (v === undefined) {
    const near = didYouMean(text, VERSIONS.keys());
    issue(at, `unknown TLS version \`${text}\`${near && VERSIONS.get(near) !== 'old' ? `; did you mean \`${near}\`?` : ''} (write \`TLS_V1_2\` or \`TLS_V1_3\`)`);
  }
  return v;
}

/**
 * The node:tls settings of a listener's `tls` block (`at` is its path), or undefined after an issue. Only the listed
 * suites are ever negotiated: a list without TLS 1.3 suites means TLS 1.2 only, one without TLS 1.2 suites TLS 1.3 only.
 */
export function listenerTlsSettings(tls: Record<string, unknown>, at: ConfigPath, issue: (path: ConfigPath, message: string) => void): TlsSettings | undefined {
  const defaults = defaultTlsSettings();
  const before = { min: tls.minTLSVersion, max: tls.maxTLSVersion };
  let min = version(before.min, [...at, 'minTLSVersion'], issue);
  let max = version(before.max, [...at, 'maxTLSVersion'], issue);
  // Every field is checked, so one run reports a bad version and a bad suite together.
  const badVersion = (before.min !== undefined && min === undefined) || (before.max !== undefined && max === undefined);
  let ciphers = defaults.ciphers;
  const names = tls.cipherSuites as string[] | undefined;
  if (names !== undefined) {
    const chosen: (typeof SUITES)[number][] = [];
    for (let i = 0; i < names.length; i++) {
      const suite = SUITE_BY_NAME.get(names[i]!) ?? SUITE_BY_NAME.get(names[i]!.toUpperCase());
      if (suite === undefined) {
        const near = didYouMean(names[i]!, SUITE_BY_NAME.keys());
        issue([...at, 'cipherSuites', i], `unknown cipher suite \`${names[i]}\`${near ? `; did you mean \`${near}\`?` : ''} (TLS 1.3: ${SUITES.filter((s) => s[2]).map((s) => `\`${s[0]}\``).join(', ')}; TLS 1.2: ${SUITES.filter((s) => !s[2]).map((s) => `\`${s[0]}\``).join(', ')}, or OpenSSL's names)`);
        return undefined;
      }
      if (!chosen.includes(suite)) chosen.push(suite);
    }
    if (badVersion) return undefined;
    const has13 = chosen.some((s) => s[2]);
    const has12 = chosen.some((s) => !s[2]);
    if ((!has12 && max === 'TLSv1.2') || (!has13 && min === 'TLSv1.3')) {
      issue([...at, 'cipherSuites'], `lists no suite of TLS ${has13 ? '1.2' : '1.3'}, the only version the listener's minTLSVersion/maxTLSVersion allow`);
      return undefined;
    }
    if (!has13) max = 'TLSv1.2';
    if (!has12) min = 'TLSv1.3';
    ciphers = chosen.map((s) => s[1]).join(':');
  }
  if (badVersion) return undefined;
  min ??= defaults.minVersion;
  max ??= defaults.maxVersion;
  if (min === 'TLSv1.3' && max === 'TLSv1.2') {
    issue([...at, 'minTLSVersion'], 'the minTLSVersion (1.3) is above the maxTLSVersion (1.2)');
    return undefined;
  }
  return { minVersion: min, maxVersion: max, ciphers };
}

/** Whether two listeners' settings are the same. */
export function sameTlsSettings(a: TlsSettings, b: TlsSettings): boolean {
  return a.minVersion === b.minVersion && a.maxVersion === b.maxVersion && a.ciphers === b.ciphers;
}

/** How a listener's settings read in a config error. */
export function describeTlsSettings(s: TlsSettings): string {
  const d = defaultTlsSettings();
  const versions = s.minVersion === s.maxVersion ? s.minVersion : `${s.minVersion}-${s.maxVersion}`;
  return `${versions}, ${s.ciphers === d.ciphers ? "node:tls's default suites" : `suites ${s.ciphers}`}`;
}
