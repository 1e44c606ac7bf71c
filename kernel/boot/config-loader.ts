import { ConfigError, ErrorCode } from '../sdk/index.ts';
import type { ConfigIssue, Logger } from '../sdk/index.ts';
import { notCheckedIssue } from '../sdk/check-only.ts';
import { PooledUpstreams } from '../upstream/pooled-upstreams.ts';
import { UpstreamMetrics } from '../telemetry/upstream-metrics.ts';
import { compileSnapshot } from '../compile/compile-snapshot.ts';
import type { Snapshot } from '../compile/snapshot.ts';
import { releaseAjv } from '../config/ajv-lib.ts';
import { assembleSchema } from '../config/assemble-schema.ts';
import { checkPluginSchemas } from '../config/plugin-schemas.ts';
import { ConfigLoadError } from '../config/format-issues.ts';
import type { PositionedIssue } from '../config/format-issues.ts';
import type { PasteCheckResult } from '../config/paste-check.ts';
import { parseConfigFast, parseConfigText, pluginListOf, validateParsed } from '../config/load-config.ts';
import type { LoadedConfig, ParsedConfig } from '../config/load-config.ts';
import { configName, readConfigInput } from './config-input.ts';
import { redactConfig } from '../config/redact-config.ts';
import { positionRedacted } from '../config/redact-issues.ts';
import { releaseYaml } from '../sdk/yaml-lib.ts';
import { compileScrubber } from '../config/scrubber.ts';
import type { SecretMarks } from '../config/secret-marks.ts';
import { ConfigValidator } from '../config/validate-config.ts';
import type { ValidatorCodeCache } from '../config/validator-cache.ts';
import { CelExpressions } from '../expr/cel-expressions.ts';
import type { PluginRegistry } from '../registry/registry.ts';
import type { GenerationalResources } from '../resources/resource-cache.ts';
import type { SharedCells } from '../resources/shared-cells.ts';
import type { SharedEvents, SharedFetches } from '../sdk/shared.ts';
import type { GatewayProcesses } from '../sdk/processes.ts';
import type { ProcessLogger } from '../telemetry/logger.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import type { TracingHolder } from '../telemetry/tracing.ts';
import { buildRegistry, preloadPluginList } from './build-registry.ts';

/** Problems a failed reload reports (and logs); the rest are counted (ADR 0179). The start and the CLI report all. */
const MAX_RELOAD_ISSUES = 100;

/** What a paste's answer lists apart from its errors: what it left unchecked and the plugins' `ctx.warn` (ADR 0131). */
const isWarning = (i: { readonly code: string }): boolean => i.code === ErrorCode.configUnchecked || i.code === ErrorCode.configWarning;

/** Where the config comes from: a watched file, or inline text (`-c`, tests). */
export type ConfigInput = { readonly file: string } | { readonly name: string; readonly text: string; readonly base?: string };

/** What the loader needs of the gateway's options (`GatewayOptions` extends it). */
export interface ConfigLoaderOptions {
  /** The distribution's plugins (a preset). */
  readonly preset: readonly unknown[];
  /** Keys of first-party plugins that may be missing from a trimmed distribution. */
  readonly knownKeys?: Iterable<string>;
  /** Precompiled config validators kept across starts (the CLI's, ADR 0042); none: ajv compiles at every start. */
  readonly validatorCache?: ValidatorCodeCache;
  readonly config: ConfigInput;
  /** Relative paths in the config resolve against it (default: the process's working directory). */
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/** How `compile` treats a text. */
export interface CompileOptions {
  /**
   * A config pasted into the admin UI's validator (ADR 0124): `${VAR}` expands against no environment, since its
   * compile can send a value elsewhere (a JWKS URL is fetched, a SQLite path is created), and its secrets are kept
   * out of the log only while it compiles, so that validations do not grow the log's scrubber for good.
   */
  readonly pasted?: boolean;
  /**
   * The config the gateway's other workers serve already (a restarted worker catching up with a reload): the shared
   * state of its backends is live, so none is zeroed as new (CompileDeps.joins).
   */
  readonly joins?: boolean;
  /** Problems to position and report; the rest are counted (`ConfigLoadError.more`). Default: all, or 100 on a reload. */
  readonly limit?: number;
  /**
   * A reload whose text passed {@link ConfigLoader.checkReload} already: in one worker, for all of them (the
   * supervisor asks one; each would start a check thread of its own on the same text).
   */
  readonly checked?: boolean;
}

/** The admin UI's verdict on a pasted config: its errors, and what it left unchecked (ADR 0131), positioned. */
export interface PastedCheck {
  readonly errors: readonly PositionedIssue[];
  readonly warnings: readonly PositionedIssue[];
  /** Errors found beyond those in `errors` and only counted (a paste's parse and schema check sends the first few). */
  readonly moreErrors?: number;
  /** Likewise warnings beyond those in `warnings` (a compile's are positioned the first 100, ADR 0179). */
  readonly moreWarnings?: number;
}

/** The kernel services a load uses. */
export interface ConfigLoaderServices {
  readonly logger: ProcessLogger;
  readonly metrics: MetricsRegistry;
  readonly resources: GenerationalResources;
  readonly shared: { readonly cells: SharedCells; readonly fetches: SharedFetches; readonly events: SharedEvents; readonly processes: GatewayProcesses };
}

/**
 * Config text to Snapshot for one gateway process: the plugin registry (built once), then per load parse, validate
 * and compile, with the secrets each snapshot's config holds (for `/config_dump`) and the ones the process log must
 * never show. With a precompiled-validator cache (the CLI's) the schema validator lives for one load only: the
 * assembled schema and the precompiled validator's module are old space the data plane never reads, and a reload
 * rebuilds them in a few ms from the cache (ADR 0099). Without one (embedders, tests) every validator is ajv's own
 * compile, ~100 ms, so it is kept for the reloads.
 */
export class ConfigLoader {
  private readonly options: ConfigLoaderOptions;
  private readonly s: ConfigLoaderServices;
  private readonly log: Logger;
  private readonly traces: TracingHolder;
  private registry: PluginRegistry | undefined;
  /** `config.plugins` the registry was built with (read at start only). */
  private thirdParty: readonly string[] = [];
  /** Plugin keys of this distribution and whether the start may skip the meta-schema check (set with the registry). */
  private validation: { readonly knownKeys: readonly string[]; readonly checkSchema: boolean } | undefined;
  /** The validator kept across loads when there is no precompiled-validator cache (the class comment). */
  private keptValidator: ConfigValidator | undefined;
  private generation = 0;
  private expressions: CelExpressions | undefined;
  /** Where each live snapshot's secrets are, for `/config_dump`. */
  private readonly secrets = new WeakMap<Snapshot, SecretMarks>();
  /** Secret strings of every config loaded so far: the process log never shows them. */
  private readonly hidden = new Set<string>();
  /** Those of pasted configs being compiled now (`CompileOptions.pasted`). */
  private readonly pastedHidden = new Set<ReadonlySet<string>>();

  constructor(options: ConfigLoaderOptions, services: ConfigLoaderServices, traces: TracingHolder) {
    this.options = options;
    this.s = services;
    this.log = services.logger;
    this.traces = traces;
  }

  get pluginRegistry(): PluginRegistry | undefined {
    return this.registry;
  }

  get fileName(): string {
    return configName(this.options.config);
  }

  /** The config text: the file read now (bounded, never blocking; ConfigLoadError when unreadable) or the inline text. */
  readText(): Promise<string> {
    return readConfigInput(this.options.config);
  }

  /** Build the plugin registry (once per process: plugin modules are static config). */
  async prepare(text?: string): Promise<void> {
    if (this.registry) return;
    await this.prepareWith(preloadPluginList(text ?? (await this.readText()), this.options.env));
  }

  private async prepareWith(thirdParty: readonly string[]): Promise<void> {
    if (this.registry) return;
    const c = this.options.config;
    this.thirdParty = thirdParty;
    this.registry = await buildRegistry(this.options.preset, thirdParty, 'file' in c ? c.file : c.base);
    // A third-party schema that cannot be used is refused now, naming its plugin (ADR 0144).
    if (thirdParty.length) checkPluginSchemas(this.registry, assembleSchema(this.registry));
    const knownKeys = [...(this.options.knownKeys ?? [])];
    // Only first-party plugins (the distribution's preset, no `config.plugins`): their schemas are checked against
    // the meta-schema by the tests, so the start skips that check (about 60 ms, docs/perf.md "Startup").
    const known = new Set(knownKeys);
    const firstPartyOnly = thirdParty.length === 0 && this.registry.plugins().every(({ plugin }) => plugin.kind === 'slot' || known.has(plugin.key));
    this.validation = { knownKeys, checkSchema: !firstPartyOnly };
    const celVariables = this.registry.plugins().flatMap(({ plugin }) => (plugin.kind === 'slot' ? [] : (plugin.celVariables ?? [])));
    this.expressions = new CelExpressions(celVariables);
  }

  /** The schema validator for one load: a new one per load with a code cache, else the one kept (the class comment). */
  private validator(): ConfigValidator {
    if (this.keptValidator) return this.keptValidator;
    const { knownKeys, checkSchema } = this.validation!;
    const codeCache = this.options.validatorCache;
    const validator = new ConfigValidator(assembleSchema(this.registry!), knownKeys, { slotNouns: this.registry!.slotNouns(), checkSchema, codeCache });
    if (!codeCache) this.keptValidator = validator;
    return validator;
  }

  /** Parse, validate and compile text into a snapshot. Throws ConfigLoadError with positions. */
  async compile(text: string, options: CompileOptions = {}): Promise<Snapshot> {
    try {
      return await this.compileText(text, options);
    } finally {
      releaseYaml(); // if this load needed the positioned parser, it is not kept (yaml-lib.ts)
    }
  }

  /**
   * The admin UI's validator: compile `text` as pasted and drop it. Problems come back as errors; what it did not
   * check (files, stores, URLs, plugin modules: ADR 0131) and the plugins' `ctx.warn` as warnings; anything else
   * thrown is not a verdict.
   */
  async check(text: string, limit: number): Promise<PastedCheck> {
    // Parse and schema check on a thread of their own (ADR 0172): only a paste that passes both compiles here.
    await this.prepareWith([]);
    const early = await this.checkOffThread(text, limit);
    if (early.total > 0) return { errors: early.errors, warnings: [], moreErrors: early.total - early.errors.length };
    try {
      const snapshot = await this.compile(text, { pasted: true, limit });
      snapshot.dispose();
      await this.s.resources.release(snapshot.generation);
      return { errors: [], warnings: [] };
    } catch (err) {
      if (!(err instanceof ConfigLoadError)) throw err;
      const more = { ...(err.more > 0 ? { moreErrors: err.more } : {}), ...(err.moreWarnings > 0 ? { moreWarnings: err.moreWarnings } : {}) };
      return { errors: err.issues.filter((i) => !isWarning(i)), warnings: err.issues.filter(isWarning), ...more };
    }
  }

  /**
   * Parse and schema check `text` on a thread of its own (paste-check.ts): a paste without the environment, else
   * with it. With `issues` (the compile's, of a text that passed), position the first `limit` of them there.
   */
  private async checkOffThread(text: string, limit: number, env?: NodeJS.ProcessEnv, issues?: readonly ConfigIssue[]): Promise<PasteCheckResult> {
    const { checkPasteOffThread } = await import('../config/paste-check.ts');
    const schema = assembleSchema(this.registry!);
    const { knownKeys } = this.validation!;
    return checkPasteOffThread({ text, schema, knownKeys, slotNouns: this.registry!.slotNouns(), limit, ...(env ? { env, file: this.fileName } : {}), ...(issues ? { issues } : {}) });
  }

  /**
   * The compile's problems of a reload or a paste, positioned: the first `limit` of the errors (and of the
   * warnings), on the check's thread; on the gateway's thread if that thread gives no answer.
   */
  private async positionIssues(loaded: LoadedConfig, text: string, issues: readonly ConfigIssue[], limit: number, env: NodeJS.ProcessEnv | undefined): Promise<ConfigLoadError> {
    const errors = issues.filter((i) => !isWarning(i));
    const warnings = issues.filter(isWarning);
    const shown = [...errors.slice(0, limit), ...warnings.slice(0, limit)];
    const more = [Math.max(0, errors.length - limit), Math.max(0, warnings.length - limit)] as const;
    try {
      return new ConfigLoadError((await this.checkOffThread(text, shown.length, env, shown)).errors, ...more);
    } catch (err) {
      this.log.warn("the config's problems could not be positioned on a thread of their own; positioning them on the gateway's", { error: err as Error });
      return new ConfigLoadError(positionRedacted(loaded.source, shown, loaded.secrets, loaded.value), ...more);
    }
  }

  /**
   * A reload's parse and schema check. A text the fast parse reads and the precompiled validator passes (the common
   * reload, with the CLI's code cache) is valid: resolves with its parse, validated and marked, so that the load
   * validates it no second time. Any other is checked off the gateway's thread (ADR 0179): a file with 20,000
   * problems took the event loop for seconds. Its first problems end the reload (ConfigLoadError); a thread that
   * gives no verdict (out of memory, time) leaves the check to the gateway's thread, as before.
   */
  async checkReload(text: string, validator: ConfigValidator = this.validator()): Promise<ParsedConfig | undefined> {
    const fast = parseConfigFast(this.fileName, text);
    if (fast && validator.passes(fast.value, fast.secrets, true)) return fast;
    const env = this.options.env ?? process.env;
    let early: PasteCheckResult;
    try {
      early = await this.checkOffThread(text, MAX_RELOAD_ISSUES, env);
    } catch (err) {
      this.log.warn("the reloaded config could not be checked on a thread of its own; checking it on the gateway's", { error: err as Error });
      return;
    }
    if (early.total > 0) throw new ConfigLoadError(early.errors, early.total - early.errors.length);
    return undefined;
  }

  /** `config.plugins` of a pasted config that this process did not load: never loaded for a paste (ADR 0131). */
  private unloadedPlugins(parsed: ReturnType<typeof parseConfigText>): ConfigIssue[] {
    const missing = pluginListOf(parsed).filter((name) => !this.thirdParty.includes(name));
    if (missing.length === 0) return [];
    const loaded = this.thirdParty.length ? `only those it started with: ${this.thirdParty.join(', ')}` : 'none';
    const what = `\`config.plugins\` (${missing.join(', ')}: the validator loads no plugin module a paste names, and checks with the plugins this gateway loaded at start, ${loaded})`;
    return [notCheckedIssue(['config', 'plugins'], what)];
  }

  /**
   * A secret the config file does not hold (`ctx.hideInLog`: a key file's text; OTEL_EXPORTER_OTLP_HEADERS): hidden
   * from the log from now on, as config secrets are. A value naming its scheme (`Bearer abc`) is hidden whole and by
   * its credential alone, which an echo may quote without it.
   */
  private hideRead(secret: string): void {
    const value = secret.trim();
    const credential = value.split(/\s+/).at(-1)!;
    const before = this.hidden.size;
    this.hidden.add(value);
    this.hidden.add(credential);
    if (this.hidden.size !== before) this.rescrub();
  }

  private rescrub(): void {
    const pasted = [...this.pastedHidden].flatMap((set) => [...set]);
    this.s.logger.configure({ scrub: compileScrubber(pasted.length ? [...this.hidden, ...pasted] : this.hidden) });
  }

  private async compileText(text: string, options: CompileOptions): Promise<Snapshot> {
    const env = options.pasted ? {} : (this.options.env ?? process.env);
    // A reload: the gateway serves meanwhile (a paste's check() ran this already). Its registry is built.
    const reload = !options.pasted && this.generation > 0;
    const validator = reload ? this.validator() : undefined;
    const passed = reload && !options.checked ? await this.checkReload(text, validator) : undefined;
    // Parsed once: the same parse gives the plugin list (first load only) and the value to validate.
    // A pasted text is not the config file: its positions are named after what it is.
    const parsed = passed ?? parseConfigText(options.pasted ? '(pasted config)' : this.fileName, text, env);
    // A paste never names the modules to load (importing one runs its code).
    await this.prepareWith(options.pasted ? [] : pluginListOf(parsed));
    const notes = options.pasted ? this.unloadedPlugins(parsed) : [];
    let loaded: ReturnType<typeof validateParsed>;
    try {
      loaded = validateParsed(parsed, validator ?? this.validator(), passed !== undefined);
    } finally {
      releaseAjv(); // if this load needed ajv, it goes with the validator (ajv-lib.ts)
    }
    const pasted = options.pasted && loaded.hidden.size > 0 ? loaded.hidden : undefined;
    const before = this.hidden.size;
    if (pasted) this.pastedHidden.add(pasted);
    else for (const h of loaded.hidden) this.hidden.add(h);
    if (pasted || this.hidden.size !== before) this.rescrub();
    const generation = ++this.generation;
    try {
      const snapshot = await compileSnapshot(loaded.value, {
        registry: this.registry!,
        resources: this.s.resources,
        metrics: this.s.metrics,
        logger: this.log,
        cwd: this.options.cwd ?? process.cwd(),
        generation,
        joins: options.joins,
        env,
        expressions: this.expressions!,
        upstreams: (resources) => new PooledUpstreams(resources, new UpstreamMetrics(this.s.metrics), this.traces),
        shared: this.s.shared,
        traces: this.traces,
        checkOnly: options.pasted,
        ...(options.pasted ? {} : { hideInLog: (secret: string) => this.hideRead(secret) }),
      });
      if (notes.length) {
        // A paste is never served: its notes end the compile like issues do, and the catch below adds them.
        snapshot.dispose();
        throw new ConfigError([]);
      }
      this.secrets.set(snapshot, loaded.secrets);
      return snapshot;
    } catch (err) {
      await this.s.resources.release(generation);
      if (err instanceof ConfigError) {
        const issues = [...notes, ...err.issues];
        // A reload reports (and logs) the first problems, as its schema check does, and a paste's answer shows the
        // first `limit`: positioning costs (24,000 took 19 s; the positioned parse of 1 MiB alone seconds), so it
        // is done off the gateway's thread and the rest are only counted. A start, and the CLI, report all.
        const limit = options.limit ?? (reload ? MAX_RELOAD_ISSUES : undefined);
        if (limit !== undefined) throw await this.positionIssues(loaded, text, issues, limit, options.pasted ? undefined : env);
        throw new ConfigLoadError(positionRedacted(loaded.source, issues, loaded.secrets, loaded.value));
      }
      throw err;
    } finally {
      if (pasted) {
        this.pastedHidden.delete(pasted);
        this.rescrub();
      }
    }
  }

  /** `snapshot`'s config with its secrets redacted. */
  redactedConfig(snapshot: Snapshot): unknown {
    return redactConfig(snapshot.config, this.secrets.get(snapshot));
  }
}
