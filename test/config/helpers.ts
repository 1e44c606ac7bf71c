import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { ConfigLoadError, createGateway, LogSink } from 'switchyard';
import type { PositionedIssue } from 'switchyard';
import backend from '../../plugins/backends/backend/plugin.ts';
import host from '../../plugins/backends/host/plugin.ts';
import directResponse from '../../plugins/policies/direct-response/plugin.ts';
import requestHeaderModifier from '../../plugins/policies/request-header-modifier/plugin.ts';
import responseHeaderModifier from '../../plugins/policies/response-header-modifier/plugin.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';

/**
 * A fixed plugin list, so messages that list installed keys ("only one of `host`, `backend`") do not change
 * whenever a plugin joins the full preset. Tests that need the full preset pass it explicitly.
 */
export const BASIC_PRESET = [host, backend, requestHeaderModifier, responseHeaderModifier, directResponse] as const;

export interface CompileOptions {
  readonly preset?: readonly unknown[];
  readonly knownKeys?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  /** Label used as the file name in messages. */
  readonly name?: string;
}

/** A gateway for config text that is only compiled (no sockets, no watching, logs dropped or given to `log`). */
function quietGateway(text: string, options: CompileOptions, log: (chunk: string) => void = () => undefined): ReturnType<typeof createGateway> {
  return createGateway(
    {
      preset: options.preset ?? BASIC_PRESET,
      knownKeys: options.knownKeys ?? FIRST_PARTY_KEYS,
      config: { name: options.name ?? 'test.yaml', text },
      watch: false,
      env: options.env ?? {},
    },
    new LogSink(log),
  );
}

/** Compile config text through the public API (no sockets); resolves with the error it must throw. */
export async function compileError(text: string, options: CompileOptions = {}): Promise<ConfigLoadError> {
  const gateway = quietGateway(text, options);
  try {
    await gateway.compile(text);
  } catch (err) {
    if (err instanceof ConfigLoadError) return err;
    throw err;
  } finally {
    await gateway.stop();
  }
  assert.fail(`expected a ConfigLoadError for:\n${text}`);
}

/** Compile config text that must be valid; returns the config value the snapshot holds (aliases resolved). */
export async function compileValue(text: string, options: CompileOptions = {}): Promise<Record<string, unknown>> {
  const gateway = quietGateway(text, options);
  try {
    const snapshot = await gateway.compile(text);
    const value = snapshot.config as Record<string, unknown>;
    snapshot.dispose();
    return value;
  } finally {
    await gateway.stop();
  }
}

/** Compile config text that must be valid; resolves with the warn lines its load logged (text format). */
export async function compileWarnings(text: string, options: CompileOptions = {}): Promise<string[]> {
  let logged = '';
  const gateway = quietGateway(text, options, (chunk) => (logged += chunk));
  try {
    (await gateway.compile(text)).dispose();
  } finally {
    await gateway.stop();
  }
  return logged.split('\n').filter((line) => / WARN /.test(line));
}

/** The first line of each rendered issue: `file:line:col: message (at path) [CODE]`. */
export function headlines(err: ConfigLoadError): string[] {
  return err.message.split('\n\n').map((block) => block.split('\n')[0]!);
}

/** `file:line:col` plus path and message of each issue, for compact exact assertions. */
export function summarize(issues: readonly PositionedIssue[]): { at: string; path: string; code: string; message: string }[] {
  return issues.map((i) => ({ at: `${i.file}:${i.line}:${i.col}`, path: i.path, code: i.code, message: i.message }));
}

/** YAML from lines, so tests read like the file the user wrote (line numbers are 1-based indexes + 1). */
export function yaml(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

/** A config whose one route has an `authorization` policy; `rules` are the lines under `rules:` (line 9 onwards). */
export function withAuthorizationRules(...rules: string[]): string {
  return yaml(
    'binds:',
    '  - port: 8080',
    '    listeners:',
    '      - routes:',
    '          - backends: [{ host: "127.0.0.1:9" }]',
    '            policies:',
    '              authorization:',
    '                rules:',
    ...rules,
  );
}

/** Temp dirs for one test file: each call makes one, all removed when the file's tests end. */
export function tempDirs(): (prefix: string) => string {
  const made: string[] = [];
  after(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });
  return (prefix) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}

/** One route with `policies` (YAML lines under `policies:`) and `backend` (YAML lines under `backends:`). */
export const routeWithPolicies = (policies: string[], backend = ['- host: 127.0.0.1:9']): string =>
  yaml(
    'binds:',
    '  - port: 8080',
    '    listeners:',
    '      - routes:',
    '          - policies:',
    ...policies.map((p) => `              ${p}`),
    '            backends:',
    ...backend.map((b) => `              ${b}`),
  );
