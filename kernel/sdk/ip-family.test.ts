import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import { ipFamily } from './ip-family.ts';

/** How many times Node's IPv6 pattern (the only ~1,400-character one it runs for `isIP`) ran during `run`. */
function ipv6PatternRuns(run: () => void): number {
  // Node's isIPv6 calls RegExp.prototype.test through its primordials, which looks `exec` up on the prototype once it
  // is not the built-in one.
  const exec = RegExp.prototype.exec;
  let runs = 0;
  RegExp.prototype.exec = function (this: RegExp, s: string) {
    if (this.source.length > 1000 && this.source.includes('[0-9a-fA-F]{1,4}')) runs++;
    return exec.call(this, s);
  };
  try {
    run();
  } finally {
    RegExp.prototype.exec = exec;
  }
  return runs;
}

describe('ipFamily', () => {
  const cases: readonly [string, 0 | 4 | 6][] = [
    ['127.0.0.1', 4],
    ['0.0.0.0', 4],
    ['255.255.255.255', 4],
    ['256.1.1.1', 0],
    ['1.2.3', 0],
    ['1.2.3.4.', 0],
    [' 1.2.3.4', 0],
    ['::', 6],
    ['::1', 6],
    ['1::', 6],
    ['2001:db8::8a2e:370:7334', 6],
    ['::ffff:192.0.2.1', 6],
    ['fe80::1%eth0', 6],
    ['FE80::ABCD', 6],
    [':::', 0],
    ['gggg::1', 0],
    ['1:2:3:4:5:6:7:8:9', 0],
    ['[::1]', 0],
    ['127.0.0.1:8080', 0],
    ['localhost', 0],
    ['api.openai.com', 0],
    ['ratelimit.default.svc.cluster.local', 0],
    ['', 0],
  ];

  it("answers as net.isIP does: 4, 6 or 0", () => {
    for (const [s, family] of cases) {
      assert.equal(ipFamily(s), family, JSON.stringify(s));
      assert.equal(ipFamily(s), isIP(s), `${JSON.stringify(s)}: as net.isIP`);
    }
  });

  it("does not run Node's IPv6 pattern on a string without ':' (net.isIP does)", () => {
    const names = ['localhost', 'api.openai.com', '127.0.0.1', '256.1.1.1', ''];
    assert.ok(ipv6PatternRuns(() => names.forEach((s) => isIP(s))) > 0, 'the probe sees net.isIP run the IPv6 pattern');
    assert.equal(ipv6PatternRuns(() => names.forEach((s) => ipFamily(s))), 0);
    assert.equal(ipv6PatternRuns(() => ipFamily('::1')), 1, 'an IPv6 candidate is checked by the pattern');
  });
});
