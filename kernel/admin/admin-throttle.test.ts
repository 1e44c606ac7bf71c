import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Logger } from '../sdk/index.ts';
import { BLOCK_MS, CredentialThrottle, MAX_FAILURES, WINDOW_MS, clientKey } from './admin-throttle.ts';

function throttle(): { t: CredentialThrottle; warnings: string[]; advance: (ms: number) => void } {
  const warnings: string[] = [];
  let now = 1_000;
  const logger: Logger = { warn: (m) => void warnings.push(m), info: () => undefined, debug: () => undefined, error: () => undefined, isEnabled: () => true, child: () => logger };
  return { t: new CredentialThrottle(logger, () => now), warnings, advance: (ms) => (now += ms) };
}

const fail = (t: CredentialThrottle, address: string, times: number): void => {
  for (let i = 0; i < times; i++) t.record(address, false);
};

describe('CredentialThrottle (ADR 0160)', () => {
  it('refuses an address after MAX_FAILURES within the window, for BLOCK_MS, with Retry-After in whole seconds', () => {
    const { t, warnings, advance } = throttle();
    fail(t, '10.0.0.1', MAX_FAILURES - 1);
    assert.equal(t.refusal('10.0.0.1'), undefined);
    fail(t, '10.0.0.1', 1);
    assert.equal(t.refusal('10.0.0.1')?.status, 429);
    assert.equal(t.refusal('10.0.0.1')?.headers?.['retry-after'], String(BLOCK_MS / 1000));
    assert.equal(t.refusal('10.0.0.2'), undefined, 'per address');
    advance(BLOCK_MS - 1500);
    assert.equal(t.refusal('10.0.0.1')?.headers?.['retry-after'], '2');
    advance(1500);
    assert.equal(t.refusal('10.0.0.1'), undefined, 'over after BLOCK_MS');
    assert.equal(warnings.length, 1);
  });

  it('failures spread over more than the window do not add up; a success clears the count', () => {
    const { t, advance } = throttle();
    fail(t, 'a', MAX_FAILURES - 1);
    advance(WINDOW_MS);
    fail(t, 'a', MAX_FAILURES - 1);
    assert.equal(t.refusal('a'), undefined);
    t.record('a', true);
    fail(t, 'a', MAX_FAILURES - 1);
    assert.equal(t.refusal('a'), undefined);
  });

  it('logs once per block, again for a later block', () => {
    const { t, warnings, advance } = throttle();
    fail(t, 'a', MAX_FAILURES * 3);
    assert.equal(warnings.length, 1);
    advance(BLOCK_MS + WINDOW_MS);
    fail(t, 'a', MAX_FAILURES);
    assert.equal(warnings.length, 2);
  });

  it('tracks a bounded number of addresses (those whose window and block are over are forgotten)', () => {
    const { t, advance } = throttle();
    const size = (): number => (t as unknown as { entries: Map<string, unknown> }).entries.size;
    for (let i = 0; i < 10_000; i++) t.record(`x${i}`, false);
    t.record('late', false);
    assert.equal(size(), 10_000, 'full of live entries: the newcomer counts in the shared count');
    advance(WINDOW_MS);
    t.record('later', false);
    assert.equal(size(), 1, 'entries past their window are forgotten');
  });

  it('keeps a blocked address blocked when the table fills past its cap; newcomers then count together', () => {
    const { t, warnings } = throttle();
    fail(t, 'blocked', MAX_FAILURES);
    for (let i = 0; i < 10_050; i++) t.record(`2001:db8:${i.toString(16)}::/64`, false);
    assert.equal(t.refusal('blocked')?.status, 429, 'a blocked entry is never evicted');
    // Full of live entries: failures from untracked addresses add up in one count, so spreading guesses over fresh
    // addresses (/64s of one /48) is refused too.
    assert.equal(t.refusal('2001:db8:ffff::/64')?.status, 429);
    assert.equal(t.refusal('2001:db8:0::/64'), undefined, 'a tracked address keeps its own count');
    assert.match(warnings[1] ?? '', /addresses past the tracked ones/);
  });

  it('counts IPv4 addresses (also IPv4-mapped) one by one, IPv6 ones by their /64', () => {
    const keys: Record<string, string> = {
      '10.1.2.3': '10.1.2.3',
      '::ffff:10.1.2.3': '10.1.2.3',
      '2001:db8:1:2:aaaa::1': '2001:db8:1:2::/64',
      '2001:db8:1:2:bbbb:cccc:dddd:eeee': '2001:db8:1:2::/64',
      '2001:0db8::5': '2001:db8:0:0::/64',
      '::1': '0:0:0:0::/64',
      'fe80::1%eth0': 'fe80:0:0:0::/64',
    };
    for (const [address, key] of Object.entries(keys)) assert.equal(clientKey(address), key, address);
  });
});
