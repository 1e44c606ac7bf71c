import { resolve } from 'node:path';
import type { SecureContextOptions } from 'node:tls';
import { caBundleProblem, definePolicy, FILE_SIZE_LIMITS, ipFamily, notChecked, readSharedFile } from 'switchyard/sdk';
import type { CompileContext, UpstreamTls } from 'switchyard/sdk';
import schema from './schema.json' with { type: 'json' };

/** node:tls only when a route has this policy: the manifest is loaded for every config (docs/perf.md, session 10b). */
const createSecureContext = (options: SecureContextOptions): unknown => process.getBuiltinModule('node:tls').createSecureContext(options);

interface BackendTlsConfig {
  cert?: string;
  key?: string;
  root?: string;
  hostname?: string;
  insecure?: boolean;
  insecureHost?: boolean;
  alpn?: string[];
  subjectAltNames?: string[];
}

/** Read a PEM file named at `field`, failing the load at that field when it cannot be read or holds no PEM. */
async function readPem(ctx: CompileContext, field: 'cert' | 'key' | 'root', path: string, label: string): Promise<string> {
  if (ctx.checkOnly) notChecked(ctx, `the ${label} file \`${path}\``, [field]);
  const file = resolve(ctx.cwd, path);
  let text: string;
  try {
    text = await readSharedFile(ctx.sharedFetches, file, FILE_SIZE_LIMITS.key);
  } catch (err) {
    return ctx.fail(`cannot read the ${label} file \`${path}\` (${file}): ${(err as Error).message}`, [field]);
  }
  if (!/-----BEGIN [A-Z0-9 ]+-----/.test(text)) return ctx.fail(`the ${label} file \`${path}\` holds no PEM block`, [field]);
  return text;
}

/**
 * Normalise one `subjectAltNames` entry to `DNS:`, `IP:` or `URI:` form (the schema describes the syntax).
 * Returns an error message for an entry that cannot match anything.
 */
function normaliseAltName(entry: string): string | { error: string } {
  const typed = /^(DNS|IP Address|IP|URI):(.*)$/i.exec(entry.trim());
  if (typed) {
    const type = typed[1]!.toUpperCase();
    const value = typed[2]!.trim();
    if (!value) return { error: `\`${entry}\` has no name after the prefix` };
    if (type === 'IP' || type === 'IP ADDRESS') {
      const bare = value.startsWith('[') && value.endsWith(']') ? value.slice(1, -1) : value;
      return ipFamily(bare) ? `IP:${bare}` : { error: `\`${value}\` is not an IP address` };
    }
    return `${type}:${value}`;
  }
  const value = entry.trim();
  const bare = value.startsWith('[') && value.endsWith(']') ? value.slice(1, -1) : value;
  if (ipFamily(bare)) return `IP:${bare}`;
  if (value.includes('://')) return `URI:${value}`;
  if (/\s|[/,]/.test(value)) return { error: `\`${entry}\` is not a DNS name; write \`DNS:\`, \`IP:\` or \`URI:\` before it` };
  return `DNS:${value}`;
}

/**
 * `backendTLS`: TLS from the gateway to the upstream. No hooks: it offers the `tls` facet, which the `host` backend
 * (and any backend built on `ctx.http.target`) turns into the connection pool's TLS settings.
 */
export default definePolicy<BackendTlsConfig>({
  key: 'backendTLS',
  description: 'TLS to the upstream: CA bundle, client certificate (mTLS), SNI/verification name, ALPN, accepted SANs.',
  schema,
  attach: ['routePolicies', 'backendPolicies', 'mcpTargetPolicies'],
  phase: 'upstream',
  order: 10,
  async compile(config, ctx) {
    if (config.cert !== undefined && config.key === undefined) ctx.fail('`cert` needs `key` (the private key of the client certificate)', ['cert']);
    if (config.key !== undefined && config.cert === undefined) ctx.fail('`key` needs `cert` (the client certificate it belongs to)', ['key']);

    const tls: UpstreamTls = {};
    if (config.root !== undefined) {
      tls.ca = await readPem(ctx, 'root', config.root, 'CA bundle');
      // Each block parsed: node:tls takes a bundle cut after its BEGIN line, and every upstream handshake fails then.
      const problem = caBundleProblem(tls.ca);
      if (problem) ctx.fail(`the CA bundle \`${config.root}\` is not valid PEM: ${problem}`, ['root']);
    }
    if (config.cert !== undefined && config.key !== undefined) {
      tls.cert = await readPem(ctx, 'cert', config.cert, 'client certificate');
      tls.key = await readPem(ctx, 'key', config.key, 'private key');
      try {
        createSecureContext({ cert: tls.cert });
      } catch (err) {
        ctx.fail(`the client certificate \`${config.cert}\` is not a valid PEM certificate: ${(err as Error).message}`, ['cert']);
      }
      try {
        createSecureContext({ cert: tls.cert, key: tls.key });
      } catch (err) {
        ctx.fail(`the private key \`${config.key}\` is not valid or does not belong to \`${config.cert}\`: ${(err as Error).message}`, ['key']);
      }
    }
    if (config.hostname !== undefined) {
      const name = config.hostname.trim();
      if (!name || (/[\s/:]/.test(name) && ipFamily(name) === 0)) ctx.fail(`\`${config.hostname}\` is not a host name`, ['hostname']);
      tls.servername = name;
    }
    if (config.insecure === true) {
      tls.insecure = true;
      ctx.warn('`insecure: true` turns off all verification of the upstream certificate; use `root` and `hostname` instead outside tests', ['insecure']);
    }
    if (config.insecureHost === true) tls.insecureHost = true;
    if (config.alpn !== undefined) tls.alpn = [...config.alpn];
    if (config.subjectAltNames !== undefined) {
      tls.subjectAltNames = config.subjectAltNames.map((entry, i) => {
        const n = normaliseAltName(entry);
        return typeof n === 'string' ? n : ctx.fail(n.error, ['subjectAltNames', i]);
      });
    }
    return { facets: { tls } };
  },
});
