// The MCP conformance suite (`@modelcontextprotocol/conformance server`) against server-everything directly and
// through the gateway, in `npm test` (issue 10 "Done when": conformance counts through the gateway not lower).
// The same runs as `npm run conformance` (test/conformance/run.ts), asserted scenario by scenario.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Run } from '../conformance/suite.ts';
import { runEverythingBothWays } from '../conformance/everything.ts';

describe('MCP conformance through the gateway', { timeout: 180_000 }, () => {
  let direct: Run;
  let through: Run;

  before(async () => {
    ({ direct, through } = await runEverythingBothWays());
  });

  it('the suite ran against the upstream directly and every failure there is in its baseline', () => {
    assert.ok(direct.passed > 0, direct.summary);
    assert.ok(direct.scenarios.size > 10, direct.summary);
    assert.equal(direct.exitCode, 0, direct.summary);
  });

  it('through the gateway every failure is in the gateway baseline and no fewer checks pass', () => {
    assert.equal(through.exitCode, 0, through.summary);
    assert.ok(through.passed >= direct.passed, `direct ${direct.passed} passed, gateway ${through.passed}\n${through.summary}`);
  });

  it('every scenario passes through the gateway at least as many checks as directly', () => {
    const passedOf = (counts: string | undefined): number => Number(/^(\d+) passed/.exec(counts ?? '')?.[1] ?? -1);
    for (const [name, counts] of direct.scenarios) {
      assert.ok(passedOf(through.scenarios.get(name)) >= passedOf(counts), `${name}: direct ${counts}, gateway ${through.scenarios.get(name) ?? 'not run'}`);
    }
  });
});
