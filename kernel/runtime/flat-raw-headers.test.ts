import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { editedRawHeaders, flatHeaders, flatRawHeaders } from './reply-writer.ts';
import { parseHeaders } from '../upstream/undici-core.ts';
import { headerListAdd, headerListRemove, headerListSet } from '../sdk/index.ts';
import type { Logger, PolicyInstance, Reply } from '../sdk/index.ts';
import type { ExchangeImpl } from './exchange-impl.ts';

/** What the direct forward wrote before (docs/perf.md "Plain route CPU, session 7"): parseHeaders, queued assigned, flattened. */
function viaObject(raw: Buffer[], queued: string[] | undefined, parsed?: Record<string, string | string[] | undefined>): string[] {
  const headers: Record<string, string | string[] | undefined> = parsed ?? parseHeaders(raw);
  if (queued) for (let i = 0; i < queued.length; i += 2) headers[queued[i]!] = queued[i + 1]!;
  return flatHeaders(headers);
}

const raw = (...pairs: [string, string][]): Buffer[] => pairs.flatMap(([n, v]) => [Buffer.from(n, 'latin1'), Buffer.from(v, 'latin1')]);

/** Same header fields, same values per name in the same order (the order between names may differ). */
function fields(flat: string[]): string[] {
  const byName = new Map<string, string[]>();
  for (let i = 0; i < flat.length; i += 2) (byName.get(flat[i]!) ?? byName.set(flat[i]!, []).get(flat[i]!)!).push(flat[i + 1]!);
  return [...byName].sort(([a], [b]) => a.localeCompare(b)).map(([n, v]) => `${n}: ${v.join(' | ')}`);
}

describe('flatRawHeaders: the raw answer headers as the list writeHead writes', () => {
  const cases: [string, Buffer[], string[] | undefined][] = [
    ['nginx answer', raw(['Server', 'nginx'], ['Date', 'Thu, 26 Nov 2026 06:29:30 GMT'], ['Content-Type', 'application/json'], ['Content-Length', '320'], ['Connection', 'keep-alive'], ['ETag', '"a-b"']), undefined],
    ['hop-by-hop dropped', raw(['Keep-Alive', 'timeout=5'], ['Transfer-Encoding', 'chunked'], ['TE', 'trailers'], ['Trailer', 'x'], ['Upgrade', 'h2c'], ['Proxy-Connection', 'x'], ['X-A', '1']), undefined],
    ['Connection names dropped', raw(['Connection', 'close, X-Secret'], ['X-Secret', 's'], ['x-kept', 'k']), undefined],
    ['two Connection headers', raw(['Connection', 'X-One'], ['Connection', 'X-Two'], ['X-One', '1'], ['X-Two', '2'], ['X-Three', '3']), undefined],
    ['duplicates kept in order', raw(['Set-Cookie', 'a=1'], ['X-A', '1'], ['Set-Cookie', 'b=2'], ['set-cookie', 'c=3']), undefined],
    ['queued replaces every value', raw(['Set-Cookie', 'a=1'], ['X-A', '1'], ['Set-Cookie', 'b=2']), ['set-cookie', 'q=1']],
    ['queued added', raw(['X-A', '1']), ['access-control-allow-origin', '*', 'vary', 'Origin']],
    ['queued twice: the last wins', raw(['X-A', '1']), ['x-b', '1', 'x-b', '2', 'x-a', '3']],
    ['queued hop-by-hop and Connection', raw(['X-A', '1'], ['X-B', '2']), ['transfer-encoding', 'chunked', 'connection', 'x-b']],
    ['queued name listed by Connection', raw(['Connection', 'x-q'], ['X-A', '1']), ['x-q', 'v']],
    ['odd names and latin1 values', raw(['X-Ünï', 'caf\xe9'], ['__proto__', 'p'], ['X-Empty', '']), undefined],
  ];
  for (const [name, input, queued] of cases) {
    it(name, () => {
      const flat = flatRawHeaders(input, queued);
      assert.deepEqual(fields(flat), fields(viaObject(input, queued)));
      // Values of one name keep the upstream's order.
      assert.equal(flat.length % 2, 0);
    });
  }

  it('keeps the upstream order of the names', () => {
    assert.deepEqual(flatRawHeaders(raw(['B', '1'], ['A', '2'], ['C', '3']), ['a', 'q', 'd', '4']), ['b', '1', 'a', 'q', 'c', '3', 'd', '4']);
  });
});

describe('editedRawHeaders: response header hooks on the raw list, as writeReply applies onResponse (ADR 0071)', () => {
  // One hook, written twice as a policy writes it: on a Reply's object and on the raw list.
  const hook: PolicyInstance = {
    onResponse(_ex, reply) {
      const h = reply.headers;
      const v = h['x-a'];
      h['x-a'] = v === undefined ? 'added' : Array.isArray(v) ? [...v, 'added'] : [String(v), 'added'];
      h.connection = 'x-hidden';
      h['x-set'] = 'set';
      delete h['x-gone'];
    },
    onResponseHeaders(_ex, _status, list) {
      headerListAdd(list, 'x-a', 'added');
      headerListSet(list, 'connection', 'x-hidden');
      headerListSet(list, 'x-set', 'set');
      headerListRemove(list, 'x-gone');
    },
  };
  const failing: PolicyInstance = {
    onResponse() {
      throw new Error('boom');
    },
    onResponseHeaders() {
      throw new Error('boom');
    },
  };
  const logged: string[] = [];
  const logger = { error: (msg: string) => logged.push(msg), warn() {}, info() {}, debug() {} } as unknown as Logger;
  const cases: [string, Buffer[], string[] | undefined][] = [
    ['plain answer', raw(['Content-Type', 'text/plain'], ['X-A', '1'], ['X-Gone', 'g'], ['X-A', '2']), undefined],
    ['upstream Connection replaced by the hook', raw(['Connection', 'X-B'], ['X-B', 'b'], ['X-Hidden', 'h'], ['Keep-Alive', 'timeout=5']), undefined],
    ['queued after the hooks', raw(['X-Set', 'upstream'], ['Vary', 'a']), ['x-set', 'queued', 'vary', 'Origin']],
  ];
  for (const [name, input, queued] of cases) {
    it(name, () => {
      const ex = { queued, route: { key: 'r' }, rawReplyHeaders: undefined } as unknown as ExchangeImpl;
      const flat = editedRawHeaders(ex, 200, input, [hook, failing], logger);
      const headers: Record<string, string | string[] | undefined> = parseHeaders(input);
      const reply = { status: 200, headers, body: null } as unknown as Reply;
      hook.onResponse!(ex, reply);
      assert.deepEqual(fields(flat), fields(viaObject([], queued, headers)));
      assert.ok(Array.isArray(ex.rawReplyHeaders), 'the edited list is kept for the access log');
    });
    it(`${name}: the lean client's strings, edited in place`, () => {
      const strings = input.map((b) => b.toString('latin1'));
      const ex = { queued, route: { key: 'r' }, rawReplyHeaders: undefined } as unknown as ExchangeImpl;
      const flat = editedRawHeaders(ex, 200, strings, [hook, failing], logger);
      const headers: Record<string, string | string[] | undefined> = parseHeaders(input);
      hook.onResponse!(ex, { status: 200, headers, body: null } as unknown as Reply);
      assert.deepEqual(fields(flat), fields(viaObject([], queued, headers)));
      assert.equal(ex.rawReplyHeaders, strings, 'no copy: the list the hooks edited is the one kept');
    });
  }
  it('a hook that throws is logged and skipped', () => {
    assert.ok(logged.length >= cases.length);
    assert.ok(logged.every((m) => m === 'response hook failed'));
  });
});
