import { resolve } from 'node:path';
import { caBundleProblem, FILE_SIZE_LIMITS, readSharedFile } from '../sdk/index.ts';
import { notCheckedIssue } from '../sdk/check-only.ts';
import type { ConfigPath } from '../sdk/index.ts';
import type { CompiledBind, CompiledListener, CompiledRoute } from './snapshot.ts';
import type { LoadCompiler } from './load-compiler.ts';
import { compileRoute } from './compile-route.ts';
import { indexRoutes } from './route-index.ts';
import { ipFamily } from '../sdk/ip-family.ts';
import { describeTlsSettings, listenerTlsSettings, sameTlsSettings } from './listener-tls-settings.ts';
import type { TlsSettings } from './listener-tls-settings.ts';

type Obj = Record<string, unknown>;

/** A listener's PEM file (regular, at most FILE_SIZE_LIMITS.key); undefined after an issue at `at`. */
async function readListenerFile(c: LoadCompiler, file: string, at: ConfigPath, label: string): Promise<string | undefined> {
  if (c.deps.checkOnly) {
    c.issues.push(notCheckedIssue(at, `the listener ${label} file \`${file}\``));
    return undefined;
  }
  const full = resolve(c.deps.cwd, file);
  try {
    // Once per version for the gateway's workers.
    return await readSharedFile(c.deps.shared.fetches, full, FILE_SIZE_LIMITS.key);
  } catch (err) {
    c.issue(at, `cannot read the listener ${label} file \`${file}\` (${full}): ${(err as Error).message}`);
    return undefined;
  }
}

/** One bound port: its listeners (TLS loaded here), their routes, and how a request's hostname picks a listener. */
export async function compileBind(c: LoadCompiler, bind: Obj, path: ConfigPath): Promise<CompiledBind | undefined> {
  const port = bind.port as number;
  // Checked here so --validate-only refuses what the listen would (a name or `999.1.1.1` fails in getaddrinfo).
  const address = bind.address as string | undefined;
  if (address !== undefined && ipFamily(address) === 0) {
    c.issue([...path, 'address'], `\`${address}\` is not an IP address (write one such as \`127.0.0.1\` or \`::1\`)`);
  }
  const listeners: CompiledListener[] = [];
  const rawListeners = (bind.listeners ?? []) as Obj[];
  let secure: boolean | undefined;
  let tlsSettings: { settings: TlsSettings; listener: string } | undefined;
  for (let li = 0; li < rawListeners.length; li++) {
    const l = rawListeners[li]!;
    const lpath = [...path, 'listeners', li];
    const name = (l.name as string | undefined) ?? `listener${li}`;
    const isHttps = l.protocol === 'HTTPS';
    if (secure !== undefined && secure !== isHttps) {
      c.issue([...lpath, 'protocol'], `a bind cannot mix HTTP and HTTPS listeners (port ${port})`);
      continue;
    }
    secure = isHttps;
    if (!isHttps && l.tls !== undefined) {
      // Left as it was, the listener would serve cleartext to a user who asked for TLS.
      c.issue([...lpath, 'tls'], `\`tls\` is set on a listener whose protocol is ${String(l.protocol ?? 'HTTP (the default)')}: write \`protocol: HTTPS\`, or remove \`tls\``);
      continue;
    }
    let secureContext;
    let tlsPem;
    let tlsFiles;
    if (isHttps) {
      const tls = l.tls as { cert: string; key: string; root?: string } | undefined;
      if (!tls) {
        c.issue(lpath, 'an HTTPS listener needs `tls.cert` and `tls.key`');
        continue;
      }
      const settings = listenerTlsSettings(tls as Record<string, unknown>, [...lpath, 'tls'], (at, message) => c.issue(at, message));
      if (settings === undefined) continue;
      if (tlsSettings === undefined) tlsSettings = { settings, listener: name };
      else if (!sameTlsSettings(tlsSettings.settings, settings)) {
        c.issue(
          [...lpath, 'tls'],
          `the HTTPS listeners of port ${port} must have the same minTLSVersion, maxTLSVersion and cipherSuites (node:tls negotiates them before SNI selects a listener): \`${tlsSettings.listener}\` has ${describeTlsSettings(tlsSettings.settings)}, \`${name}\` ${describeTlsSettings(settings)}; give them the same, or put them on separate ports`,
        );
        continue;
      }
      const cert = await readListenerFile(c, tls.cert, [...lpath, 'tls', 'cert'], 'certificate');
      const key = await readListenerFile(c, tls.key, [...lpath, 'tls', 'key'], 'private key');
      const ca = tls.root === undefined ? undefined : await readListenerFile(c, tls.root, [...lpath, 'tls', 'root'], 'client CA');
      // node:tls takes a bundle cut after its BEGIN line, and no client certificate verifies then.
      const caProblem = ca === undefined ? undefined : caBundleProblem(ca);
      if (caProblem) {
        c.issue([...lpath, 'tls', 'root'], `the listener client CA file \`${tls.root}\` is not valid PEM: ${caProblem}`);
        continue;
      }
      if (cert === undefined || key === undefined || (tls.root !== undefined && ca === undefined)) {
        // The validator reads neither (ADR 0131) and goes on to the listener's routes.
        if (!c.deps.checkOnly) continue;
      } else {
        try {
          // node:tls only for an HTTPS listener: a cleartext config never loads it.
          secureContext = process.getBuiltinModule('node:tls').createSecureContext({ cert, key, ca });
          tlsPem = ca === undefined ? { cert, key } : { cert, key, ca };
          tlsFiles = { cert: resolve(c.deps.cwd, tls.cert), key: resolve(c.deps.cwd, tls.key), ...(tls.root === undefined ? {} : { root: resolve(c.deps.cwd, tls.root) }) };
        } catch (err) {
          c.issue([...lpath, 'tls'], `cannot load the listener certificate: ${(err as Error).message}`);
          continue;
        }
      }
    }
    const routes: CompiledRoute[] = [];
    const rawRoutes = (l.routes ?? []) as Obj[];
    // How many earlier routes of this listener have each name: a repeated name's state key must differ (stateKey).
    const named = new Map<string, number>();
    for (let ri = 0; ri < rawRoutes.length; ri++) {
      const routeName = rawRoutes[ri]!.name;
      const repeat = typeof routeName === 'string' ? (named.get(routeName) ?? 0) : 0;
      if (typeof routeName === 'string') named.set(routeName, repeat + 1);
      const r = await compileRoute(c, rawRoutes[ri]!, [...lpath, 'routes', ri], ri, name, port, repeat);
      if (r) routes.push(r);
      await c.breathe();
    }
    listeners.push({ name, hostname: (l.hostname as string | undefined)?.toLowerCase(), routes, routesFor: indexRoutes(routes), secureContext, tlsPem, tlsFiles, clientCertificates: tlsFiles?.root !== undefined });
  }
  const exact = new Map<string, CompiledListener>();
  const wildcards: { suffix: string; listener: CompiledListener }[] = [];
  let fallback: CompiledListener | undefined;
  for (const l of listeners) {
    if (!l.hostname) fallback ??= l;
    else if (l.hostname.startsWith('*.')) wildcards.push({ suffix: l.hostname.slice(1), listener: l });
    else if (!exact.has(l.hostname)) exact.set(l.hostname, l);
  }
  wildcards.sort((a, b) => b.suffix.length - a.suffix.length);
  const single = listeners.length === 1 && !listeners[0]!.hostname ? listeners[0] : undefined;
  const selectListener = single
    ? () => single
    : (hostname: string) => {
        const hit = exact.get(hostname);
        if (hit) return hit;
        for (const w of wildcards) if (hostname.length > w.suffix.length && hostname.endsWith(w.suffix)) return w.listener;
        return fallback;
      };
  const defaultTls = listeners.find((l) => l.secureContext);
  return {
    port,
    address: bind.address as string | undefined,
    secure: secure ?? false,
    listeners,
    selectListener,
    tlsSettings: tlsSettings?.settings,
    tlsListener: (servername) => {
      const name = servername.toLowerCase();
      return selectListener(name.endsWith('.') ? name.slice(0, -1) : name) ?? defaultTls;
    },
  };
}
