// OTLP over mutual TLS to a real Jaeger (v2) whose receivers take a certificate from a private CA and require a
// client certificate from it: the gateway, run as the CLI, exports with `tracing.tls` over both protocols and the
// spans are read back through Jaeger's query API (ADR 0132).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, ROOT } from '../helpers/cli.ts';
import { startCli } from '../helpers/cli-process.ts';
import { locateJaeger, startJaeger } from '../helpers/jaeger.ts';
import type { RunningJaeger } from '../helpers/jaeger.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const found = locateJaeger();

describe('tracing to Jaeger over mutual TLS', { skip: 'skip' in found ? found.skip : false }, () => {
  let pki: TestPki;
  let jaeger: RunningJaeger;
  before(async () => {
    pki = makeTestPki({ serverName: 'jaeger.test', serverAltNames: ['DNS:jaeger.test'], label: 'jaeger' });
    jaeger = await startJaeger(found as { bin: string }, { cert: pki.serverCert, key: pki.serverKey, clientCa: pki.ca });
  });
  after(async () => {
    await jaeger?.stop();
    pki?.remove();
  });

  for (const protocol of ['grpc', 'http'] as const) {
    it(`OTLP/${protocol}: the spans reach Jaeger`, async () => {
      const port = await freePort();
      const service = `switchyard-mtls-${protocol}`;
      const file = join(testTempDir('switchyard-jaeger-tls-'), 'gw.yaml');
      const endpoint = protocol === 'grpc' ? jaeger.otlpGrpc : jaeger.otlpHttp;
      writeFileSync(
        file,
        `config:\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\n  tracing:\n    otlpEndpoint: ${endpoint}\n    otlpProtocol: ${protocol}\n    serviceName: ${service}\n    randomSampling: true\n    tls:\n      root: ${pki.ca}\n      cert: ${pki.clientCert}\n      key: ${pki.clientKey}\n      hostname: jaeger.test\nbinds:\n- port: ${port}\n  address: 127.0.0.1\n  listeners:\n  - routes:\n    - policies: { directResponse: { body: ok, status: 200 } }\n`,
      );
      const gw = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT });
      try {
        assert.equal((await fetch(`http://127.0.0.1:${port}/mtls`)).status, 200);
        const end = Date.now() + 15_000;
        while ((await jaeger.traces(service)).length === 0) {
          assert.ok(Date.now() < end, `no trace of ${service} in Jaeger:\n${gw.output()}\n${jaeger.logs()}`);
          await sleep(200);
        }
        assert.doesNotMatch(gw.output(), /trace export failed/);
      } finally {
        await gw.stop();
      }
    });
  }
});
