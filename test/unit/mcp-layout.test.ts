// The MCP backend's layout (issue 10 item 4, ADR 0031): modules by responsibility, none over ~400 lines (the MCP
// transports' too: the streamable-HTTP one is endpoint, SSE reader, reconnects and the connection); each
// protocol revision a folder named for its date under revisions/; no "modern" left for the 2026-07-28 revision in
// the MCP plugins (the SDK's own era name appears only in tests that read `getProtocolEra()`).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BACKEND = join(ROOT, 'plugins/backends/mcp');
const MAX_LINES = 400;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

describe('mcp backend layout', () => {
  it(`no module of the backend or of the MCP transports is over ${MAX_LINES} lines`, () => {
    const long = [...sources(BACKEND), ...sources(join(ROOT, 'plugins/mcp-transports'))]
      .filter((f) => !f.endsWith('.test.ts'))
      .map((f) => [relative(ROOT, f), readFileSync(f, 'utf8').split('\n').length - 1] as const)
      .filter(([, lines]) => lines > MAX_LINES);
    assert.deepEqual(long, []);
  });

  it('each protocol revision is a folder named for its date, with its front', () => {
    const revisions = readdirSync(join(BACKEND, 'revisions')).filter((n) => statSync(join(BACKEND, 'revisions', n)).isDirectory());
    assert.deepEqual(revisions.sort(), ['2025-11-25', '2026-07-28']);
    for (const r of revisions) assert.match(readFileSync(join(BACKEND, 'revisions', r, 'front.ts'), 'utf8'), /implements RevisionAdapter/, r);
  });

  it('the 2026-07-28 revision is called by its date, not "modern"', () => {
    const dirs = ['plugins/backends/mcp', 'plugins/mcp-transports', 'plugins/lib/mcp'].map((d) => join(ROOT, d));
    const hits = dirs
      .flatMap(sources)
      .flatMap((f) => readFileSync(f, 'utf8').split('\n').flatMap((line, i) => (/modern/i.test(line) ? [`${relative(ROOT, f)}:${i + 1}`] : [])));
    assert.deepEqual(hits, []);
  });
});
