/**
 * Which config values are secret (ADR 0017). Three sources, all data: a schema's `x-secret` keyword (recorded by
 * the validator while it validates), `${VAR}` expansion (recorded per scalar), and header names. `/config_dump`,
 * config error messages and code frames, and the process log all read the same marks.
 */

/**
 * What a schema's `x-secret` says about the value it applies to: `true`, the value is secret (every scalar in it,
 * for an object or array); `headers`, a header map (or list of `{name, value}`) whose values are secret when the
 * header name is sensitive; `cel`, a CEL expression whose string literals are hidden when they may be credentials.
 */
export type SecretKind = true | 'headers' | 'cel';

/** Shown in place of a secret. */
export const REDACTED = '<redacted>';

const SENSITIVE_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key', 'api-key', 'x-auth-token']);
const SENSITIVE_PART = /token|secret|key|passw/i;

/** A header (or query parameter, or CEL field) name whose value is a credential. */
export function isSensitiveName(name: string): boolean {
  return SENSITIVE_HEADERS.has(name.toLowerCase()) || SENSITIVE_PART.test(name);
}

/** Names of query parameters that carry credentials (`access_token`, `api_key`, `sig`, OAuth `code`, ...). */
const CREDENTIAL_NAME = '[^=&#]*(?:token|secret|key|passw|auth|credential|signature|session|jwt)[^=&#]*|sig|code|sid';
/** Such parameters in a query string (ADR 0017): the access log and `/config_dump` show them as REDACTED. */
export const CREDENTIAL_PARAM = new RegExp(`([?&])(${CREDENTIAL_NAME})=([^&#]*)`, 'gi');
/** A query parameter name of that kind. */
export const CREDENTIAL_KEY = new RegExp(`^(?:${CREDENTIAL_NAME})$`, 'i');

const FALLBACK_KEY = /passw|secret|token$/i;

/**
 * A config key whose string value is hidden even when no schema marks it: defence in depth for third-party
 * plugins that forgot `x-secret` (`password`, `clientSecret`, `sessionToken`, ...).
 */
export function isSecretKeyName(key: string): boolean {
  return FALLBACK_KEY.test(key);
}

/** What is known about one value: the schema kinds that apply and, for a `${VAR}` scalar, its source text. */
export interface SecretMark {
  secret?: boolean;
  headers?: boolean;
  cel?: boolean;
  /** The scalar as written, references without their defaults (`Bearer ${TOKEN}`): shown instead of the value. */
  template?: string;
}

type Key = string | number;

/** JSON pointer of a config path, as ajv writes `instancePath`. */
export function toPointer(path: readonly Key[]): string {
  return path.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

function fromPointer(pointer: string): string[] {
  return pointer ? pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')) : [];
}

/** The secret marks of one config load. */
export class SecretMarks {
  /** By JSON pointer as written (messages and code frames speak the user's paths). */
  readonly byPointer = new Map<string, SecretMark>();
  /** By parent object and key (the dump walks the config after alias keys were renamed in place). */
  private readonly byParent = new WeakMap<object, Map<Key, SecretMark>>();
  /** Values `${VAR}` references were replaced with. */
  readonly envValues = new Set<string>();
  /**
   * Expanded scalars (6+ characters) by value, with their source text: a copy that YAML merge keys (`<<: *a`)
   * made elsewhere has no path of its own, and is recognised by its value.
   */
  private readonly envScalars = new Map<string, string>();

  private pointerMark(pointer: string): SecretMark {
    let mark = this.byPointer.get(pointer);
    if (!mark) this.byPointer.set(pointer, (mark = {}));
    return mark;
  }

  private parentMark(parent: object, key: Key): SecretMark {
    let keys = this.byParent.get(parent);
    if (!keys) this.byParent.set(parent, (keys = new Map()));
    let mark = keys.get(key);
    if (!mark) keys.set(key, (mark = {}));
    return mark;
  }

  /** Called by the validator's `x-secret` keyword for the value at `pointer`, child `key` of `parent`. */
  markSchema(kind: SecretKind, pointer: string, parent: object | undefined, key: Key | undefined): void {
    const apply = (m: SecretMark): void => {
      if (kind === true) m.secret = true;
      else if (kind === 'headers') m.headers = true;
      else m.cel = true;
    };
    apply(this.pointerMark(pointer));
    if (parent !== undefined && key !== undefined) apply(this.parentMark(parent, key));
  }

  /** Called by `${VAR}` expansion for a scalar at `path`, with its source text and the substituted values. */
  markEnv(path: readonly Key[], template: string, values: readonly string[], expanded: string): void {
    this.pointerMark(toPointer(path)).template = template;
    for (const v of values) if (v) this.envValues.add(v);
    if (expanded.length >= 6) this.envScalars.set(expanded, template);
  }

  /** The source text of a string that some `${VAR}` scalar expanded to, if any. */
  envTemplate(value: string): string | undefined {
    return this.envScalars.get(value);
  }

  /** After the document became plain objects: attach the `${VAR}` marks to their parent objects. */
  bindEnv(root: unknown): void {
    for (const [pointer, mark] of this.byPointer) {
      if (mark.template === undefined) continue;
      const path = fromPointer(pointer);
      let parent: unknown = root;
      for (let i = 0; i < path.length - 1 && parent !== undefined; i++) parent = (parent as Record<string, unknown> | undefined)?.[path[i]!];
      if (typeof parent !== 'object' || parent === null || path.length === 0) continue;
      const key = Array.isArray(parent) ? Number(path[path.length - 1]) : path[path.length - 1]!;
      this.parentMark(parent, key).template = mark.template;
    }
  }

  /** The mark of `parent[key]`, if any. */
  at(parent: object, key: Key): SecretMark | undefined {
    return this.byParent.get(parent)?.get(key);
  }

  /**
   * Whether the value at `pointer` must not be echoed in a message: `true` when it is secret, inside a secret or
   * a sensitive header's value; its source text (`${PORT}`) when it came from the environment.
   */
  hides(pointer: string): true | string | undefined {
    const path = fromPointer(pointer);
    for (let i = path.length; i >= 0; i--) {
      const mark = this.byPointer.get(toPointer(path.slice(0, i)));
      if (!mark) continue;
      if (mark.secret) return true;
      if (mark.headers && i < path.length && isSensitiveName(path[i]!)) return true;
    }
    if (path.length > 0 && isSecretKeyName(path[path.length - 1]!)) return true;
    return this.byPointer.get(pointer)?.template;
  }
}
