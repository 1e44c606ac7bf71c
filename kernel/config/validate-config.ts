import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { ErrorCode } from '../sdk/index.ts';
import type { ConfigIssue, JsonSchema } from '../sdk/index.ts';
import { didYouMean } from './did-you-mean.ts';

const SLOT_NOUN: Record<string, string> = {
  routePolicies: 'policy',
  backendPolicies: 'backend policy',
  mcpTargetPolicies: 'MCP target policy',
  backend: 'backend kind',
  mcpTransport: 'MCP transport',
  llmProvider: 'LLM provider',
  guard: 'guard type',
  backendAuth: 'backendAuth variant',
};

interface ExactlyOneOfError {
  keyword: 'exactlyOneOf';
  instancePath: string;
  schemaPath: string;
  params: { present: string[]; allowed: string[] };
  message: string;
}

/** Compiles the assembled schema once and turns ajv's errors into positioned, readable config issues. */
export class ConfigValidator {
  private readonly validateFn: ValidateFunction;
  /** First-party keys this distribution left out: a config using one hears "not installed", not "unknown". */
  private readonly notInstalled: ReadonlySet<string>;

  constructor(schema: JsonSchema, knownKeys: Iterable<string> = []) {
    const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true });
    ajv.addVocabulary(['x-hint', 'x-slot-filter', 'x-switchyard-slot', 'x-secret']);
    ajv.addFormat('regex', (text: string) => {
      try {
        new RegExp(text, 'u');
        return true;
      } catch {
        return false;
      }
    });
    ajv.addKeyword({
      keyword: 'exactlyOneOf',
      type: 'object',
      schemaType: 'array',
      errors: true,
      validate: function exactlyOneOf(allowed: string[], data: Record<string, unknown>, _parent?: unknown, ctx?: { instancePath: string }) {
        // In the order the file has them, so the error points at the later of two conflicting keys.
        const present = Object.keys(data).filter((k) => allowed.includes(k) && data[k] !== undefined);
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
    this.validateFn = ajv.compile(schema);
    // A known key that is installed (but misplaced, say a policy outside `policies`) is not "not installed".
    const installed = new Set<string>();
    for (const def of Object.values((schema.$defs ?? {}) as Record<string, Record<string, unknown>>)) {
      if (def['x-switchyard-slot'] !== undefined) for (const k of Object.keys((def.properties as object | undefined) ?? {})) installed.add(k);
    }
    this.notInstalled = new Set([...knownKeys].filter((k) => !installed.has(k)));
  }

  validate(config: unknown): ConfigIssue[] {
    if (this.validateFn(config)) return [];
    return this.translate((this.validateFn.errors ?? []) as ErrorObject[]);
  }

  private translate(errors: readonly ErrorObject[]): ConfigIssue[] {
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
    for (const e of errors) {
      if (e.keyword === 'exactlyOneOf' && unknownKeyParents.has(e.instancePath)) continue;
      if (e.keyword === 'required' && misspelled.has(`${e.instancePath}|${(e.params as { missingProperty: string }).missingProperty}`)) continue;
      if (e.keyword === 'if' || e.keyword === 'anyOf' || e.keyword === 'oneOf') {
        if (errors.some((o) => o !== e && o.instancePath.startsWith(e.instancePath) && o.schemaPath.startsWith(e.schemaPath.replace(/\/[^/]+$/, '')))) continue;
      }
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
    return didYouMean(key, Object.keys((parent.properties as object | undefined) ?? {}));
  }

  private translateOne(e: ErrorObject): ConfigIssue {
    const path = pointerToPath(e.instancePath);
    const parent = (e.parentSchema ?? {}) as Record<string, unknown>;
    switch (e.keyword) {
      case 'additionalProperties': {
        const key = (e.params as { additionalProperty: string }).additionalProperty;
        const allowed = Object.keys((parent.properties as object | undefined) ?? {});
        const slot = parent['x-switchyard-slot'] as string | undefined;
        const noun = slot ? (SLOT_NOUN[slot] ?? `\`${slot}\` entry`) : 'key';
        if (this.notInstalled.has(key)) {
          return { code: ErrorCode.configNotInstalled, path: [...path, key], message: `\`${key}\` is not installed in this distribution`, atKey: true };
        }
        const guess = this.guessKey(e);
        let message = `unknown ${noun} \`${key}\``;
        if (guess) message += `; did you mean \`${guess}\`?`;
        else message += allowed.length ? `; expected one of: ${allowed.map((k) => `\`${k}\``).join(', ')}` : '';
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
        return { code: ErrorCode.configSchema, path, message: `must be ${article(expected)}, got ${describeValue(e.data)}` };
      }
      case 'enum': {
        const allowed = (e.params as { allowedValues: unknown[] }).allowedValues;
        const guess = typeof e.data === 'string' ? didYouMean(e.data, allowed.map(String)) : undefined;
        return {
          code: ErrorCode.configSchema,
          path,
          message: `must be one of ${allowed.map((v) => `\`${String(v)}\``).join(', ')}, got ${describeValue(e.data)}${guess ? `; did you mean \`${guess}\`?` : ''}`,
        };
      }
      case 'pattern': {
        const hint = parent['x-hint'] as string | undefined;
        return { code: ErrorCode.configSchema, path, message: `must be ${hint ?? `a string matching ${String((e.params as { pattern: string }).pattern)}`}, got ${describeValue(e.data)}` };
      }
      case 'format':
        return {
          code: ErrorCode.configSchema,
          path,
          message:
            (e.params as { format: string }).format === 'regex'
              ? `is not a valid regular expression: ${describeValue(e.data)}`
              : `must be a valid ${(e.params as { format: string }).format}`,
        };
      case 'minimum':
      case 'maximum':
      case 'exclusiveMinimum':
      case 'exclusiveMaximum': {
        const limit = (e.params as { limit: number }).limit;
        const word = { minimum: 'at least', maximum: 'at most', exclusiveMinimum: 'greater than', exclusiveMaximum: 'less than' }[e.keyword];
        return { code: ErrorCode.configSchema, path, message: `must be ${word} ${limit}, got ${describeValue(e.data)}` };
      }
      default:
        return { code: ErrorCode.configSchema, path, message: e.message ?? `is invalid (${e.keyword})` };
    }
  }
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
