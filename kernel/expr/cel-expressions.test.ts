import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { defineAttribute } from '../sdk/index.ts';
import type { Exchange } from '../sdk/index.ts';
import { ExchangeImpl } from '../runtime/exchange-impl.ts';
import { CelExpressions } from './cel-expressions.ts';
import { parseCIDR, parseIP } from './cel-ip.ts';

/** A kernel exchange over a stand-in client request (CEL reads attributes only from exchanges the kernel made). */
function fakeExchange(attrs: Record<string, unknown> = {}): Exchange {
  const socket = Object.assign(new EventEmitter(), { remoteAddress: '10.1.2.3', remotePort: 51234 });
  const headers = { 'x-user': 'alice', host: 'example.com' };
  const req = Object.assign(new EventEmitter(), { method: 'GET', url: '/items?a=1&b=2&a=3', headers, rawHeaders: ['x-user', 'alice', 'Host', 'example.com'], socket }) as unknown as IncomingMessage;
  const ex = new ExchangeImpl(req, undefined, 'http', 'example.com', '/items', '?a=1&b=2&a=3', 0);
  for (const [name, value] of Object.entries(attrs)) ex.set(defineAttribute(name), value);
  return ex;
}

const cel = new CelExpressions(['jwt']);
const run = (source: string, ex: Exchange = fakeExchange()): unknown => cel.compile(source, ['x']).evaluate(ex);

describe('IP and CIDR parsing', () => {
  it('parses IPv4, IPv6 and IPv4-mapped IPv6 (as IPv4)', () => {
    assert.equal(parseIP('10.1.2.3')?.toString(), '10.1.2.3');
    assert.equal(parseIP('::1')?.toString(), '::1');
    assert.equal(parseIP('2001:DB8:0:0:0:0:0:1')?.toString(), '2001:db8::1');
    assert.equal(parseIP('::ffff:1.2.3.4')?.toString(), '1.2.3.4');
    assert.equal(parseIP('::ffff:1.2.3.4')?.family, 4);
    assert.equal(parseIP('64:ff9b::1.2.3.4')?.toString(), '64:ff9b::102:304');
    assert.equal(parseIP('::')?.toString(), '::');
    assert.equal(parseIP('1:0:0:1:0:0:0:1')?.toString(), '1:0:0:1::1');
    for (const bad of ['', '1.2.3', '1.2.3.4.5', '256.1.1.1', '01.2.3.4', '1::2::3', ':::', 'fe80::1%eth0', '1:2:3:4:5:6:7:8:9', 'g::1', '1.2.3.4/8', ' 1.2.3.4']) {
      assert.equal(parseIP(bad), undefined, bad);
    }
  });

  it('parses CIDRs and tests containment across families', () => {
    const c = parseCIDR('10.0.0.0/8')!;
    assert.equal(c.containsIP(parseIP('10.255.0.1')!), true);
    assert.equal(c.containsIP(parseIP('11.0.0.1')!), false);
    assert.equal(c.containsIP(parseIP('::ffff:10.9.9.9')!), true);
    assert.equal(parseCIDR('::ffff:10.0.0.0/104')!.toString(), '10.0.0.0/8');
    assert.equal(parseCIDR('::ffff:0:0/96')!.containsIP(parseIP('192.0.2.1')!), true);
    assert.equal(parseCIDR('2001:db8::/32')!.containsIP(parseIP('2001:db8:ffff::1')!), true);
    assert.equal(parseCIDR('2001:db8::/32')!.containsIP(parseIP('2001:db9::1')!), false);
    assert.equal(parseCIDR('2001:db8::/32')!.containsIP(parseIP('10.0.0.1')!), false);
    assert.equal(parseCIDR('10.1.2.3/12')!.masked().toString(), '10.0.0.0/12');
    assert.equal(parseCIDR('0.0.0.0/0')!.containsIP(parseIP('8.8.8.8')!), true);
    for (const bad of ['10.0.0.0', '10.0.0.0/33', '10.0.0.0/-1', '10.0.0.0/08', '::/129', 'x/8']) assert.equal(parseCIDR(bad), undefined, bad);
  });
});

describe('CEL environment', () => {
  it('cidr().containsIP() with a string, an ip() value and source.address', () => {
    assert.equal(run('cidr("10.0.0.0/8").containsIP(source.address)'), true);
    assert.equal(run('cidr("192.168.0.0/16").containsIP(source.address)'), false);
    assert.equal(run('cidr("10.0.0.0/8").containsIP(ip("10.0.0.1"))'), true);
    assert.equal(run('cidr("10.0.0.0/8").containsIP("::ffff:10.0.0.1")'), true);
    assert.equal(run('cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")'), true);
    assert.equal(run('cidr("10.1.0.0/16").containsCIDR(cidr("10.0.0.0/8"))'), false);
    assert.equal(run('cidr("10.1.2.3/8").masked() == cidr("10.0.0.0/8")'), true);
    assert.equal(run('string(cidr("10.1.2.3/8").ip())'), '10.1.2.3');
    assert.equal(run('cidr("10.1.2.3/8").prefixLength()'), 8n);
    assert.throws(() => run('cidr("10.0.0.0/8").containsIP("not-an-ip")'), /invalid IP address/);
    assert.throws(() => run('cidr("nope")'), /invalid CIDR/);
  });

  it('ip(), isIP(), isCIDR() and the address predicates', () => {
    assert.equal(run('isIP("::1") && !isIP("1.2.3") && isCIDR("::/0") && !isCIDR("1.2.3.4")'), true);
    assert.equal(run('ip("::1").family()'), 6n);
    assert.equal(run('ip("::ffff:1.2.3.4").family()'), 4n);
    assert.equal(run('ip("127.0.0.2").isLoopback() && ip("::1").isLoopback() && !ip("10.0.0.1").isLoopback()'), true);
    assert.equal(run('ip("0.0.0.0").isUnspecified() && ip("::").isUnspecified()'), true);
    assert.equal(run('ip("169.254.1.1").isLinkLocalUnicast() && ip("fe80::1").isLinkLocalUnicast()'), true);
    assert.equal(run('ip("224.0.0.251").isLinkLocalMulticast() && ip("ff02::fb").isLinkLocalMulticast()'), true);
    assert.equal(run('ip("8.8.8.8").isGlobalUnicast() && !ip("224.0.0.1").isGlobalUnicast() && !ip("255.255.255.255").isGlobalUnicast()'), true);
    assert.equal(run('ip("1.2.3.4") == ip("::ffff:1.2.3.4")'), true);
    assert.equal(run('string(ip("2001:db8:0::1"))'), '2001:db8::1');
  });

  it('helpers: default, base64, url, replace, regexReplace, uuid, random, fail', () => {
    assert.equal(run('default(request.headers["x-missing"], "anon")'), 'anon');
    assert.equal(run('default(request.headers["x-user"], "anon")'), 'alice');
    assert.equal(run('default(jwt.sub, "nobody")', fakeExchange({ jwt: {} })), 'nobody');
    assert.equal(run('base64.encode("hi")'), 'aGk=');
    assert.equal(run('base64.encode(b"hi")'), 'aGk=');
    assert.equal(run('string(base64.decode("aGk="))'), 'hi');
    assert.equal(run('url.encode("a b/c")'), 'a%20b%2Fc');
    assert.equal(run('url.decode("a%20b")'), 'a b');
    assert.equal(run('"a-b-c".replace("-", "+")'), 'a+b+c');
    assert.equal(run('"v1.2.3".regexReplace("[0-9]+", "N")'), 'vN.N.N');
    assert.equal(run('"alice@example.com".regexReplace("^([^@]+)@.*$", "$1")'), 'alice');
    assert.match(String(run('uuid()')), /^[0-9a-f-]{36}$/);
    const r = run('random()') as number;
    assert.ok(r >= 0 && r < 1);
    assert.throws(() => run('fail("no way")'), /no way/);
  });

  it('request and source variables', () => {
    assert.equal(run('request.method == "GET" && request.path == "/items" && request.host == "example.com"'), true);
    assert.equal(run('request.uri'), '/items?a=1&b=2&a=3');
    assert.equal(run('request.query["a"]'), '1');
    assert.equal(run('source.port == 51234 && source.port > 1024'), true);
    assert.equal(run('jwt.sub == "bob"', fakeExchange({ jwt: { sub: 'bob' } })), true);
  });

  it('request and source are read as they are at each evaluation (built lazily, never kept between evaluations)', () => {
    const ex = fakeExchange();
    const path = cel.compile('request.path', ['x']);
    assert.equal(path.evaluate(ex), '/items');
    ex.path = '/rewritten';
    assert.equal(path.evaluate(ex), '/rewritten', 'a rewrite by an earlier policy is seen');
    const noQuery = fakeExchange();
    noQuery.query = '';
    assert.equal(cel.compile('size(request.query) == 0 && request.uri == "/items"', ['x']).evaluate(noQuery), true);
    assert.equal(cel.compile('source.address', ['x']).evaluate(ex), '10.1.2.3');
    assert.equal(cel.compile('jwt.sub == "t" && request.method == "GET"', ['x']).evaluate(ex, { jwt: { sub: 't' } }), true, 'extra variables');
  });

  it('reports the checked type and rejects unknown variables and functions at compile time', () => {
    assert.equal(cel.compile('request.path == "/"', []).type, 'bool');
    assert.equal(cel.compile('request.path', []).type, 'dyn');
    assert.throws(() => cel.compile('nosuch.x', ['p']), /unknown variable `nosuch`/);
    assert.throws(() => cel.compile('nosuch("x")', ['p']), /invalid CEL expression/);
    assert.throws(() => cel.compile('cidr(1)', ['p']), /invalid CEL expression/);
  });

  it('definitions() lists variables with origin and functions with signatures and descriptions', () => {
    const d = cel.definitions();
    assert.deepEqual(d.variables.map((v) => `${v.name}:${v.origin}`), ['request:gateway', 'source:gateway', 'response:gateway', 'jwt:attribute']);
    const sigs = new Map(d.functions.map((f) => [f.signature, f]));
    assert.equal(sigs.get('net.CIDR.containsIP(string): bool')?.origin, 'gateway');
    assert.equal(sigs.get('base64.encode(string): string')?.name, 'base64.encode');
    assert.equal(sigs.get('default(expr, expr): dyn')?.origin, 'gateway');
    assert.equal(sigs.get('string.startsWith(string): bool')?.origin, 'standard');
    for (const f of d.functions) if (f.origin === 'gateway') assert.ok(f.description.length > 0, f.signature);
  });
});

describe('CEL integers are 64-bit and bytes become strings only as UTF-8 (docs/adr/0160)', () => {
  it('an overflow of unary minus, /, % or int(double) is an evaluation error, static or dyn', () => {
    for (const source of [
      '-(-9223372036854775808)', '-dyn(-9223372036854775808)', '-9223372036854775808 / -1', 'dyn(-9223372036854775808) / -1',
      '-9223372036854775808 % -1', 'int(1e300)', 'int(dyn(1e300))', 'int(9223372036854775807.0)', 'int(-9223372036854775808.0)',
      '9223372036854775807 + 1', '-9223372036854775808 - 1', '9223372036854775807 * 2',
      '[1].map(x, -(-9223372036854775808))', 'cel.bind(a, -9223372036854775808, -a)',
    ]) {
      assert.throws(() => run(source), (err: Error) => err.name === 'EvaluationError' && /integer overflow/.test(err.message), source);
    }
  });

  it('values inside the range are unchanged', () => {
    assert.equal(run('-9223372036854775807 - 1'), -(2n ** 63n));
    assert.equal(run('-(-9223372036854775807)'), 2n ** 63n - 1n);
    assert.equal(run('-7 / 2'), -3n);
    assert.equal(run('-7 % 3'), -1n);
    assert.equal(run('-9223372036854775808 % 2'), 0n);
    assert.equal(run('int(-1.9)'), -1n);
    assert.equal(run('int(9223372036854774784.0)'), 9223372036854774784n);
    assert.deepEqual(run('[1, 2].map(x, -x)'), [-1n, -2n]);
  });

  it('an int literal past 64 bits is refused at load, where it is written; -9223372036854775808 is the one negated exception', () => {
    // CEL's INT_LIT takes its sign: `-(...)` negates a literal out of range already, as does a binary minus.
    for (const [source, at] of [
      ['9223372036854775808', 0], ['size(request.path) == 0x8000000000000000', 22], ['-9223372036854775809 < 0', 1],
      ['-(9223372036854775808)', 2], ['-(0x8000000000000000)', 2], ['1 -9223372036854775808', 3], ['-( 9223372036854775808 )', 3],
    ] as const) {
      assert.throws(() => cel.compile(source, ['p']), (err: Error & { issues?: { valueOffset?: number }[] }) => {
        assert.match(err.message, /integer literal \d+ is out of range/);
        assert.equal(err.issues?.[0]?.valueOffset, at, source);
        return true;
      });
    }
    assert.equal(run('-9223372036854775808'), -(2n ** 63n));
    assert.equal(run('-0x8000000000000000'), -(2n ** 63n));
    assert.equal(run('- 9223372036854775808'), -(2n ** 63n), "cel-go's grammar: a `-` token, then the digits");
    assert.equal(run('[-9223372036854775808][0]'), -(2n ** 63n));
  });

  it('timestamp() reads RFC 3339 as cel-go does: any fraction with Z or an offset; nothing else', () => {
    // Before: a fraction past milliseconds with an offset was refused (cel-js read only 20-30 characters).
    for (const [source, iso] of [
      ['timestamp("2023-01-01T00:00:00.123456+01:00")', '2022-12-31T23:00:00.123Z'],
      ['timestamp("2023-01-01T00:00:00.123456789-05:30")', '2023-01-01T05:30:00.123Z'],
      ['timestamp("2023-01-01T00:00:00.123456789Z")', '2023-01-01T00:00:00.123Z'],
      ['timestamp("2023-01-01T00:00:00.1234567891Z")', '2023-01-01T00:00:00.123Z'],
      ['timestamp("2023-01-01T00:00:00.5Z")', '2023-01-01T00:00:00.500Z'],
      ['timestamp(dyn("2024-02-29T23:59:59+00:00"))', '2024-02-29T23:59:59.000Z'],
    ]) {
      assert.equal((run(source) as Date).toISOString(), iso, source);
    }
    assert.equal(run('timestamp("2023-01-01T00:00:00.25Z").getMilliseconds()'), 250n);
    // Before: `Date` took each of these (Feb 30 as March 2, hour 24 as the next day).
    for (const text of ['2023-02-30T00:00:00Z', '2023-02-29T00:00:00Z', '2023-01-01T24:00:00Z', '2023-01-01 00:00:00Z', '2023-01-01t00:00:00z',
      '+002023-01-01T00:00:00Z', '2023-01-01T00:00:00.Z', '2023-01-01T00:00:00', '2023-01-01T00:00:00+24:00', '2023-01-01T00:00:60Z']) {
      assert.throws(() => run(`timestamp("${text}")`), /requires an RFC 3339 timestamp/, text);
    }
  });

  it('a timestamp past 9999-12-31 (or before year 1) and a duration over 10000 years are errors', () => {
    for (const source of [
      'timestamp("9999-12-31T23:59:59Z") + duration("1s")', 'timestamp("0001-01-01T00:00:00Z") - duration("1s")',
      'duration("1s") + timestamp("9999-12-31T23:59:59Z")', 'duration("315576000001s")', 'duration("315576000000s") + duration("1s")',
      '-315576000000 > 0 || duration("-315576000000s") - duration("1s") > duration("0s")',
    ]) {
      assert.throws(() => run(source), /timestamp overflow|duration overflow/, source);
    }
    assert.equal(String(run('duration("315576000000s")')), '315576000000s');
    assert.equal((run('timestamp("9999-12-31T23:59:58Z") + duration("1s")') as Date).toISOString(), '9999-12-31T23:59:59.000Z');
    assert.equal(run('"a" + "b"'), 'ab');
    assert.equal(run('1 - 2'), -1n);
  });

  it('string() of bytes that are not UTF-8 is an error, not U+FFFD', () => {
    for (const source of ['string(b"\\xff")', 'b"a\\xc3".string()', 'string(dyn(b"\\xff"))', 'string(base64.decode("/w=="))']) {
      assert.throws(() => run(source), /bytes are not valid UTF-8/, source);
    }
    assert.equal(run('string(b"\\xc3\\xa9")'), '\u00e9');
    assert.equal(run('b"hi".string()'), 'hi');
    assert.equal(run('string(b"")'), '');
  });
});
