// ADR 0172: `GET /keys` answers a page at a time (`limit`, `cursor`, `total`, `next`), and `switchyard keys list`
// follows the pages to print every key.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { keysMain } from '../../kernel/boot/keys-cli.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';

interface Page {
  readonly keys: { id: string; team?: string }[];
  readonly total: number;
  readonly next?: string;
}

const DECLARED = 2_400;

describe('GET /keys with thousands of keys', () => {
  let gw: RunningGateway;
  const made: string[] = [];
  before(async () => {
    const keys = Array.from({ length: DECLARED }, (_, i) => ({ id: `d${String(i).padStart(5, '0')}`, key: `sk-declared-key-${String(i).padStart(8, '0')}`, ...(i % 2 ? { team: 'odd' } : {}) }));
    const virtualKeys = { store: { sqlite: { path: ':memory:' } }, teams: [{ name: 'odd' }], keys };
    gw = await startGateway({ binds: [{ port: await freePort(), listeners: [{ routes: [{ name: 'r', policies: { virtualKeys, directResponse: { status: 200 } } }] }] }] });
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ owner: `o${i}` }) });
      made.push(((await res.json()) as { key: { id: string } }).key.id);
    }
  });
  after(() => gw.stop());

  const page = async (query: string): Promise<{ status: number; body: Page & { error?: { message: string } } }> => {
    const res = await fetch(`${gw.adminUrl}/keys${query}`);
    return { status: res.status, body: (await res.json()) as Page & { error?: { message: string } } };
  };

  it('answers 1,000 keys at most by default, with the total and a cursor for the next page', async () => {
    // Before: every key in one answer, however many there were.
    const first = await page('');
    assert.equal(first.status, 200);
    assert.equal(first.body.keys.length, 1000);
    assert.equal(first.body.total, DECLARED + 5);
    assert.equal(typeof first.body.next, 'string');
  });

  it('following `next` visits every key once, in id order, and the last page has no `next`', async () => {
    const seen: string[] = [];
    let query = '?limit=700';
    for (;;) {
      const { status, body } = await page(query);
      assert.equal(status, 200);
      assert.ok(body.keys.length <= 700);
      seen.push(...body.keys.map((k) => k.id));
      if (body.next === undefined) break;
      query = `?limit=700&cursor=${encodeURIComponent(body.next)}`;
    }
    assert.equal(seen.length, DECLARED + 5);
    assert.equal(new Set(seen).size, seen.length);
    assert.deepEqual(seen, [...seen].sort());
    for (const id of made) assert.ok(seen.includes(id));
  });

  it('pages a team filter, counting only its keys', async () => {
    const { body } = await page('?team=odd&limit=100');
    assert.equal(body.total, DECLARED / 2);
    assert.equal(body.keys.length, 100);
    assert.ok(body.keys.every((k) => k.team === 'odd'));
  });

  it('refuses a limit that is not a whole number from 1 to 1,000', async () => {
    for (const bad of ['0', '1001', 'x', '1.5', '-1']) {
      const { status, body } = await page(`?limit=${bad}`);
      assert.equal(status, 400, bad);
      assert.match(body.error!.message, /`limit` must be a whole number from 1 to 1000/);
    }
  });

  it('`switchyard keys list` prints every key, page after page', async () => {
    const out: string[] = [];
    const err: string[] = [];
    assert.equal(await keysMain(['list', '--admin', gw.adminUrl], (s) => out.push(s), (s) => err.push(s)), 0, err.join(''));
    const lines = out.join('').trimEnd().split('\n');
    assert.equal(lines.length, 1 + DECLARED + 5);
    assert.match(lines[0]!, /^ID\s+OWNER/);
    const json: string[] = [];
    assert.equal(await keysMain(['list', '--admin', gw.adminUrl, '--json'], (s) => json.push(s), (s) => err.push(s)), 0);
    const all = JSON.parse(json.join('')) as Page;
    assert.equal(all.keys.length, DECLARED + 5);
    assert.equal(all.total, DECLARED + 5);
  });
});
