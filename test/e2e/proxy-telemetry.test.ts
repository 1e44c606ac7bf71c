import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGatewayOnFreePorts, waitFor } from './proxy-support.ts';

describe('metrics and access log for proxied requests', () => {
  let gw: RunningGateway;
  let up: TestUpstream;
  let port: number;
  let downPort: number;

  before(async () => {
    up = await startUpstream((req, res) => {
      const status = req.url?.startsWith('/api/missing') ? 404 : 200;
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(String(status));
    });
    downPort = await freePort();
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      binds: [
        {
          port,
          listeners: [
            {
              name: 'main',
              routes: [
                { name: 'api', matches: [{ path: { pathPrefix: '/api' } }], backends: [{ host: `127.0.0.1:${up.port}` }] },
                { name: 'down', matches: [{ path: { pathPrefix: '/down' } }], backends: [{ host: `127.0.0.1:${downPort}` }] },
              ],
            },
          ],
        },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    await up?.close();
  });

  const metrics = async (): Promise<string> => {
    const res = await request(`${gw.statsUrl}/metrics`);
    assert.equal(res.statusCode, 200);
    return res.body.text();
  };

  /** The value of one series line, found by its exact label set. */
  const sample = (text: string, name: string, labels: string): number | undefined => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };

  it('counts requests by route and status, with a duration histogram', async () => {
    for (let i = 0; i < 7; i++) await (await request(`${gw.url(port)}/api/ok/${i}`)).body.dump();
    for (let i = 0; i < 3; i++) await (await request(`${gw.url(port)}/api/missing/${i}`)).body.dump();
    for (let i = 0; i < 2; i++) await (await request(`${gw.url(port)}/down`)).body.dump();

    const ok = `bind="${port}",listener="main",route="api",status="200"`;
    const notFound = `bind="${port}",listener="main",route="api",status="404"`;
    const unavailable = `bind="${port}",listener="main",route="down",status="503"`;
    // The series are recorded when each response has closed; give the last one a moment.
    let text = '';
    await waitFor(async () => sample((text = await metrics()), 'switchyard_requests_total', unavailable) === 2, 5000, 'the last request to be counted');

    assert.match(text, /^# TYPE switchyard_requests_total counter$/m);
    assert.match(text, /^# TYPE switchyard_request_duration_seconds histogram$/m);
    assert.equal(sample(text, 'switchyard_requests_total', ok), 7);
    assert.equal(sample(text, 'switchyard_requests_total', notFound), 3);
    assert.equal(sample(text, 'switchyard_requests_total', unavailable), 2);

    assert.equal(sample(text, 'switchyard_request_duration_seconds_count', ok), 7);
    assert.equal(sample(text, 'switchyard_request_duration_seconds_bucket', `${ok},le="+Inf"`), 7);
    const sum = sample(text, 'switchyard_request_duration_seconds_sum', ok)!;
    assert.ok(sum > 0 && sum < 30, `duration sum ${sum}`);
    // Buckets are cumulative and end at the count.
    const buckets = text
      .split('\n')
      .filter((l) => l.startsWith(`switchyard_request_duration_seconds_bucket{${ok},le=`))
      .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)));
    assert.ok(buckets.length > 2);
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]! >= buckets[i - 1]!, 'buckets are cumulative');
    assert.equal(buckets.at(-1), 7);
  });

  it('writes one access-log `request` line per request with route and status', async () => {
    await (await request(`${gw.url(port)}/api/logged?x=1`, { headers: { host: 'logged.example' } })).body.dump();
    await (await request(`${gw.url(port)}/down/logged`)).body.dump();
    // Text format: values with spaces, quotes or `=` are JSON-quoted.
    const find = (path: string) => gw.logs.find((l) => / INFO +request /.test(l) && l.includes(`http.path=${path} `));
    await waitFor(() => find('"/api/logged?x=1"') !== undefined && find('/down/logged') !== undefined, 5000, 'the access log lines');
    const ok = find('"/api/logged?x=1"')!;
    assert.match(ok, / route=api /);
    assert.match(ok, / listener=main /);
    assert.match(ok, / http\.status=200 /);
    assert.match(ok, / http\.method=GET /);
    assert.match(ok, / http\.host=logged\.example /);
    assert.match(ok, / src\.addr=127\.0\.0\.1 /);
    assert.match(ok, / duration=\d+(\.\d+)?ms/);
    const failed = find('/down/logged')!;
    assert.match(failed, / route=down /);
    assert.match(failed, / http\.status=503 /);
    assert.match(failed, / error=/);
    assert.equal(gw.logs.filter((l) => l.includes('http.path="/api/logged?x=1"')).length, 1);
  });
});
