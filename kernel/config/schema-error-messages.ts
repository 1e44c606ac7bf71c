import type { ErrorObject } from 'ajv';
import { ErrorCode, userRegexProblem } from '../sdk/index.ts';
import type { ConfigIssue } from '../sdk/index.ts';
import { didYouMean } from './did-you-mean.ts';
import { REDACTED } from './secret-marks.ts';
import type { SecretMarks } from './secret-marks.ts';

/** Where a first-party key a trimmed distribution left out comes from (docs/adr/0012): the user's next step. */
const NOT_INSTALLED_HINT = "it comes with the full distribution (the `switchyard` package), or add its plugin to a trimmed build's preset (`npm run build:dist -- --preset NAME`)";

interface ExactlyOneOfError {
  keyword: 'exactlyOneOf';
  instancePath: string;
  schemaPath: string;
  params: { present: string[]; allowed: string[] };
  message: string;
}

/** What the wording of one validation's errors depends on. */
export interface ErrorWording {
  /** First-party keys this distribution left out: a config using one hears "not installed", not "unknown". */
  readonly notInstalled: ReadonlySet<string>;
  /** How messages name an entry of each slot (`ConfigValidatorOptions.slotNouns`). */
  readonly slotNouns: Readonly<Record<string, string>>;
  /** Where the validation recorded secrets; values there are not echoed in messages. */
  readonly marks: SecretMarks | undefined;
}

/** ajv's errors as positioned, readable config issues: one per problem, a typo's fix instead of its echoes. */
export function translateErrors(errors: readonly ErrorObject[], wording: ErrorWording): ConfigIssue[] {
  return new ErrorTranslator(wording).translate(errors);
}

class ErrorTranslator {
  private readonly notInstalled: ReadonlySet<string>;
  private readonly slotNouns: Readonly<Record<string, string>>;
  private readonly marks: SecretMarks | undefined;

  constructor(wording: ErrorWording) {
    this.notInstalled = wording.notInstalled;
    this.slotNouns = wording.slotNouns;
    this.marks = wording.marks;
  }

  /** The offending value as a message shows it: never a secret or a value from the environment. */
  private shown(e: ErrorObject): string {
    const hidden = this.marks?.hides(e.instancePath);
    if (hidden === undefined) return describeValue(e.data);
    const kind = e.data === null ? 'null' : Array.isArray(e.data) ? 'an array' : typeof e.data === 'object' ? 'an object' : article(typeof e.data);
    return hidden === true ? `${kind} (${REDACTED})` : `${kind} (from \`${hidden}\`)`;
  }

  translate(errors: readonly ErrorObject[]): ConfigIssue[] {
    const issues: ConfigIssue[] = [];
    const unknownKeyParents = new Set<string>();
    // `listners:` both is an unknown key and leaves `listeners` missing; report only the typo and its fix.
    const misspelled = new Set<string>();
    for (const e of errors) {
      if (e.keyword !== 'additionalProperties') continue;
      unknownKeyParents.add(e.instancePath);
      const guess = this.guessKey(e);
      if (guess) misspelled.add(`${e.instancePath}|${guess}`);
    }
    const seen = new Set<string>();
    const byPath = sortedByPath(errors);
    for (const e of errors) {
      if (e.keyword === 'exactlyOneOf' && unknownKeyParents.has(e.instancePath)) continue;
      if (e.keyword === 'required' && misspelled.has(`${e.instancePath}|${(e.params as { missingProperty: string }).missingProperty}`)) continue;
      if ((e.keyword === 'if' || e.keyword === 'anyOf' || e.keyword === 'oneOf') && hasMoreSpecific(byPath, e)) continue;
      const issue = this.translateOne(e);
      const id = `${issue.path.join('/')}|${issue.message}`;
      if (seen.has(id)) continue;
      seen.add(id);
      issues.push(issue);
    }
    return issues;
  }

  /**
   * The installed key an unknown key was probably meant to be. A first-party key of a trimmed distribution is
   * not a typo: it gets "not installed", never a guess at a similar installed key.
   */
  private guessKey(e: ErrorObject): string | undefined {
    const key = (e.params as { additionalProperty: string }).additionalProperty;
    if (this.notInstalled.has(key)) return undefined;
    const parent = (e.parentSchema ?? {}) as Record<string, unknown>;
    // Once per key and schema: a paste repeating one typo on thousands of routes asks the same question each time.
    let known = this.guesses.get(parent);
    if (!known) this.guesses.set(parent, (known = new Map()));
    if (!known.has(key)) known.set(key, didYouMean(key, Object.keys((parent.properties as object | undefined) ?? {})));
    return known.get(key);
  }

  private readonly guesses = new WeakMap<object, Map<string, string | undefined>>();

  /** The left-out first-party key an unknown key was probably meant to be (once per key). */
  private guessLeftOut(key: string): string | undefined {
    if (!this.leftOutGuesses.has(key)) this.leftOutGuesses.set(key, didYouMean(key, [...this.notInstalled]));
    return this.leftOutGuesses.get(key);
  }

  private readonly leftOutGuesses = new Map<string, string | undefined>();

  private translateOne(e: ErrorObject): ConfigIssue {
    const path = pointerToPath(e.instancePath);
    const parent = (e.parentSchema ?? {}) as Record<string, unknown>;
    switch (e.keyword) {
      case 'additionalProperties': {
        const key = (e.params as { additionalProperty: string }).additionalProperty;
        const allowed = Object.keys((parent.properties as object | undefined) ?? {});
        const slot = parent['x-switchyard-slot'] as string | undefined;
        const noun = slot ? (this.slotNouns[slot] ?? `\`${slot}\` entry`) : 'key';
        if (this.notInstalled.has(key)) {
          return { code: ErrorCode.configNotInstalled, path: [...path, key], message: `\`${key}\` is not installed in this distribution; ${NOT_INSTALLED_HINT}`, atKey: true };
        }
        const guess = this.guessKey(e);
        let message = `unknown ${noun} \`${key}\``;
        if (guess) message += `; did you mean \`${guess}\`?`;
        else {
          // The key meant may be one this distribution left out: say so rather than list the installed ones.
          const left = this.notInstalled.size > 0 ? this.guessLeftOut(key) : undefined;
          if (left) message += `; did you mean \`${left}\`? It is not installed in this distribution; ${NOT_INSTALLED_HINT}`;
          else message += allowed.length ? `; expected one of: ${allowed.map((k) => `\`${k}\``).join(', ')}` : '';
        }
        return { code: ErrorCode.configUnknownKey, path: [...path, key], message, atKey: true };
      }
      case 'required': {
        const key = (e.params as { missingProperty: string }).missingProperty;
        return { code: ErrorCode.configSchema, path, message: `missing required key \`${key}\`` };
      }
      case 'exactlyOneOf': {
        const { present, allowed } = e.params as unknown as ExactlyOneOfError['params'];
        const list = allowed.map((k) => `\`${k}\``).join(', ');
        const message =
          present.length === 0
            ? `exactly one of ${list} is required`
            : `only one of ${list} may be set, found ${present.map((k) => `\`${k}\``).join(' and ')}`;
        return { code: ErrorCode.configSchema, path: present.length > 1 ? [...path, present[1]!] : path, atKey: present.length > 1, message };
      }
      case 'type': {
        const expected = (e.params as { type: string | string[] }).type;
        // YAML's .inf is a number the schema refuses: "must be a number, got number Infinity" read as a contradiction.
        if (typeof e.data === 'number' && !Number.isFinite(e.data)) {
          return { code: ErrorCode.configSchema, path, message: `must be a finite ${[expected].flat().join(' or ')}, got ${String(e.data)}` };
        }
        return { code: ErrorCode.configSchema, path, message: `must be ${article(expected)}, got ${this.shown(e)}` };
      }
      case 'enum': {
        const allowed = (e.params as { allowedValues: unknown[] }).allowedValues;
        const guess = typeof e.data === 'string' ? didYouMean(e.data, allowed.map(String)) : undefined;
        return {
          code: ErrorCode.configSchema,
          path,
          message: `must be one of ${allowed.map((v) => `\`${String(v)}\``).join(', ')}, got ${this.shown(e)}${guess ? `; did you mean \`${guess}\`?` : ''}`,
        };
      }
      case 'pattern': {
        const hint = parent['x-hint'] as string | undefined;
        return { code: ErrorCode.configSchema, path, message: `must be ${hint ?? `a string matching ${String((e.params as { pattern: string }).pattern)}`}, got ${this.shown(e)}` };
      }
      case 'format':
        return {
          code: ErrorCode.configSchema,
          path,
          message:
            (e.params as { format: string }).format === 'regex'
              ? `is not a valid regular expression: ${this.marks?.hides(e.instancePath) === undefined ? (userRegexProblem(String(e.data), { whole: true }) ?? describeValue(e.data)).replace(/^invalid regular expression /, '') : this.shown(e)}`
              : `must be a valid ${(e.params as { format: string }).format}`,
        };
      case 'maxDurationMs':
        return { code: ErrorCode.configSchema, path, message: `must be at most \`${(e.schema as number) / 3_600_000}h\` (longer timers are not supported), got ${this.shown(e)}` };
      case 'minimum':
      case 'maximum':
      case 'exclusiveMinimum':
      case 'exclusiveMaximum': {
        const limit = (e.params as { limit: number }).limit;
        const word = { minimum: 'at least', maximum: 'at most', exclusiveMinimum: 'greater than', exclusiveMaximum: 'less than' }[e.keyword];
        return { code: ErrorCode.configSchema, path, message: `must be ${word} ${limit}, got ${this.shown(e)}` };
      }
      default:
        return { code: ErrorCode.configSchema, path, message: e.message ?? `is invalid (${e.keyword})` };
    }
  }
}

/** The errors ordered by `instancePath`, so those at or below one path are a contiguous run. */
function sortedByPath(errors: readonly ErrorObject[]): ErrorObject[] {
  return [...errors].sort((a, b) => (a.instancePath < b.instancePath ? -1 : a.instancePath > b.instancePath ? 1 : 0));
}

/**
 * Whether another error at or below `e`'s place comes from inside `e`'s combinator (`if`, `anyOf`, `oneOf`): then
 * that error says what is wrong and `e` adds nothing. Searched in the run of `byPath` starting with `e`'s path
 * (comparing against every error made a paste of thousands of problems quadratic).
 */
function hasMoreSpecific(byPath: readonly ErrorObject[], e: ErrorObject): boolean {
  const base = e.schemaPath.replace(/\/[^/]+$/, '');
  let lo = 0;
  let hi = byPath.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (byPath[mid]!.instancePath < e.instancePath) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < byPath.length && byPath[i]!.instancePath.startsWith(e.instancePath); i++) {
    const o = byPath[i]!;
    if (o !== e && o.schemaPath.startsWith(base)) return true;
  }
  return false;
}

function pointerToPath(pointer: string): (string | number)[] {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function article(type: string | string[]): string {
  const list = Array.isArray(type) ? type : [type];
  return list.map((t) => (/^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`)).join(' or ');
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value)}`;
  return `${typeof value} ${String(value)}`;
}
