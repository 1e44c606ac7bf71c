import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Every temp folder a test process makes lives under one root, made on first use and removed when the process exits:
// a test that forgets its folder, or fails before removing it, leaves nothing behind in the system temp folder.
let root: string | undefined;

/** A fresh folder named `<prefix>XXXXXX` under this process's temp root (removed at exit; removing it earlier is fine). */
export function testTempDir(prefix: string): string {
  if (root === undefined) {
    const made = mkdtempSync(join(tmpdir(), 'switchyard-tests-'));
    root = made;
    process.once('exit', () => rmSync(made, { recursive: true, force: true }));
  }
  return mkdtempSync(join(root, prefix));
}
