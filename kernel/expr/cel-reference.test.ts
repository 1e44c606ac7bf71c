// The reference gateway's CEL functions Switchyard provides, the run-time budget, the size bounds and the
// load-time name check (docs/adr/0145). test/e2e/cel-reference.test.ts runs the same on a live gateway.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../sdk/index.ts';
import { MAX_STEPS } from './cel-budget.ts';
import { CelExpressions } from './cel-expressions.ts';

const cel = new CelExpressions(['jwt']);
/** Evaluate with `vars` as claims: `jwt.h` (attribute variables are maps of dyn). */
const run = (source: string, vars: Record<string, unknown> = {}): unknown => cel.compile(source, ['x'], true).evaluateIn({ jwt: vars });
const list = (n: number): string => Array.from({ length: n }, (_, i) => `g${i}`).join(',');

function compileError(source: string): ConfigError {
  try {
    cel.compile(source, ['x']);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  assert.fail(`\`${source}\` compiled`);
}

describe('reference functions', () => {
  it('json parses text and bytes; whole numbers are int (exact), others double; bad JSON is an error', () => {
    assert.equal(run('json(\'{"a": {"b": [1, 2.5]}}\').a.b[0]'), 1n);
    assert.equal(run('json(\'{"a": {"b": [1, 2.5]}}\').a.b[1]'), 2.5);
    assert.equal(run('json(\'{"n": 9007199254740993}\').n'), 9007199254740993n);
    assert.equal(run('json(b\'[true]\')[0]'), true);
    assert.equal(run('json(\'{"constructor": 1, "__proto__": 2}\').constructor'), 1n, 'an object key named like a JS internal is an ordinary key');
    assert.throws(() => run('json("{nope")'));
    assert.throws(() => run('json(jwt.h)', { h: `"${'a'.repeat(1024 * 1024)}"` }), /longer than/);
  });

  it('toJson writes ints exactly, bytes as base64, maps as objects; a huge value is refused before it is written', () => {
    assert.equal(run('toJson({"a": [1, true, "x", b"hi", 9223372036854775807, null, 1.5]})'), '{"a":[1,true,"x","aGk=",9223372036854775807,null,1.5]}');
    assert.equal(run('toJson(ip("::ffff:10.0.0.1"))'), '"10.0.0.1"');
    const h = 'x'.repeat(40_000);
    const t0 = performance.now();
    assert.throws(() => run('toJson(jwt.l.split(",").map(e, jwt.h))', { l: list(2000), h }), /longer than/);
    assert.ok(performance.now() - t0 < 500);
  });

  it('with binds the receiver; merge, filterKeys, removeKeys, mapValues work on maps', () => {
    assert.equal(run('"ab".with(s, s + s)'), 'abab');
    assert.equal(run('json(\'{"a": 1, "b": 2}\').with(b, b.a + b.b)'), 3n);
    assert.deepEqual(Object.fromEntries(run('{"a": 2, "k": "v"}.merge({"a": 3})') as Map<string, unknown>), { a: 3n, k: 'v' });
    assert.deepEqual(Object.fromEntries(run('{"a": 1, "b": 2}.filterKeys(k, k == "a")') as Map<string, unknown>), { a: 1n });
    assert.deepEqual(Object.fromEntries(run('{"a": 1, "b": 2}.removeKeys(k, k == "a")') as Map<string, unknown>), { b: 2n });
    assert.deepEqual(Object.fromEntries(run('{"a": 1, "b": 2}.mapValues(v, v * 10)') as Map<string, unknown>), { a: 10n, b: 20n });
    assert.throws(() => cel.compile('{"a": 1}.filterKeys(k, 1)', ['x']), /predicate must be a bool/);
    assert.throws(() => cel.compile('"s".filterKeys(k, true)', ['x']), /needs a map/);
  });

  it('charAt, stripPrefix, stripSuffix as the strings extension', () => {
    assert.equal(run('"héllo".charAt(1)'), 'é');
    assert.equal(run('"abc".charAt(3)'), '');
    assert.throws(() => run('"abc".charAt(4)'), /out of range/);
    assert.equal(run('"/v1/x".stripPrefix("/v1")'), '/x');
    assert.equal(run('"/v1/x".stripPrefix("/v2")'), '/v1/x');
    assert.equal(run('"a.json".stripSuffix(".json")'), 'a');
  });

  it('regexReplace expands the replacement as the reference: $0, $1, ${1}, ${name}, $$; $1x names group `1x`', () => {
    assert.equal(run('"/v1/items".regexReplace("[a-z]+$", "<$0>")'), '/v1/<items>');
    assert.equal(run('"a-b".regexReplace("(?<x>[a-z])", "${x}${1}$$")'), 'aa$-bb$');
    assert.equal(run('"ab".regexReplace("(a)", "${1}x")'), 'axb');
    assert.equal(run('"ab".regexReplace("(a)", "$1x")'), 'b');
    assert.equal(run('"/id/1234/data".regexReplace("/id/[0-9]*/", "/id/{id}/")'), '/id/{id}/data');
  });

  it('base64.decode refuses text that is not base64', () => {
    assert.equal(run('string(base64.decode("aGk"))'), 'hi');
    assert.throws(() => run('base64.decode("!!!")'), /invalid base64/);
    assert.throws(() => run('base64.decode("a")'), /invalid base64/);
  });
});

describe('run-time bounds', () => {
  it('nested macros over a client-sized list stop within the budget, and the next evaluation starts afresh', () => {
    const expr = cel.compile('cel.bind(l, jwt.h.split(","), l.all(a, l.all(b, l.exists(c, c == a))))', ['x']);
    const t0 = performance.now();
    assert.throws(() => expr.evaluateIn({ jwt: { h: list(3000) } }), /expression stopped/);
    assert.ok(performance.now() - t0 < 500, `stopped after ${(performance.now() - t0).toFixed(0)} ms`);
    assert.equal(expr.evaluateIn({ jwt: { h: 'a,b,c' } }), true);
  });

  it('a costly step is stopped by time, and a quantifier does not keep going once the budget is spent', () => {
    const big = list(8000);
    const t0 = performance.now();
    assert.throws(() => run('jwt.h.split(",").exists(a, jwt.h.split(",").size() == 0)', { h: big }), /expression stopped/);
    assert.ok(performance.now() - t0 < 500);
  });

  it('default() does not turn a stopped evaluation into its fallback (a deny rule would be skipped)', () => {
    const bomb = 'cel.bind(l, jwt.h.split(","), l.exists(a, l.exists(b, a + b == "zz")))';
    assert.throws(() => run(`default(${bomb}, false)`, { h: list(3000) }), { name: 'ExpressionStopped' });
    assert.equal(run(`default(${bomb}, true)`, { h: 'a,b' }), false);
    assert.equal(run('default(jwt.missing, "fallback")'), 'fallback');
  });

  it('one pass over a 100k-item list fits the budget; the budget is counted in items', () => {
    const groups = Array.from({ length: 100_000 }, (_, i) => `g${i}`);
    assert.equal(run('jwt.groups.exists(g, g == "g99999")', { groups }), true);
    assert.equal(run('jwt.groups.map(g, g).size()', { groups }), 100_000n);
    assert.throws(() => run('jwt.mapValues(v, v)', Object.fromEntries(Array.from({ length: MAX_STEPS + 1 }, (_, i) => [`k${i}`, i]))), /expression stopped/);
  });

  it('join, replace and regexReplace refuse results that multiply a client\'s input', () => {
    const h = 'x,'.repeat(20_000);
    assert.throws(() => run('jwt.h.split(",").map(e, jwt.h).join("")', { h }), /join\(\): result longer/);
    assert.throws(() => run('jwt.h.replace(",", jwt.h)', { h }), /replacement result longer/);
    assert.throws(() => run('jwt.h.regexReplace(",", jwt.h)', { h }), /replacement result longer/);
    assert.equal(run('["a", "b"].join("-")'), 'a-b');
    assert.equal(run('["a", "b"].join()'), 'ab');
    assert.equal(run('"a/b".replace("/", "//")'), 'a//b');
  });
});

describe('names checked at load', () => {
  const cases: readonly (readonly [string, RegExp, number])[] = [
    ['request.headres["x"] == "a"', /`request` has no field `headres`; did you mean `headers`\?/, 8],
    ['has(source.adress)', /`source` has no field `adress`; did you mean `address`\?/, 11],
    ['requst.path', /unknown variable `requst`; did you mean `request`\?/, 0],
    ['request.path.startWith("/")', /unknown function `startWith`; did you mean `startsWith`\?/, 13],
    ['sise(request.path) > 1', /unknown function `sise`; did you mean `size`\?/, 0],
    ['base64.encod("x")', /unknown function `base64\.encod`; did you mean `base64\.encode`\?/, 0],
    ['backend.name == "b"', /`backend` is a variable of the reference gateway that Switchyard does not provide/, 0],
    ['size(request.body) > 0', /`request\.body` is a field of the reference gateway/, 13],
    ['math.greatest(1, 2) == 2', /`math\.greatest\(\)` is a function of the reference gateway/, 0],
    ['regexReplace(request.path, "a", "b")', /write it as a method/, 0],
    ['request.headers.all(k, v, v == "x")', /two-variable form `all\(key, value, predicate\)`/, 16],
    ['[1].map(x, x).size() + x', /unknown variable `x`/, 23],
    ['request.headers.x-user == "a"', /`x-user` reads as a subtraction; write a name with a dash as an index: `\["x-user"\]`/, 16],
  ];
  for (const [source, message, offset] of cases) {
    it(`\`${source}\``, () => {
      const err = compileError(source);
      assert.match(err.message, message);
      assert.equal(err.issues[0]?.valueOffset, offset);
    });
  }

  it('bound names, namespaces and macros are not flagged', () => {
    for (const ok of ['cel.bind(x, 1, x + 1) == 2', '[1].all(x, x > 0)', 'base64.encode("a") != ""', 'optional.of(1).hasValue()', 'request.headers.filterKeys(k, k == "a").size() >= 0', 'jwt.anything == 1', 'has(source.subjectCn)', 'request.pathAndQuery != request.version']) {
      assert.doesNotThrow(() => cel.compile(ok, ['x']), ok);
    }
  });

  it('a syntax error points at its place in the expression', () => {
    assert.equal(compileError('request.path ==').issues[0]?.valueOffset, 15);
  });
});
