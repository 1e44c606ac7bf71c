// The starter config `switchyard init` writes, as test/install/init.test.ts (from the clone) and
// test/install/package.test.ts (from the installed package) run it: moved to free ports, then its two answers.
import assert from 'node:assert/strict';
import { request } from 'undici';
import { freePort } from './ports.ts';

/** The starter with its fixed ports moved to free ones, so the test runs beside others. */
export async function starterOnFreePorts(text: string): Promise<{ text: string; front: number }> {
  const [front, upstream, admin] = [await freePort(), await freePort(), await freePort()];
  const moved = text
    .replace('port: 3000', `port: ${front}`)
    .replace('port: 3001', `port: ${upstream}`)
    .replace('host: 127.0.0.1:3001', `host: 127.0.0.1:${upstream}`)
    .replace('adminAddr: 127.0.0.1:15000', `adminAddr: 127.0.0.1:${admin}`)
    .replace(/(statsAddr|readinessAddr): 127\.0\.0\.1:\d+/g, '$1: off');
  assert.notEqual(moved, text);
  return { text: moved, front };
}

/** What the README promises of the starter: /hello answered by the gateway, /api/anything by the stand-in upstream. */
export async function assertStarterAnswers(front: number): Promise<void> {
  const hello = await request(`http://127.0.0.1:${front}/hello`);
  assert.equal(hello.statusCode, 200);
  assert.equal(await hello.body.text(), 'Hello from Switchyard!\n');
  assert.equal(hello.headers['content-type'], 'text/plain; charset=utf-8');
  const api = await request(`http://127.0.0.1:${front}/api/anything`);
  assert.equal(api.statusCode, 200);
  assert.equal(api.headers['content-type'], 'application/json');
  assert.equal(await api.body.text(), '{"upstream":"ok"}\n');
}
