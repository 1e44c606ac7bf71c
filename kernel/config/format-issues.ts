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

export function positionIssue(source: ConfigSource, issue: ConfigIssue | SourcedIssue): PositionedIssue {
  const offset = (issue as SourcedIssue).offset;
  const pos = offset !== undefined ? source.lines.linePos(offset) : locate(source, issue.path, issue.atKey);
  return {
    file: source.file,
    line: pos.line,
    col: pos.col,
    path: formatPath(issue.path),
    code: issue.code,
    message: issue.message,
    frame: codeFrame(source, pos),
  };
}

/** `file:line:col: message (at path)` followed by a code frame. */
export function renderIssue(issue: PositionedIssue): string {
  const at = issue.path !== '(root)' ? ` (at ${issue.path})` : '';
  return `${issue.file}:${issue.line}:${issue.col}: ${issue.message}${at} [${issue.code}]\n${issue.frame}`;
}

/** A config that could not be loaded: every problem, positioned. */
export class ConfigLoadError extends Error {
  readonly issues: readonly PositionedIssue[];
  constructor(issues: readonly PositionedIssue[]) {
    super(issues.map(renderIssue).join('\n\n'));
    this.name = 'ConfigLoadError';
    this.issues = issues;
  }
}
