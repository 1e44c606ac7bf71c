// Shared by run.ts (2025-era suite) and run-2026-07-28.ts (2026-07-28 suite): run the conformance CLI, parse its
// summary, and compare a direct run with a run through the gateway.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { testTempDir } from '../helpers/temp-dir.ts';

export interface Run {
  readonly label: string;
  readonly exitCode: number;
  readonly passed: number;
  readonly failed: number;
  /** Per scenario: passed/failed check counts. */
  readonly scenarios: Map<string, string>;
  readonly summary: string;
}

/** `conformance server --url <url> <args>` in a temp dir (removed after); resolves with the parsed summary. */
export function runSuite(cli: string, label: string, url: string, args: readonly string[]): Promise<Run> {
  const out = testTempDir(`conformance-${label}-`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, 'server', '--url', url, ...args, '-o', out], { cwd: out, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      rmSync(out, { recursive: true, force: true });
      const start = text.indexOf('=== SUMMARY ===');
      const summary = start === -1 ? text.slice(-4000) : text.slice(start);
      const total = /Total: (\d+) passed, (\d+) failed/.exec(summary);
      const scenarios = new Map<string, string>();
      for (const m of summary.matchAll(/^[✓✗] ([\w-]+): (\d+ passed, \d+ failed)/gmu)) scenarios.set(m[1]!, m[2]!);
      resolve({ label, exitCode: code ?? 1, passed: Number(total?.[1] ?? 0), failed: Number(total?.[2] ?? 0), scenarios, summary });
    });
  });
}

/** Print the comparison; returns the process exit code (0 when the gateway passes at least as many checks). */
export function compareRuns(direct: Run, through: Run): number {
  console.log('\n##### comparison #####');
  console.log(`direct:  ${direct.passed} passed, ${direct.failed} failed`);
  console.log(`gateway: ${through.passed} passed, ${through.failed} failed`);
  for (const [name, counts] of direct.scenarios) {
    if (through.scenarios.get(name) !== counts) console.log(`differs: ${name}: direct ${counts}, gateway ${through.scenarios.get(name) ?? 'not run'}`);
  }
  if (direct.passed === 0) {
    console.log('FAIL: the direct run passed nothing; the suite did not run');
    return 1;
  }
  if (through.passed < direct.passed) {
    console.log('FAIL: the gateway passes fewer checks than the upstream directly');
    return 1;
  }
  console.log('OK: the gateway passes at least as many checks as the upstream directly');
  return 0;
}
