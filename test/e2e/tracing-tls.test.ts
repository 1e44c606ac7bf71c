// OTLP export to a collector behind TLS with a private CA and client certificates (mutual TLS), over both protocols,
// with the real gateway as a child process: `tracing.tls` (named as backendTLS names it) gives the CA, the client
// certificate and key, and the name checked. Before it a collector with a private CA or one requiring a client
// certificate could not be used. The collector stand-ins answer every export with a partial success (spans
// rejected), which the gateway counts (`error_type="rejected"`) and logs instead of ignoring.
import assert from 'node:assert/strict';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, ROOT } from '../helpers/cli.ts';
import { runCommand, startCli } from '../helpers/cli-process.ts';
import type { RunningCli } from '../helpers/cli-process.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

/** An ExportTraceServiceResponse whose partial_success rejects `rejected` spans with `message`. */
function partialSuccess(rejected: number, message: string): Buffer {
  const text = Buffer.from(message);
  const inner = Buffer.concat([Buffer.from([0x08, rejected]), Buffer.from([0x12, text.length]), text]);
  return Buffer.concat([Buffer.from([0x0a, inner.length]), inner]);
}

interface Collector {
  readonly port: number;
  /** The client certificate's CN of each export received (empty: none presented). */
  readonly clients: string[];
  close(): Promise<void>;
}

async function startCollector(pki: TestPki, protocol: 'http' | 'grpc', answer: Buffer): Promise<Collector> {
  const clients: string[] = [];
  const tls = { cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey), ca: readFileSync(pki.ca), requestCert: true, rejectUnauthorized: true };
  const server =
    protocol === 'http'
      ? createHttpsServer(tls, (req, res) => {
          clients.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN ?? ''));
          req.resume();
          req.on('end', () => {
            res.writeHead(200, { 'content-type': 'application/x-protobuf' });
            res.end(answer);
          });
        })
      : createSecureServer(tls, (req, res) => {
          clients.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN ?? ''));
          req.resume();
          req.on('end', () => {
            res.writeHead(200, { 'content-type': 'application/grpc' });
            const frame = Buffer.alloc(5);
            frame.writeUInt32BE(answer.length, 1);
            res.write(Buffer.concat([frame, answer]));
            res.addTrailers({ 'grpc-status': '0' });
            res.end();
          });
        });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    clients,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const yaml = (port: number, stats: number, tracing: string): string =>
  `config:\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:${stats}\n  readinessAddr: 127.0.0.1:0\n  drainTimeout: 1s\n  tracing:\n    randomSampling: true\n${tracing}binds:\n- port: ${port}\n  address: 127.0.0.1\n  listeners:\n  - routes:\n    - policies: { directResponse: { body: ok, status: 200 } }\n`;

async function metric(stats: number, errorType: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${stats}/metrics`)).text();
  const m = new RegExp(`^otel_sdk_exporter_span_exported_total\\{error_type="${errorType}"\\} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

async function until(check: () => Promise<boolean>, what: () => string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`not in time: ${what()}`);
    await sleep(200);
  }
}

describe('tracing: OTLP export over TLS', () => {
  let pki: TestPki;
  let dir: string;
  before(() => {
    // The certificate names only `collector.test`: the endpoint is an IP, so `hostname` must say which name to check.
    pki = makeTestPki({ serverName: 'collector.test', serverAltNames: ['DNS:collector.test'], label: 'otlp' });
    dir = testTempDir('switchyard-otlp-tls-');
  });
  after(() => pki.remove());

  /**
   * A gateway (the CLI) exporting to a collector stand-in answering `answer`, with `tracing` (YAML lines of the block
   * after its endpoint and protocol); `check` runs while it serves; both are stopped after.
   */
  async function traced(protocol: 'http' | 'grpc', answer: Buffer, tracing: string, check: (s: { gw: RunningCli; port: number; stats: number; collector: Collector }) => Promise<void>): Promise<void> {
    const collector = await startCollector(pki, protocol, answer);
    const port = await freePort();
    const stats = await freePort();
    const file = join(dir, `gw-${port}.yaml`);
    writeFileSync(file, yaml(port, stats, `    otlpEndpoint: https://127.0.0.1:${collector.port}\n    otlpProtocol: ${protocol}\n${tracing}`));
    let gw: RunningCli | undefined;
    try {
      gw = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT });
      await check({ gw, port, stats, collector });
    } finally {
      await gw?.stop();
      await collector.close();
    }
  }

  for (const protocol of ['http', 'grpc'] as const) {
    it(`OTLP/${protocol}: a private CA, a client certificate and the name checked; rejected spans counted and logged`, async () => {
      const tls = `    tls:\n      root: ${pki.ca}\n      cert: ${pki.clientCert}\n      key: ${pki.clientKey}\n      hostname: collector.test\n`;
      await traced(protocol, partialSuccess(1, 'span too old'), tls, async ({ gw, port, stats, collector }) => {
        for (let i = 0; i < 3; i++) assert.equal((await fetch(`http://127.0.0.1:${port}/t${i}`)).status, 200);
        await until(async () => (await metric(stats, '')) + (await metric(stats, 'rejected')) >= 3, () => gw.output());
        assert.ok(collector.clients.length >= 1);
        assert.ok(collector.clients.every((cn) => cn === 'gateway-client'), collector.clients.join());
        // One span of each export is rejected by the collector: counted as failed, the rest as exported.
        assert.equal(await metric(stats, 'rejected'), collector.clients.length);
        assert.equal(await metric(stats, ''), 3 - collector.clients.length);
        await gw.waitFor(/trace export failed.*the collector rejected 1 of \d+ spans: span too old/);
      });
    });
  }

  it('insecure: no verification (the CA is not given), with a warning at load', async () => {
    const tls = `    tls:\n      cert: ${pki.clientCert}\n      key: ${pki.clientKey}\n      insecure: true\n`;
    await traced('http', Buffer.alloc(0), tls, async ({ gw, port, stats, collector }) => {
      assert.match(gw.output(), /WARN .*turns off all verification of the trace collector's certificate.*at=config\.tracing\.tls\.insecure/);
      assert.equal((await fetch(`http://127.0.0.1:${port}/x`)).status, 200);
      await until(async () => (await metric(stats, '')) >= 1, () => gw.output());
      assert.deepEqual(collector.clients, ['gateway-client']);
    });
  });

  it('a CA that did not sign the collector: exports fail (counted), the gateway serves on', async () => {
    const tls = `    tls:\n      root: ${pki.otherCa}\n      cert: ${pki.clientCert}\n      key: ${pki.clientKey}\n      hostname: collector.test\n`;
    await traced('grpc', Buffer.alloc(0), tls, async ({ gw, port, stats, collector }) => {
      assert.equal((await fetch(`http://127.0.0.1:${port}/x`)).status, 200);
      await gw.waitFor(/trace export failed/);
      assert.equal(collector.clients.length, 0);
      assert.equal(await metric(stats, ''), 0);
    });
  });

  // Files a config names reload it (ADR 0184): the collector's were read with the gateway's shared fetches, not the
  // compile's, so a rotated CA was never looked at again (tracing starts once, so the new one needs a restart).
  it('a rotated CA file reloads the config, which says the change needs a restart; a non-PEM one is a failed reload', async () => {
    const root = join(dir, 'rotated-ca.pem');
    writeFileSync(root, readFileSync(pki.ca));
    const tls = `    tls:\n      root: ${root}\n      hostname: collector.test\n`;
    await traced('http', Buffer.alloc(0), tls, async ({ gw }) => {
      const replace = (text: string | Buffer): void => {
        writeFileSync(`${root}.new`, text);
        renameSync(`${root}.new`, root);
      };
      replace(readFileSync(pki.otherCa));
      await gw.waitFor(/take effect after a restart/);
      replace('not a certificate\n');
      await gw.waitFor(/config reload failed.*holds no PEM block/s);
    });
  });

  it('config errors: `tls` with a cleartext endpoint, `cert` without `key`, an unreadable, non-PEM or cut file', async () => {
    const notPem = join(dir, 'not.pem');
    writeFileSync(notPem, 'hello\n');
    // A CA bundle cut short (a copy that stopped, a ConfigMap edited by hand): node:tls takes it and trusts nothing.
    const caText = readFileSync(pki.ca, 'utf8');
    const afterBegin = join(dir, 'cut-after-begin.pem');
    writeFileSync(afterBegin, caText.slice(0, caText.indexOf('\n') + 1));
    const midBody = join(dir, 'cut-mid-body.pem');
    writeFileSync(midBody, caText.slice(0, Math.floor(caText.indexOf('-----END') / 2)));
    const notCert = join(dir, 'not-a-cert.pem');
    writeFileSync(notCert, '-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n');
    const secondCut = join(dir, 'second-cut.pem');
    writeFileSync(secondCut, caText + caText.slice(0, caText.indexOf('\n') + 1));
    const cases: [string, RegExp][] = [
      [`    otlpEndpoint: http://127.0.0.1:4317\n    tls:\n      root: ${pki.ca}\n`, /applies to an `https:\/\/` trace endpoint.*\(at config\.tracing\.tls\)/],
      [`    otlpEndpoint: https://127.0.0.1:4317\n    tls:\n      cert: ${pki.clientCert}\n`, /needs `key`.*\(at config\.tracing\.tls\.cert\)/],
      [`    otlpEndpoint: https://127.0.0.1:4317\n    tls:\n      root: ${join(dir, 'missing.pem')}\n`, /cannot read the CA bundle file.*\(at config\.tracing\.tls\.root\)/],
      [`    otlpEndpoint: https://127.0.0.1:4317\n    tls:\n      root: ${notPem}\n`, /holds no PEM block.*\(at config\.tracing\.tls\.root\)/],
      [`    otlpEndpoint: https://127.0.0.1:4317\n    tls:\n      cert: ${pki.clientCert}\n      key: ${pki.serverKey}\n`, /not a valid pair.*\(at config\.tracing\.tls\.key\)/],
      [`    otlpEndpoint: https://127.0.0.1:4317\n    tls:\n      root: ${afterBegin}\n`, /PEM block 1 \(CERTIFICATE\) has no END line.*\(at config\.tracing\.tls\.root\)/s],
      [`    otlpEndpoint: https://127.0.0.1:4317\n    tls:\n      root: ${midBody}\n`, /PEM block 1 \(CERTIFICATE\) has no END line.*\(at config\.tracing\.tls\.root\)/s],
      [`    otlpEndpoint: https://127.0.0.1:4317\n    tls:\n      root: ${notCert}\n`, /PEM block 1 is not an X\.509 certificate.*\(at config\.tracing\.tls\.root\)/s],
      [`    otlpEndpoint: https://127.0.0.1:4317\n    tls:\n      root: ${secondCut}\n`, /PEM block 2 \(CERTIFICATE\) has no END line.*\(at config\.tracing\.tls\.root\)/s],
    ];
    for (const [i, [tracing, expected]] of cases.entries()) {
      const file = join(dir, `bad${i}.yaml`);
      writeFileSync(file, yaml(await freePort(), await freePort(), tracing));
      const run = await runCommand(process.execPath, [BIN, '-f', file, '--validate-only'], { cwd: ROOT });
      assert.equal(run.code, 1, `case ${i}: ${run.stdout}${run.stderr}`);
      assert.match(run.stderr, expected, `case ${i}`);
    }
  });
});
