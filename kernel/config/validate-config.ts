import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { parseDuration, userRegexProblem } from '../sdk/index.ts';
import type { ConfigIssue, JsonSchema } from '../sdk/index.ts';
import { ajvLib } from './ajv-lib.ts';
import type { SecretKind, SecretMarks } from './secret-marks.ts';
import type { ValidatorCodeCache } from './validator-cache.ts';
import type { ValidatorRuntime } from './validator-code.ts';
import { translateErrors } from './schema-error-messages.ts';
import { isPrunable, reachableDefs, usedKeys } from './schema-pruning.ts';

/** Distinct plugin-key sets whose validators are kept (a reload that uses the same plugins reuses one). */
const MAX_VALIDATORS = 8;
/** How long after a start's validation the code of a new precompiled validator is generated and written. */
const STORE_DELAY_MS = 500;

export interface ConfigValidatorOptions {
  /**
   * Compile only the schemas of the plugins a config names (default true). False compiles the whole schema for
   * every config; the results are the same (a test checks it), only slower to build.
   */
  readonly prune?: boolean;
  /**
   * How messages name an entry of each slot (`guard` -> `guard type`: "unknown guard type `x`"), from the slots'
   * manifests (`PluginRegistry.slotNouns()`). A slot without one reads "unknown `<slot>` entry".
   */
  readonly slotNouns?: Readonly<Record<string, string>>;
  /**
   * Check the whole schema against the JSON Schema meta-schema (default true). Compiling the meta-schema costs about
   * 60 ms of CPU at start; the gateway skips it when every plugin is first-party, whose schemas the tests check
   * (validator-pruning.test.ts). Strict mode still applies to what is compiled.
   */
  readonly checkSchema?: boolean;
  /**
   * Precompiled validators (validator-cache.ts, ADR 0042): a config whose pruned schema was seen by an earlier start
   * is checked by that start's generated code, without loading ajv; only an invalid one then loads ajv, for the
   * messages. A schema seen for the first time is validated by ajv and its code is written shortly after.
   */
  readonly codeCache?: ValidatorCodeCache;
}

/** Whether exactly one of `allowed` is set on `data` (the `exactlyOneOf` keyword). */
function presentOf(allowed: readonly string[], data: Record<string, unknown>): string[] {
  // In the order the file has them, so the error points at the later of two conflicting keys.
  return Object.keys(data).filter((k) => allowed.includes(k) && data[k] !== undefined);
}

/**
 * Validates configs against the assembled schema and turns ajv's errors into positioned, readable config issues
 * (schema-error-messages.ts).
 *
 * The schema is compiled on first use, for the plugins the config names: a plugin's schema is only reachable
 * through its key (or an alias) in a slot, and ajv applies it only to a property of that name, so the schemas of
 * plugins whose keys appear nowhere in the config never run and are compiled as `{}` (schema-pruning.ts). The result of a validation
 * is the same as with the whole schema; the startup cost is that of the plugins in use (docs/perf.md). The whole
 * schema is checked against the JSON Schema meta-schema at construction (unless `checkSchema` is false), and
 * `compileAll` compiles all of it.
 */
export class ConfigValidator {
  private ajvInstance: Ajv2020 | undefined;
  private readonly schema: JsonSchema;
  private readonly defs: Readonly<Record<string, unknown>>;
  /** Property names of the slot definitions: plugin keys and aliases, the only places a schema is left out. */
  private readonly slotKeys: ReadonlySet<string>;
  /** False when pruning is off or the schema uses a reference form it does not follow: then it is compiled whole. */
  private readonly prunable: boolean;
  private readonly validators = new Map<string, { readonly schema: JsonSchema; readonly fn: ValidateFunction }>();
  /** First-party keys this distribution left out: a config using one hears "not installed", not "unknown". */
  private readonly notInstalled: ReadonlySet<string>;
  private readonly slotNouns: Readonly<Record<string, string>>;
  /** Where the running validation records secrets; values there are not echoed in messages. */
  private marks: SecretMarks | undefined;
  private readonly codeCache: ValidatorCodeCache | undefined;
  /** Precompiled validators by plugin-key set; null when there is none (yet) for that set. */
  private readonly precompiled = new Map<string, ((data: unknown) => boolean) | null>();
  /** What precompiled code calls back into. */
  private readonly runtime: ValidatorRuntime = {
    formats: { regex: (text) => userRegexProblem(text, { whole: true }) === undefined },
    mark: (kind, instancePath, parentData, parentDataProperty) => this.marks?.markSchema(kind, instancePath, parentData, parentDataProperty),
    parseDuration,
    exactlyOneOf: (allowed, data) => presentOf(allowed, data).length === 1,
  };

  constructor(schema: JsonSchema, knownKeys: Iterable<string> = [], options: ConfigValidatorOptions = {}) {
    this.codeCache = options.codeCache;
    this.checkSchema = options.checkSchema !== false;
    this.schema = schema;
    this.slotNouns = options.slotNouns ?? {};
    this.defs = (schema.$defs ?? {}) as Record<string, unknown>;
    const slotKeys = new Set<string>();
    for (const def of Object.values(this.defs) as Record<string, unknown>[]) {
      if (def['x-switchyard-slot'] !== undefined) for (const k of Object.keys((def.properties as object | undefined) ?? {})) slotKeys.add(k);
    }
    this.slotKeys = slotKeys;
    this.prunable = options.prune !== false && isPrunable(schema, this.defs);
    // A known key that is installed (but misplaced, say a policy outside `policies`) is not "not installed"; nor is
    // a `config:` setting a plugin of this distribution contributes (`session`, `defaultTimeouts.llmBackendRequestTimeout`).
    const installed = new Set(slotKeys);
    const staticProps = ((this.defs.staticConfig as { properties?: Record<string, { properties?: object }> } | undefined)?.properties ?? {});
    for (const [k, v] of Object.entries(staticProps)) {
      installed.add(k);
      for (const nested of Object.keys(v?.properties ?? {})) installed.add(nested);
    }
    this.notInstalled = new Set([...knownKeys].filter((k) => !installed.has(k)));
    // The whole schema, every plugin's part included, must be a valid JSON Schema (throws "schema is invalid: ...").
    if (this.checkSchema) this.ajv.validateSchema(schema, true);
  }

  private readonly checkSchema: boolean;

  /** ajv with the gateway's keywords, made on first need (a start with a precompiled validator never needs it). */
  private get ajv(): Ajv2020 {
    if (this.ajvInstance) return this.ajvInstance;
    const { Ajv2020 } = ajvLib();
    const checkSchema = this.checkSchema;
    // `optimize: false` skips ajv's code-simplification pass: the generated checks and errors are the same, the
    // compile is about a third faster.
    const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true, validateSchema: checkSchema, code: { optimize: false } });
    ajv.addVocabulary(['x-hint', 'x-slot-filter', 'x-switchyard-slot']);
    // `x-secret` validates nothing: it records where secrets are while the config is validated (ADR 0017).
    ajv.addKeyword({
      keyword: 'x-secret',
      schemaType: ['boolean', 'string'],
      metaSchema: { enum: [true, 'headers', 'cel'] },
      errors: false,
      validate: (kind: SecretKind, _data: unknown, _schema?: unknown, cxt?: { instancePath: string; parentData?: object; parentDataProperty?: string | number }) => {
        this.marks?.markSchema(kind, cxt?.instancePath ?? '', cxt?.parentData, cxt?.parentDataProperty);
        return true;
      },
    });
    // Route-match regexes: compiled as they will run (docs/adr/0021), so an unsupported construct is a positioned error.
    ajv.addFormat('regex', (text: string) => userRegexProblem(text, { whole: true }) === undefined);
    // The longest duration timers can hold; a value the pattern refuses is left to the pattern's message.
    ajv.addKeyword({
      keyword: 'maxDurationMs',
      type: 'string',
      schemaType: 'number',
      error: { message: 'too long' },
      validate: (max: number, text: string) => (parseDuration(text) ?? 0) <= max,
    });
    ajv.addKeyword({
      keyword: 'exactlyOneOf',
      type: 'object',
      schemaType: 'array',
      errors: true,
      validate: function exactlyOneOf(allowed: string[], data: Record<string, unknown>, _parent?: unknown, ctx?: { instancePath: string }) {
        const present = presentOf(allowed, data);
        if (present.length === 1) return true;
        (exactlyOneOf as unknown as { errors: unknown[] }).errors = [
          {
            keyword: 'exactlyOneOf',
            instancePath: ctx?.instancePath ?? '',
            params: { present, allowed },
            message: present.length === 0 ? 'missing' : 'too many',
          },
        ];
        return false;
      },
    });
    return (this.ajvInstance = ajv);
  }

  /** Compile the whole schema, every plugin's part included (strict mode reports unknown keywords and the like). */
  compileAll(): void {
    this.ajv.compile(this.withoutId(this.defs));
  }

  /**
   * Why the definition `name` (a plugin's part of the schema) cannot be used, or undefined: what the JSON Schema
   * meta-schema refuses in it, else what compiling it refuses (an unknown keyword in strict mode, a reference to a
   * definition that is not there). Paths and references are given as the plugin wrote them (ADR 0144).
   */
  definitionProblem(name: string): string | undefined {
    const ajv = this.ajv;
    const local = (text: string): string => text.replaceAll(`#/$defs/${name}.`, '#/$defs/');
    if (!ajv.validateSchema(this.defs[name] as object)) {
      const seen = new Set((ajv.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`));
      return local([...seen].slice(0, 3).join('; '));
    }
    const probe = { ...this.withoutId(this.defs), $ref: `#/$defs/${name}` };
    try {
      ajv.compile(probe);
    } catch (err) {
      return local((err as Error).message);
    } finally {
      ajv.removeSchema(probe);
    }
    return undefined;
  }

  /** The plugin keys this config uses (all of them when the schema is not pruned), and their set's id. */
  private usedBy(config: unknown, tree: boolean): { used: ReadonlySet<string>; id: string } {
    const used = this.prunable ? usedKeys(config, this.slotKeys, tree) : this.slotKeys;
    return { used, id: [...used].sort().join(',') };
  }

  /**
   * The precompiled validator for these keys, or null. On a miss the code is generated and written after the
   * current work (a timer that does not hold the process open), so a start is not slowed by writing it.
   */
  private precompiledFor(used: ReadonlySet<string>, id: string): ((data: unknown) => boolean) | null {
    const known = this.precompiled.get(id);
    if (known !== undefined) return known;
    const cache = this.codeCache!;
    const schema = this.withoutId(this.prunable ? reachableDefs(this.schema, this.defs, used) : this.defs);
    const fn = cache.load(schema, this.runtime) ?? null;
    // Bounded like the ajv validators: a long run of reloads with ever other plugin sets keeps the latest few.
    if (this.precompiled.size >= MAX_VALIDATORS) this.precompiled.delete(this.precompiled.keys().next().value!);
    this.precompiled.set(id, fn);
    if (fn === null) {
      setTimeout(() => {
        if (cache.store(schema)) this.precompiled.delete(id);
      }, STORE_DELAY_MS).unref();
    }
    return fn;
  }

  /** Generate and store now the precompiled validator for the plugins `config` uses (tests; a cache is required). */
  precompile(config: unknown): boolean {
    const { used, id } = this.usedBy(config, false);
    this.precompiled.delete(id);
    return this.codeCache!.store(this.withoutId(this.prunable ? reachableDefs(this.schema, this.defs, used) : this.defs));
  }

  /** The validator for the plugin keys this config uses, compiled on first need. */
  private validatorFor(used: ReadonlySet<string>, id: string): ValidateFunction {
    const known = this.validators.get(id);
    if (known) return known.fn;
    const schema = this.withoutId(this.prunable ? reachableDefs(this.schema, this.defs, used) : this.defs);
    const fn = this.ajv.compile(schema);
    if (this.validators.size >= MAX_VALIDATORS) {
      const [oldest, entry] = this.validators.entries().next().value!;
      this.validators.delete(oldest);
      this.ajv.removeSchema(entry.schema);
    }
    this.validators.set(id, { schema, fn });
    return fn;
  }

  /** The schema with these definitions and without `$id`, so several variants can live in one ajv instance. */
  private withoutId(defs: Readonly<Record<string, unknown>>): JsonSchema {
    const { $id: _id, ...rest } = this.schema;
    return { ...rest, $defs: defs } as JsonSchema;
  }

  /**
   * Whether the precompiled code finds `config` valid, recording the secrets' marks as {@link validate} does; false
   * when it finds a problem (only ajv words it: {@link validate}) or there is no code for these plugins yet. Cheap
   * either way: the code stops at the first problem.
   */
  passes(config: unknown, marks?: SecretMarks, tree = false): boolean {
    if (!this.codeCache || typeof config !== 'object' || config === null || Array.isArray(config)) return false;
    const { used, id } = this.usedBy(config, tree);
    return this.passesWith(used, id, config, marks);
  }

  private passesWith(used: ReadonlySet<string>, id: string, config: unknown, marks: SecretMarks | undefined): boolean {
    if (!this.codeCache) return false;
    this.marks = marks;
    try {
      return this.precompiledFor(used, id)?.(config) === true;
    } catch {
      // Generated code that throws is not trusted again: ajv decides.
      this.precompiled.set(id, null);
      return false;
    } finally {
      this.marks = undefined;
    }
  }

  /**
   * Validate; `marks`, when given, receives where the schema says secrets are (`x-secret`). `tree`: no object
   * of `config` is reachable twice (no YAML aliases), so the walks need not remember what they saw.
   */
  validate(config: unknown, marks?: SecretMarks, tree = false): ConfigIssue[] {
    const { used, id } = this.usedBy(config, tree);
    // Valid per the precompiled code: done. Invalid: ajv below words every error (the marks are recorded again).
    if (this.passesWith(used, id, config, marks)) return [];
    const validateFn = this.validatorFor(used, id);
    this.marks = marks;
    try {
      if (validateFn(config)) return [];
      return translateErrors((validateFn.errors ?? []) as ErrorObject[], { notInstalled: this.notInstalled, slotNouns: this.slotNouns, marks });
    } finally {
      this.marks = undefined;
    }
  }
}
