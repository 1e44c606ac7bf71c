import type { Document } from 'yaml';
import { yamlLib } from '../sdk/yaml-lib.ts';

/**
 * `${VAR}` where YAML's flow style (and so JSON) has no plain scalar for it: `{port: ${PORT}}` is a syntax error,
 * since `{` and `}` are flow indicators. Before the positioned parse each reference is replaced by a placeholder of
 * the same length made of private-use characters, which any scalar may hold; after it, every scalar (and comment)
 * gets its references back, and env expansion (expand-env.ts) reads them as it does in block style: a plain scalar
 * is typed by its expanded value (docs/adr/0160). Same length, so every offset, and every `file:line:col`, stays
 * that of the text the user wrote. A text that already holds such characters is parsed as it is (flow references
 * then stay syntax errors, as before), and so is a reference with `\` or `'` in its default.
 */
/** A reference, or one written literally (`$${VAR}`, which expansion turns into the text `${VAR}`). */
const REFERENCE = /\$?\$\{[A-Za-z_][A-Za-z0-9_]*(?::-(?:[^}\\\n]|\\[^\n])*)?\}/g;
const PRIVATE = /[\uE000-\uEFFF]/;
const MARK = '\uE000';
const FILL = '\uE001';
/** The reference's index in two digits of base DIGITS, each written as FIRST_DIGIT + digit. */
const FIRST_DIGIT = 0xe100;
const DIGITS = 0xf00;
const PLACEHOLDER = /\uE000([\uE100-\uEFFF])([\uE100-\uEFFF])\uE001*/g;

export interface MaskedText {
  readonly text: string;
  /** The references replaced, by index. */
  readonly references: readonly string[];
}

/** The text with each `${...}` replaced by its placeholder; undefined when nothing needs it or it cannot be done. */
export function maskReferences(text: string): MaskedText | undefined {
  if (!text.includes('${') || PRIVATE.test(text)) return undefined;
  const references: string[] = [];
  const masked = text.replace(REFERENCE, (whole) => {
    // A reference whose text a quoted scalar would unescape (`\}` in a default, `''`) stays: its placeholder would
    // give back the raw text, not the value YAML reads.
    if (whole.includes('\\') || whole.includes("'") || references.length >= DIGITS * DIGITS) return whole;
    const k = references.push(whole) - 1;
    const head = MARK + String.fromCharCode(FIRST_DIGIT + Math.floor(k / DIGITS), FIRST_DIGIT + (k % DIGITS));
    // The shortest reference, `${A}`, has four characters: room for the mark, two digits and one fill.
    return head + FILL.repeat(whole.length - head.length);
  });
  return references.length === 0 ? undefined : { text: masked, references };
}

function unmask(value: string, references: readonly string[]): string {
  if (!value.includes(MARK)) return value;
  return value.replace(PLACEHOLDER, (whole, hi: string, lo: string) => {
    const k = (hi.charCodeAt(0) - FIRST_DIGIT) * DIGITS + (lo.charCodeAt(0) - FIRST_DIGIT);
    return references[k] ?? whole;
  });
}

type Commented = { comment?: string | null; commentBefore?: string | null };

function unmaskComments(node: Commented, references: readonly string[]): void {
  if (typeof node.comment === 'string') node.comment = unmask(node.comment, references);
  if (typeof node.commentBefore === 'string') node.commentBefore = unmask(node.commentBefore, references);
}

/** Put the references back into a document parsed from masked text: scalar values and sources, comments, errors. */
export function unmaskDocument(doc: Document.Parsed, references: readonly string[]): void {
  const { visit, isScalar } = yamlLib();
  unmaskComments(doc as Commented, references);
  visit(doc, (_key, node) => {
    if (node === null || typeof node !== 'object') return;
    unmaskComments(node as Commented, references);
    if (!isScalar(node)) return;
    if (typeof node.value === 'string') node.value = unmask(node.value, references);
    const withSource = node as { source?: unknown };
    if (typeof withSource.source === 'string') withSource.source = unmask(withSource.source, references);
  });
  for (const error of [...doc.errors, ...doc.warnings]) error.message = unmask(error.message, references);
}
