import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { headerListAdd, headerListGet, headerListHas, headerListRemove, headerListSet } from './header-list.ts';
import type { HeaderMap } from './reply.ts';

/** Per name, its values in order (what a client sees of a header, whatever the order between names). */
function fieldsOfList(list: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i < list.length; i += 2) (out[list[i]!] ??= []).push(list[i + 1]!);
  return out;
}
function fieldsOfMap(map: HeaderMap): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name in map) {
    const v = map[name];
    if (v !== undefined) out[name] = Array.isArray(v) ? [...v] : [String(v)];
  }
  return out;
}
function mapOf(list: string[]): HeaderMap {
  const map: HeaderMap = {};
  for (let i = 0; i < list.length; i += 2) {
    const v = map[list[i]!];
    map[list[i]!] = v === undefined ? list[i + 1]! : Array.isArray(v) ? [...v, list[i + 1]!] : [String(v), list[i + 1]!];
  }
  return map;
}

describe('header list helpers: the HeaderMap operations on a flat list', () => {
  it('get and has read like the object', () => {
    const list = ['a', '1', 'b', '2', 'a', '3'];
    assert.deepEqual(headerListGet(list, 'a'), ['1', '3']);
    assert.equal(headerListGet(list, 'b'), '2');
    assert.equal(headerListGet(list, 'c'), undefined);
    assert.ok(headerListHas(list, 'b'));
    assert.ok(!headerListHas(list, 'c'));
  });

  it('set replaces every value where the name first appears; add appends after the last; remove drops all', () => {
    const list = ['a', '1', 'b', '2', 'a', '3'];
    headerListAdd(list, 'a', '4');
    assert.deepEqual(list, ['a', '1', 'b', '2', 'a', '3', 'a', '4']);
    headerListSet(list, 'a', 'x');
    assert.deepEqual(list, ['a', 'x', 'b', '2']);
    headerListAdd(list, 'c', 'new');
    headerListSet(list, 'd', 'new');
    headerListRemove(list, 'b');
    assert.deepEqual(list, ['a', 'x', 'c', 'new', 'd', 'new']);
  });

  it('random sequences of operations leave the same fields as on a HeaderMap', () => {
    let seed = 7;
    const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    const names = ['a', 'b', 'c', 'vary'];
    for (let round = 0; round < 200; round++) {
      const list: string[] = [];
      for (let i = rnd(6); i > 0; i--) list.push(names[rnd(4)]!, `v${rnd(9)}`);
      const map = mapOf(list);
      for (let op = 0; op < 6; op++) {
        const name = names[rnd(4)]!;
        const value = `o${op}`;
        const kind = rnd(3);
        if (kind === 0) {
          headerListAdd(list, name, value);
          const existing = map[name];
          if (existing === undefined) map[name] = value;
          else if (Array.isArray(existing)) existing.push(value);
          else map[name] = [String(existing), value];
        } else if (kind === 1) {
          headerListSet(list, name, value);
          map[name] = value;
        } else {
          headerListRemove(list, name);
          delete map[name];
        }
        assert.deepEqual(fieldsOfList(list), fieldsOfMap(map));
        assert.deepEqual(headerListGet(list, name), map[name]);
      }
    }
  });
});
