import { createRequire } from 'node:module';

/**
 * A package loaded for one config load and let go when the load ends (ADR 0099): required through a `require` of its
 * own, its modules are taken out of Node's module cache by `release()`, so nothing of it stays reachable once the
 * load's results drop it; the next load requires it again (its bytecode from Node's compile cache). Config loads are a
 * start and each reload, and the tools they use (ajv, both YAML parsers) held 0.5-1.3 MiB of heap each for the
 * process's life. One implementation for kernel/config/ajv-lib.ts, yaml-lib.ts and js-yaml-lib.ts. (In
 * kernel/sdk/ because the SDK's `withYamlParser` shares yaml-lib.ts's with the config loads.)
 *
 * Where the package does not resolve from node_modules (a trimmed distribution, bin/build-dist.ts), `bundled` gives
 * the bundle's copy, which stays loaded as every bundled module does. `bundled` must be a literal `require` call in the
 * caller, so that the bundler carries the package.
 */
export class LoadScopedPackage {
  /** This load's `require` and the module cache's keys before it loaded anything (those are never released). */
  private session: { readonly require: NodeJS.Require; readonly before: ReadonlySet<string> } | undefined;
  private bundledOnly = false;
  private readonly from: string;
  private readonly probe: string;
  private readonly files: RegExp;

  /**
   * @param from the caller's `import.meta.url`: where the package resolves from
   * @param probe a request that resolves only where the package is installed
   * @param files the module cache keys that are the package's (and its dependencies')
   */
  constructor(from: string, probe: string, files: RegExp) {
    this.from = from;
    this.probe = probe;
    this.files = files;
  }

  require(id: string, bundled: () => unknown): unknown {
    if (this.session) return this.session.require(id);
    if (this.bundledOnly) return bundled();
    const fresh = createRequire(this.from);
    try {
      fresh.resolve(this.probe);
    } catch {
      this.bundledOnly = true;
      return bundled();
    }
    this.session = { require: fresh, before: new Set(Object.keys(fresh.cache)) };
    return fresh(id);
  }

  /**
   * Run `use` with the package and release it when `use` returns, unless a session was open already: then its owner
   * (a config load in progress) releases it at its end, and `use` shares that load's copy instead of loading another.
   */
  during<T>(id: string, bundled: () => unknown, use: (pkg: unknown) => T): T {
    const opened = this.session === undefined;
    try {
      return use(this.require(id, bundled));
    } finally {
      if (opened) this.release();
    }
  }

  /** Take the modules loaded since the session began out of Node's module cache. */
  release(): void {
    const session = this.session;
    if (!session) return;
    const cache = session.require.cache;
    for (const key of Object.keys(cache)) if (this.files.test(key) && !session.before.has(key)) delete cache[key];
    this.session = undefined;
  }
}
