// cors's two response hooks do the same (ADR 0071): `onResponse` on a Reply's header object, `onResponseHeaders` on
// the raw list of an answer the kernel forwards directly.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CompileContext, Exchange, HeaderMap, Reply } from 'switchyard/sdk';
import { applyHeaderModifier, applyHeaderModifierToList, compileHeaderModifier } from '../../lib/header-modifier/header-modifier.ts';
import type { HeaderModifier } from '../../lib/header-modifier/header-modifier.ts';
import { compileCors } from './cors.ts';

function mapOf(list: string[]): HeaderMap {
  const map: HeaderMap = {};
  for (let i = 0; i < list.length; i += 2) {
    const v = map[list[i]!];
    map[list[i]!] = v === undefined ? list[i + 1]! : Array.isArray(v) ? [...v, list[i + 1]!] : [String(v), list[i + 1]!];
  }
  return map;
}
/** Per name, its values in order. */
function fields(headers: HeaderMap | string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) (out[headers[i]!] ??= []).push(headers[i + 1]!);
    return out;
  }
  for (const name in headers) {
    const v = headers[name];
    if (v !== undefined) out[name] = Array.isArray(v) ? [...v] : [String(v)];
  }
  return out;
}

const answers: string[][] = [
  ['content-type', 'text/plain'],
  ['vary', 'Accept-Encoding', 'x-a', '1'],
  ['vary', 'Accept', 'x-a', '1', 'vary', 'Accept-Language'],
  ['vary', 'origin'],
  ['access-control-allow-origin', '*', 'vary', 'Accept'],
  ['x-a', '1', 'x-powered-by', 'up', 'x-a', '2', 'x-served-by', 'up'],
];

describe('cors: onResponseHeaders edits the raw list as onResponse edits the reply', () => {
  const cors = compileCors({ allowOrigins: ['https://app.example'] }, {} as CompileContext);
  for (const origin of ['https://app.example', 'https://other.example', undefined]) {
    for (const answer of answers) {
      it(`${origin ?? 'no origin'}: ${answer.join(' ')}`, () => {
        const ex = { headers: origin ? { origin } : {} } as unknown as Exchange;
        const reply = { status: 200, headers: mapOf(answer), body: null } as unknown as Reply;
        const list = [...answer];
        cors.onResponse!(ex, reply);
        cors.onResponseHeaders!(ex, 200, list);
        assert.deepEqual(fields(list), fields(reply.headers));
      });
    }
  }
});

describe('header modifier: the list edit matches the object edit', () => {
  const m = compileHeaderModifier({ add: { 'x-a': 'added', 'x-new': 'n' }, set: { 'x-served-by': 'gw', vary: 'Origin' }, remove: ['x-powered-by', 'x-absent'] }) as HeaderModifier;
  for (const answer of answers) {
    it(answer.join(' '), () => {
      const headers = mapOf(answer);
      const list = [...answer];
      applyHeaderModifier(m, headers);
      applyHeaderModifierToList(m, list);
      assert.deepEqual(fields(list), fields(headers));
    });
  }
});
