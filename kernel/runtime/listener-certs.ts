import type { Logger } from '../sdk/index.ts';
import { caBundleProblem, FILE_SIZE_LIMITS, readLocalFile } from '../sdk/index.ts';
import type { CompiledBind, CompiledListener, Snapshot } from '../compile/snapshot.ts';
import { watchConfigFile } from '../config/watch-config.ts';

// HTTPS listeners' certificate, key and client CA files read again while their config stays live (ADR 0138): a certificate
// renewed on disk (cert-manager, certbot, a Secret mount) reaches new connections without a restart or an edit
// of the config. A pair that does not load keeps the last good one.

/** The HTTPS listeners of a snapshot with their files. */
function listenersWithFiles(snapshot: Snapshot): { bind: CompiledBind; listener: CompiledListener & { tlsFiles: { cert: string; key: string; root?: string } } }[] {
  const out = [];
  for (const bind of snapshot.binds.values()) {
    for (const listener of bind.listeners) if (listener.tlsFiles !== undefined) out.push({ bind, listener: listener as CompiledListener & { tlsFiles: { cert: string; key: string; root?: string } } });
  }
  return out;
}

/**
 * Read every HTTPS listener's certificate and key again; a pair that changed and loads replaces the listener's
 * (new handshakes get it, open connections keep theirs). Returns the binds whose listeners changed.
 */
export async function reloadListenerCertificates(snapshot: Snapshot, logger: Logger): Promise<Set<CompiledBind>> {
  const changed = new Set<CompiledBind>();
  for (const { bind, listener } of listenersWithFiles(snapshot)) {
    const fields = { listener: listener.name, port: bind.port, cert: listener.tlsFiles.cert };
    const files = listener.tlsFiles;
    let cert: string;
    let key: string;
    let ca: string | undefined;
    try {
      [cert, key, ca] = await Promise.all([
        readLocalFile(files.cert, FILE_SIZE_LIMITS.key),
        readLocalFile(files.key, FILE_SIZE_LIMITS.key),
        files.root === undefined ? undefined : readLocalFile(files.root, FILE_SIZE_LIMITS.key),
      ]);
    } catch (err) {
      logger.error('cannot reload the listener certificate; keeping the last good one', { ...fields, error: (err as Error).message });
      continue;
    }
    if (cert === listener.tlsPem?.cert && key === listener.tlsPem.key && ca === listener.tlsPem.ca) continue;
    // A client CA cut short loads in node:tls and verifies no client: refused like a pair that does not load.
    const caProblem = ca === undefined ? undefined : caBundleProblem(ca);
    if (caProblem) {
      logger.error('cannot reload the listener certificate; keeping the last good one', { ...fields, error: `the client CA file ${files.root}: ${caProblem}` });
      continue;
    }
    try {
      listener.secureContext = process.getBuiltinModule('node:tls').createSecureContext({ cert, key, ca });
    } catch (err) {
      // A renewal that writes the certificate and the key one after the other passes through a mismatched pair:
      // the second write's change loads it.
      logger.error('cannot reload the listener certificate; keeping the last good one', { ...fields, error: (err as Error).message });
      continue;
    }
    listener.tlsPem = ca === undefined ? { cert, key } : { cert, key, ca };
    changed.add(bind);
    logger.info('listener certificate reloaded', fields);
  }
  return changed;
}

/** Watch every HTTPS listener's certificate, key and client CA file of `snapshot`; `onChange` after any changes. Returns the stop. */
export function watchListenerCertificates(snapshot: Snapshot, onChange: () => void): () => void {
  const files = new Set<string>();
  for (const { listener } of listenersWithFiles(snapshot)) {
    files.add(listener.tlsFiles.cert).add(listener.tlsFiles.key);
    if (listener.tlsFiles.root !== undefined) files.add(listener.tlsFiles.root);
  }
  // The config file's watch: it follows renames, re-created files and Kubernetes' `..data` link swaps.
  const stops = [...files].map((file) => watchConfigFile(file, onChange));
  return () => {
    for (const stop of stops) stop();
  };
}

/**
 * The live config's listener certificates for a gateway: watched while `watch` was called (the config file is
 * watched), read again by `reload` (a SIGHUP), one pass at a time (watch events come in bursts).
 */
export class ListenerCertificates {
  private readonly live: () => Snapshot | undefined;
  private readonly logger: Logger;
  private readonly changed: (bind: CompiledBind) => void;
  private stopWatch: (() => void) | undefined;
  private pass: Promise<void> = Promise.resolve();
  private stopped = false;

  /** `changed`: a bind whose listeners got a renewed pair (its server's default certificate follows). */
  constructor(live: () => Snapshot | undefined, logger: Logger, changed: (bind: CompiledBind) => void) {
    this.live = live;
    this.logger = logger;
    this.changed = changed;
  }

  /** Watch the files of `snapshot` (instead of the previous one's). */
  watch(snapshot: Snapshot): void {
    this.stopWatch?.();
    this.stopWatch = watchListenerCertificates(snapshot, () => void this.reload());
  }

  /** After a reload: watch the new config's files when the previous one's were watched. */
  follow(snapshot: Snapshot): void {
    if (this.stopWatch !== undefined) this.watch(snapshot);
  }

  reload(): Promise<void> {
    this.pass = this.pass.then(async () => {
      const snapshot = this.live();
      if (!snapshot || this.stopped) return;
      for (const bind of await reloadListenerCertificates(snapshot, this.logger)) this.changed(bind);
    });
    return this.pass;
  }

  stop(): void {
    this.stopped = true;
    this.stopWatch?.();
  }
}
