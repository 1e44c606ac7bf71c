import { lstatSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonSchema } from '../sdk/index.ts';
import { ajvRuntimeModule, ajvVersion, releaseAjv } from './ajv-lib.ts';
import { generateValidatorCode } from './validator-code.ts';
import type { ValidatorRuntime } from './validator-code.ts';
// Not `import ... from 'node:crypto'`: an ES import builds crypto's namespace, which reads its lazy `webcrypto` getter and
// so loads Node's WebCrypto for every gateway (docs/perf.md "Memory, session 10b").
const { createHash } = process.getBuiltinModule('node:crypto');

/**
 * Precompiled config validators on disk (ADR 0042). ajv's import and its compile of a config's (pruned) schema
 * are about 150 ms of CPU and 13+ MiB at every start; the same schema gives the same code, so the code of the
 * first start is kept and later starts `require` it (Node's compile cache then holds its bytecode too).
 *
 * A file is named by the SHA-256 of the schema, ajv's version and the generator's own source, so a changed plugin
 * schema, ajv or generator never meets an old file. The directory is the user's own (created 0700, used only when
 * it is owned by this uid and not writable by others, as ssh checks `~/.ssh`): loading code from a directory another
 * user can write would run their code. `SWITCHYARD_CACHE_DIR` moves it; `SWITCHYARD_CACHE_DIR=off` turns it off.
 */
export class ValidatorCodeCache {
  private readonly dir: string;
  private salt: string | undefined;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** The cache of this process's environment, or undefined when turned off or unusable (no uid, say). */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): ValidatorCodeCache | undefined {
    const configured = env.SWITCHYARD_CACHE_DIR;
    if (configured === 'off' || configured === '') return undefined;
    if (typeof process.getuid !== 'function') return undefined;
    return new ValidatorCodeCache(configured ?? join(tmpdir(), `switchyard-${process.getuid()}`, 'validators'));
  }

  /** The validator precompiled for `schema`, or undefined (not generated yet, or the directory is not safe). */
  load(schema: JsonSchema, rt: ValidatorRuntime): ((data: unknown) => boolean) | undefined {
    const file = this.fileOf(schema);
    try {
      if (!this.safeDir(false)) return undefined;
      // A require of its own, and out of Node's module cache at once: the module (its source, ~130 KiB for the full
      // preset, and its functions) is then reachable only from the validator returned, and goes with it when the
      // load is done (ADR 0099). A `createRequire` function records what it loads as its parent's children, so one
      // per load, not one per cache.
      const require = createRequire(import.meta.url);
      try {
        const make = require(file) as (rt: ValidatorRuntime, require: (id: string) => unknown) => (data: unknown) => boolean;
        return make(rt, ajvRuntimeModule);
      } finally {
        delete require.cache[require.resolve(file)]; // the cache's key is the real path
      }
    } catch {
      return undefined;
    }
  }

  /** Generate and write the code for `schema` (atomically: a reader sees a whole file or none). False when it could not. */
  store(schema: JsonSchema): boolean {
    try {
      if (!this.safeDir(true)) return false;
      const file = this.fileOf(schema);
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, generateValidatorCode(schema), { mode: 0o600 });
      renameSync(tmp, file);
      this.trim();
      return true;
    } catch {
      return false;
    } finally {
      releaseAjv(); // the generator's ajv goes with it (ajv-lib.ts)
    }
  }

  private fileOf(schema: JsonSchema): string {
    // The generator is one function (its keywords inside): its text changes whenever the code it writes could.
    this.salt ??= `${ajvVersion()}\n${generateValidatorCode.toString()}`;
    const hash = createHash('sha256').update(this.salt).update('\n').update(JSON.stringify(schema)).digest('hex');
    return join(this.dir, `${hash.slice(0, 40)}.cjs`);
  }

  /** The directory exists (or is made, when `create`), is a real directory, ours, and closed to others. */
  private safeDir(create: boolean): boolean {
    if (create) mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(this.dir, { throwIfNoEntry: false });
    if (!st || !st.isDirectory()) return false;
    return st.uid === process.getuid!() && (st.mode & 0o022) === 0;
  }

  /** At most MAX_FILES validators: the oldest go (a config rarely changes which plugins it uses). */
  private trim(): void {
    const files = readdirSync(this.dir).filter((f) => f.endsWith('.cjs'));
    if (files.length <= MAX_FILES) return;
    const aged = files.map((f) => ({ f, t: statSync(join(this.dir, f)).mtimeMs })).sort((a, b) => a.t - b.t);
    for (const { f } of aged.slice(0, files.length - MAX_FILES)) rmSync(join(this.dir, f), { force: true });
  }
}

const MAX_FILES = 200;
