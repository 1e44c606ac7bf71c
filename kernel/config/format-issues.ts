import type { ConfigIssue } from '../sdk/index.ts';
import { codeFrame, formatPath, locate } from './config-source.ts';
import type { ConfigSource, SourcedIssue } from './config-source.ts';

/** A config problem with its place in the file resolved. */
export interface PositionedIssue {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly path: string;
  readonly code: string;
  readonly message: string;
  readonly frame: string;
}

/** `framed`: the text the code frame shows (secrets hidden, lines kept); the position is found in `source`'s own. */
export function positionIssue(source: ConfigSource, issue: ConfigIssue | SourcedIssue, framed: ConfigSource = source): PositionedIssue {
  const offset = (issue as SourcedIssue).offset;
  const pos = offset !== undefined ? source.lines.linePos(offset) : locate(source, issue.path, issue.atKey, issue.valueOffset);
  return {
    file: source.file,
    line: pos.line,
    col: pos.col,
    path: formatPath(issue.path),
    code: issue.code,
    message: issue.message,
    frame: codeFrame(framed, pos),
  };
}

/** Longest run without a space or backtick a message shows, and longest message: values are quoted, never echoed whole. */
const MAX_WORD = 200;
const MAX_MESSAGE = 4000;
// Backticks end a run, so a quoted value keeps its quotes.
const LONG_WORD = new RegExp(`[^\\s\`]{${MAX_WORD + 1},}`, 'g');

/** `text` with long runs and a long tail cut, saying how much was left out. */
export function clipText(text: string): string {
  const words = text.replace(LONG_WORD, (w) => `${w.slice(0, 60)}\u2026 (${w.length} characters)`);
  return words.length > MAX_MESSAGE ? `${words.slice(0, MAX_MESSAGE)}\u2026 (${words.length - MAX_MESSAGE} more characters)` : words;
}

/** `file:line:col: message (at path)` followed by a code frame. Long values in the message are cut. */
export function renderIssue(issue: PositionedIssue): string {
  const at = issue.path !== '(root)' ? ` (at ${clipText(issue.path)})` : '';
  return `${issue.file}:${issue.line}:${issue.col}: ${clipText(issue.message)}${at} [${issue.code}]\n${issue.frame}`;
}

/** A config that could not be loaded: every problem, positioned. */
export class ConfigLoadError extends Error {
  readonly issues: readonly PositionedIssue[];
  /** Problems found beyond `issues` and only counted (a reload's check sends the first few, ADR 0179). */
  readonly more: number;
  /** Likewise, a paste's warnings (what it left unchecked) beyond those in `issues`. */
  readonly moreWarnings: number;
  constructor(issues: readonly PositionedIssue[], more = 0, moreWarnings = 0) {
    super(issues.map(renderIssue).join('\n\n') + (more > 0 ? `\n\n... ${more.toLocaleString('en')} more problems not shown` : ''));
    this.name = 'ConfigLoadError';
    this.issues = issues;
    this.more = more;
    this.moreWarnings = moreWarnings;
  }
}
