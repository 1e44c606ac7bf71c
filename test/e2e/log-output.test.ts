// The gateway's log output is stdout. When its reader goes away (a log shipper or `| logger` that died, a closed
// pipe), writes fail with EPIPE: node emitted that as an unhandled 'error' and the gateway process died with
// every connection, because its logs could not be read. Lines are dropped instead; traffic is served on.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, ROOT } from '../helpers/cli.ts';
import { startCli } from '../helpers/cli-process.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

describe('log output', () => {
  it("a closed stdout (EPIPE) does not stop the gateway: requests are served, lines dropped", async () => {
    const port = await freePort();
    const file = join(testTempDir('switchyard-epipe-'), 'gw.yaml');
    writeFileSync(
      file,
      `config:\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\nbinds:\n- port: ${port}\n  address: 127.0.0.1\n  listeners:\n  - routes:\n    - policies: { directResponse: { body: ok, status: 200 } }\n`,
    );
    const gw = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT });
    try {
      // The reader of the gateway's stdout goes away.
      gw.child.stdout!.destroy();
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/r${i}`);
        assert.equal(res.status, 200, `request ${i}`);
        assert.equal(await res.text(), 'ok');
        await sleep(20);
      }
      assert.equal(gw.child.exitCode, null, `the gateway exited:\n${gw.output()}`);
      // The lines it could not write are counted.
      const statsPort = /roles=[a-z,]*stats[a-z,]* address=127\.0\.0\.1:(\d+)/.exec(gw.output());
      assert.ok(statsPort, gw.output());
      const metrics = await (await fetch(`http://127.0.0.1:${statsPort[1]}/metrics`)).text();
      const dropped = Number(/^switchyard_log_lines_dropped_total (\d+)$/m.exec(metrics)?.[1]);
      assert.ok(dropped >= 19, `switchyard_log_lines_dropped_total ${dropped}`);
    } finally {
      await gw.stop();
    }
  });
});
