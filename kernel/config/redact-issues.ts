import type { Node } from 'yaml';
import { ErrorCode } from '../sdk/index.ts';
import type { ConfigIssue } from '../sdk/index.ts';
import { secretCelLiterals } from './cel-literals.ts';
import type { ConfigSource, SourcedIssue } from './config-source.ts';
import { positionIssue } from './format-issues.ts';
import type { PositionedIssue } from './format-issues.ts';
import { redactConfig } from './redact-config.ts';
import { compileScrubber } from './scrubber.ts';
import { isSecretKeyName, isSensitiveName, REDACTED } from './secret-marks.ts';
import type { SecretMarks } from './secret-marks.ts';
import { yamlLib } from '../sdk/yaml-lib.ts';

type Range = [start: number, end: number, replacement: string];

/**
 * Position config issues without showing a secret (ADR 0017): code frames are cut from the file with every
 * secret value replaced (line numbers kept), and messages lose any secret or `${VAR}` value they quote.
 * `value` is the loaded config, when it got that far, to learn the secret strings to scrub.
 */
export function positionRedacted(
  source: ConfigSource,
  issues: readonly (ConfigIssue | SourcedIssue)[],
  marks: SecretMarks | undefined,
  value?: unknown,
): PositionedIssue[] {
  const unknown = issues.filter((i) => i.code === ErrorCode.configUnknownKey).map((i) => i.path);
  const text = marks && source.doc.errors.length === 0 ? redactSource(source, marks, unknown) : redactLines(source.text);
  const hidden = new Set<string>(marks?.envValues ?? []);
  if (value !== undefined) redactConfig(value, marks, hidden);
  const scrub = compileScrubber(hidden) ?? ((s: string) => s);
  const frames = { ...source, text };
  return issues.map((issue) => {
    const p = positionIssue(source, issue, frames);
    return { ...p, message: scrub(p.message), frame: scrub(p.frame) };
  });
}

/**
 * The config text with each secret value replaced by `<redacted>`, keeping every line where it was. Under an unknown
 * key (`unknown`: a typo such as `backendAuht`) no schema says what is secret, so every scalar whose key names a
 * credential (`key`, `token`, ...) is hidden, and the key's own value when its name does.
 */
function redactSource(source: ConfigSource, marks: SecretMarks, unknown: readonly (readonly (string | number)[])[]): string {
  const { isMap, isScalar, isSeq, visit } = yamlLib();
  const ranges: Range[] = [];
  // A secret map or list keeps its keys: each scalar in it is hidden, as `/config_dump` shows it.
  const hide = (node: unknown): void => {
    if (isMap(node)) for (const pair of node.items) hide(pair.value);
    else if (isSeq(node)) for (const item of node.items) hide(item);
    else {
      const range = (node as Node | null | undefined)?.range;
      if (range) ranges.push([range[0], range[1], REDACTED]);
    }
  };
  for (const [pointer, mark] of marks.byPointer) {
    const path = pointer ? pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')) : [];
    const node = source.doc.getIn(path, true) as Node | undefined;
    if (!node) continue;
    if (mark.secret) hide(node);
    else if (mark.headers && isMap(node)) {
      for (const pair of node.items) if (isScalar(pair.key) && isSensitiveName(String(pair.key.value))) hide(pair.value);
    } else if (mark.headers && isSeq(node)) {
      for (const item of node.items) if (isMap(item) && isSensitiveName(String(item.get('name') ?? ''))) hide(item.get('value', true));
    } else if (mark.cel && isScalar(node) && typeof node.value === 'string' && node.range) {
      const literals = secretCelLiterals(node.value);
      if (literals.length === 0) continue;
      let written = source.text.slice(node.range[0], node.range[1]);
      for (const l of literals) written = written.split(l).join(REDACTED);
      ranges.push([node.range[0], node.range[1], written]);
    }
  }
  visit(source.doc, {
    Pair(_key, pair) {
      if (isScalar(pair.key) && isSecretKeyName(String(pair.key.value)) && isScalar(pair.value)) hide(pair.value);
    },
  });
  for (const path of unknown) {
    const node = source.doc.getIn(path, true) as Node | undefined;
    if (!node) continue;
    const name = path.at(-1);
    if (typeof name === 'string' && isSensitiveName(name)) hide(node);
    else if (isMap(node) || isSeq(node)) {
      visit(node, {
        Pair(_key, pair) {
          if (isScalar(pair.key) && isSensitiveName(String(pair.key.value))) hide(pair.value);
        },
      });
    }
  }
  ranges.sort((a, b) => a[0] - b[0]);
  let out = '';
  let from = 0;
  for (const [start, end, replacement] of ranges) {
    if (start < from) continue;
    const lines = source.text.slice(start, end).split('\n').length - 1;
    out += source.text.slice(from, start) + replacement + '\n'.repeat(Math.max(0, lines - (replacement.split('\n').length - 1)));
    from = end;
  }
  return out + source.text.slice(from);
}

const KEY_VALUE = /^(\s*(?:-\s+)?["']?)([^"':#]+?)(["']?\s*:\s+)(\S.*)$/;

/** Without a parsed document (a YAML syntax error): hide the value of every line whose key names a secret. */
function redactLines(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      const m = KEY_VALUE.exec(line);
      return m && (isSensitiveName(m[2]!) || isSecretKeyName(m[2]!)) && !m[4]!.startsWith('{') && !m[4]!.startsWith('[') ? `${m[1]}${m[2]}${m[3]}${REDACTED}` : line;
    })
    .join('\n');
}
