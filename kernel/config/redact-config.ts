import { looksLikeCredential, scrubCelLiterals, secretCelLiterals } from './cel-literals.ts';
import { CREDENTIAL_PARAM, isSecretKeyName, isSensitiveName, REDACTED } from './secret-marks.ts';
import type { SecretMark, SecretMarks } from './secret-marks.ts';

type Key = string | number;

/**
 * A deep copy of a loaded config with its secrets replaced (ADR 0017): values a schema marks `x-secret`, values
 * of sensitive headers in header maps, secret literals of CEL expressions, and every scalar that came from
 * `${VAR}`, shown as written (`Bearer ${TOKEN}`). `hidden`, when given, receives every original string hidden,
 * so the process log can scrub them too.
 */
export function redactConfig(value: unknown, marks: SecretMarks | undefined, hidden?: Set<string>): unknown {
  return redactWalk(value, marks, hidden, true);
}

/** Only fill `hidden` with the config's secret strings, without building the redacted copy. */
export function collectSecrets(value: unknown, marks: SecretMarks | undefined, hidden: Set<string>): void {
  redactWalk(value, marks, hidden, false);
}

/** `url` with each credential query parameter's value REDACTED; `hidden` gets those that look like credentials. */
function queryRedacted(url: string, hidden: Set<string> | undefined): string {
  return url.replace(CREDENTIAL_PARAM, (_all, sep: string, name: string, value: string) => {
    if (looksLikeCredential(value)) hidden?.add(value);
    return `${sep}${name}=${REDACTED}`;
  });
}

function redactWalk(value: unknown, marks: SecretMarks | undefined, hidden: Set<string> | undefined, copy: boolean): unknown {
  const hideAll = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(hideAll);
    if (typeof v === 'object' && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = hideAll(x);
      return out;
    }
    if (v === null || v === undefined || typeof v === 'boolean') return v;
    hidden?.add(String(v));
    return REDACTED;
  };

  /** How a container's children are read: a header map's keys, a header list's items, a header item's `value`. */
  interface Context {
    readonly headerMap?: boolean;
    readonly headerList?: boolean;
    readonly headerItem?: boolean;
  }

  const child = (parent: object, key: Key, v: unknown, ctx: Context): unknown => {
    const mark = marks?.at(parent, key);
    const secret =
      mark?.secret === true ||
      (ctx.headerMap === true && isSensitiveName(String(key))) ||
      (ctx.headerItem === true && key === 'value' && isSensitiveName(String((parent as Record<string, unknown>).name ?? ''))) ||
      (typeof v === 'string' && typeof key === 'string' && isSecretKeyName(key));
    if (secret) return hideAll(v);
    const template = mark?.template ?? (typeof v === 'string' ? marks?.envTemplate(v) : undefined);
    if (template !== undefined) {
      // An expanded value goes to the log scrubber only when it looks like a credential (not a host or port).
      if (typeof v === 'string' && looksLikeCredential(v)) hidden?.add(v);
      return mark?.cel ? scrubCelLiterals(template) : template;
    }
    if (typeof v === 'string' && mark?.cel) {
      for (const l of secretCelLiterals(v)) hidden?.add(l);
      return scrubCelLiterals(v);
    }
    // A URL's credential query parameters (`?access_token=`, `&api_key=`), hidden as the access log hides them.
    if (typeof v === 'string' && v.includes('?') && v.includes('://')) return queryRedacted(v, hidden);
    return walk(v, mark, ctx.headerList === true);
  };

  const walk = (v: unknown, mark: SecretMark | undefined, headerItem: boolean): unknown => {
    if (Array.isArray(v)) {
      const ctx: Context = { headerList: mark?.headers === true };
      if (!copy) {
        for (let i = 0; i < v.length; i++) child(v, i, v[i], ctx);
        return v;
      }
      return v.map((x, i) => child(v, i, x, ctx));
    }
    if (typeof v !== 'object' || v === null) return v;
    const ctx: Context = { headerMap: mark?.headers === true, headerItem };
    if (!copy) {
      for (const k of Object.keys(v)) child(v, k, (v as Record<string, unknown>)[k], ctx);
      return v;
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = child(v, k, x, ctx);
    return out;
  };

  return walk(value, undefined, false);
}
