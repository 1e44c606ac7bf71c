import type { Document, LineCounter, Node } from 'yaml';
import type { ConfigIssue } from '../sdk/index.ts';
import { yamlLib } from '../sdk/yaml-lib.ts';
import { maskReferences, unmaskDocument } from './env-placeholders.ts';

/** A config issue that may already know its exact offset in the file (syntax and env errors). */
export interface SourcedIssue extends ConfigIssue {
  readonly offset?: number;
}

/** A config file parsed with positions kept, so every problem can point at its line and column. */
export interface ConfigSource {
  readonly file: string;
  readonly text: string;
  readonly doc: Document.Parsed;
  readonly lines: LineCounter;
}

export interface Position {
  readonly line: number;
  readonly col: number;
}

/** Parse YAML (JSON is accepted too, as a subset) keeping node ranges. Syntax errors stay on `doc.errors`. */
export function parseConfigSource(file: string, text: string): ConfigSource {
  const { LineCounter, parseDocument } = yamlLib();
  const lines = new LineCounter();
  // `${VAR}` parses in flow style too, where `{` and `}` would end it (env-placeholders.ts).
  const masked = maskReferences(text);
  const doc = parseDocument(masked?.text ?? text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, merge: true, strict: true });
  if (masked) unmaskDocument(doc, masked.references);
  return { file, text, doc, lines };
}

/**
 * The source of a config that was parsed without positions (fast-parse.ts): the positioned parse runs the first
 * time `doc` or `lines` is read, that is only when an error must be positioned.
 */
export function lazyConfigSource(file: string, text: string): ConfigSource {
  let parsed: ConfigSource | undefined;
  const full = (): ConfigSource => (parsed ??= parseConfigSource(file, text));
  return {
    file,
    text,
    get doc() {
      return full().doc;
    },
    get lines() {
      return full().lines;
    },
  };
}

/**
 * Find the position of the value at `path` (or of its key, with `atKey`). When the path goes further than the
 * document (a missing required key), the deepest existing node is used.
 */
export function locate(source: ConfigSource, path: readonly (string | number)[], atKey = false, valueOffset?: number): Position {
  const { isMap, isPair, isScalar, isSeq } = yamlLib();
  let node: Node | null | undefined = source.doc.contents as Node | null;
  let offset = node?.range?.[0] ?? 0;
  for (let i = 0; i < path.length && node; i++) {
    const segment = path[i];
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      const key = pair.key as Node;
      if (last && atKey) {
        offset = key.range?.[0] ?? offset;
        node = null;
        break;
      }
      node = pair.value as Node | null;
      offset = node?.range?.[0] ?? key.range?.[0] ?? offset;
    } else if (isSeq(node)) {
      const item = node.items[Number(segment)] as Node | undefined;
      if (!item) break;
      node = item;
      offset = item.range?.[0] ?? offset;
    } else {
      break;
    }
  }
  if (valueOffset !== undefined && node && isScalar(node) && typeof node.value === 'string' && node.range) {
    offset = offsetInScalar(source.text, node.range[0], node.range[1], node.value, valueOffset);
  }
  const { line, col } = source.lines.linePos(offset);
  return { line, col };
}

/**
 * The file offset of character `at` of a string scalar's value. The value's characters are matched in order
 * against the scalar's text, skipping what is not part of the value (quotes, a block header, indentation,
 * escapes): exact for plain, single-quoted and block scalars, close for double-quoted ones with escapes.
 */
function offsetInScalar(text: string, start: number, end: number, value: string, at: number): number {
  let i = start;
  if (text[i] === '|' || text[i] === '>') i = text.indexOf('\n', i) + 1 || end;
  else if (text[i] === "'" || text[i] === '"') i++;
  for (let j = 0; j < at && j < value.length; j++) {
    while (i < end && text[i] !== value[j]) i++;
    if (i >= end) return start;
    i++;
  }
  while (i < end && at < value.length && text[i] !== value[at]) i++;
  return i < end ? i : Math.min(i, end);
}

/** Widest slice of a line a code frame shows: a 1 MiB value is not echoed back (docs/security.md "Config limits"). */
const FRAME_WIDTH = 160;

/** The lines of the last text framed: a config with many issues is split once, not once per issue. */
let split: { text: string; lines: string[] } | undefined;

function linesOf(text: string): string[] {
  if (split?.text !== text) split = { text, lines: text.split('\n') };
  return split.lines;
}

/** `scheme://user:password@`: the password, up to the `@` (no `/`, space or `@` in it). */
const URL_PASSWORD = /([a-z][a-z0-9+.-]{0,31}:\/\/[^\s/:@]{0,256}:)([^\s/@]{1,256})@/gi;
/** How far around a frame's window a URL whose password reaches into it can start or end. */
const URL_REACH = 600;

/**
 * A few lines of the file around `pos`, with a caret under the column. Long lines show only the window of
 * FRAME_WIDTH characters around the column, `...` marking what is left out.
 */
export function codeFrame(source: ConfigSource, pos: Position, context = 2): string {
  const from = Math.max(1, pos.line - context);
  const to = Math.min(linesOf(source.text).length, pos.line + context);
  const width = String(to).length;
  // One window for every line, so the columns of neighbouring lines stay aligned.
  const start = Math.max(0, pos.col - 1 - FRAME_WIDTH / 2);
  const out: string[] = [];
  for (let n = from; n <= to; n++) {
    const marker = n === pos.line ? '>' : ' ';
    out.push(`${marker} ${String(n).padStart(width)} | ${frameLine(source.text, n, start)}`);
    if (n === pos.line) out.push(`  ${' '.repeat(width)} | ${' '.repeat(Math.max(0, pos.col - 1 - start + (start > 0 ? 1 : 0)))}^`);
  }
  return out.join('\n');
}

/** Line `n` (1-based) of `text` from column `start`, at most FRAME_WIDTH characters. */
function frameLine(text: string, n: number, start: number): string {
  // A password in a URL (`http://user:pass@host`, refused at its field) is not shown back: starred, same length, so
  // the caret stays under its column.
  const line = (linesOf(text)[n - 1] ?? '').replace(/\r$/, '');
  if (start >= line.length) return start > 0 && line.length > 0 ? '\u2026' : '';
  const end = Math.min(line.length, start + FRAME_WIDTH);
  // Starred in the window shown and a URL's length around it (a 1 MiB line is not searched whole).
  const from = Math.max(0, start - URL_REACH);
  const raw = line.slice(from, Math.min(line.length, end + URL_REACH));
  // Most windows hold no `@`: the search is skipped (a frame per problem of a large paste ran it thousands of times).
  const around = !raw.includes('@') ? raw : raw.replace(URL_PASSWORD, (_m, head: string, pass: string) => `${head}${'*'.repeat(pass.length)}@`);
  return `${start > 0 ? '\u2026' : ''}${around.slice(start - from, end - from)}${end < line.length ? '\u2026' : ''}`;
}

/** Render a config path as users write it: `binds[0].listeners[0].routes[2].policies.cors`. */
export function formatPath(path: readonly (string | number)[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${seg}` : seg;
  }
  return out || '(root)';
}
