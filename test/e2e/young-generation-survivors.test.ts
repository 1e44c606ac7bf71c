// Issue 15 item 3 (tails): a plain `host` route under sequential keep-alive POSTs of a small body must leave almost
// nothing alive in V8's young generation at each scavenge. Streaming the client's request into undici kept every
// request's objects alive through a chain of promoted garbage (~500 KiB promoted per scavenge at 4 MiB semi-spaces,
// 10× the survivors): each scavenge paused longer, p99 at c=1 rose by milliseconds and the old generation filled
// with garbage (docs/perf.md "Tails and memory, session 5"). The real CLI runs with V8's GC trace on; the test reads
// the bytes each scavenge promoted, which do not depend on how busy the machine is.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import type { RunningCli } from '../helpers/cli-process.ts';
import { BIN, ROOT } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(150) }], max_tokens: 64 });
const ANSWER = JSON.stringify({ id: 'chatcmpl-test', choices: [{ message: { role: 'assistant', content: 'y'.repeat(200) } }] });

/** Bytes promoted by each scavenge, from `--trace-gc-nvp` lines (`gc=s … promoted=N`). */
function promotedPerScavenge(output: string): number[] {
  const out: number[] = [];
  for (const m of output.matchAll(/gc=s .*? promoted=(\d+)/g)) out.push(Number(m[1]));
  return out;
}

describe('young generation under sequential POSTs (issue 15, tails)', () => {
  // An upstream that keeps nothing per request (the helpers' records every request it receives).
  const upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(ANSWER) }).end(ANSWER));
  });
  let cli: RunningCli;
  let port: number;

  before(async () => {
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    port = await freePort();
    const dir = testTempDir('switchyard-young-');
    const file = join(dir, 'config.yaml');
    const up = (upstream.address() as AddressInfo).port;
    writeFileSync(
      file,
      stringify({
        config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', logging: { accessLog: false } },
        binds: [{ port, listeners: [{ routes: [{ name: 'host', backends: [{ host: `127.0.0.1:${up}` }] }] }] }],
      }),
    );
    // The CLI's own semi-space cap (bin/node-flags.js) applies; the GC trace goes to stdout.
    cli = await startCli(process.execPath, ['--trace-gc-nvp', BIN, '-f', file], { cwd: ROOT, env: childEnv() });
  });
  after(async () => {
    await cli?.stop();
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  });

  it('promotes almost nothing per scavenge: a small request body does not chain requests together', async (t) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/v1/chat/completions', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', reject);
        req.end(BODY);
      });
    // About 25 KiB of young objects per request: 2500 requests fill the 4 MiB young generation about 15 times.
    for (let i = 0; i < 2500; i++) assert.equal(await post(), 200);
    agent.destroy();
    await cli.stop();
    const promoted = promotedPerScavenge(cli.output());
    assert.ok(promoted.length >= 8, `at least 8 scavenges during the load (saw ${promoted.length})`);
    // The last scavenges are the steady state (the first ones promote what start-up and warm-up compiled).
    const steady = promoted.slice(-6).sort((a, b) => a - b);
    const median = steady[3]!;
    t.diagnostic(`promoted per scavenge, last 6: ${steady.map((b) => Math.round(b / 1024)).join(', ')} KiB`);
    // Streamed: ~450-600 KiB per scavenge; read first: ~30-50 KiB.
    assert.ok(median < 150 * 1024, `median promoted per scavenge ${Math.round(median / 1024)} KiB (want < 150 KiB): ${steady.map((b) => Math.round(b / 1024)).join(', ')} KiB`);
  });
});
