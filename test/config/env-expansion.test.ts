import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileError, compileValue, headlines, summarize, yaml } from './helpers.ts';

// `${VAR}` and `${VAR:-default}` are expanded inside scalar values (issue 2 "Config", BEHAVIOUR.md §2.0);
// positions stay those of the file the user wrote.

type Bind = { port: number; listeners: { name?: string; hostname?: string; routes: { name?: string; policies?: Record<string, unknown> }[] }[] };
const binds = (value: Record<string, unknown>): Bind[] => value.binds as Bind[];

describe('environment expansion', () => {
  it('`${VAR}` as a whole plain scalar takes the type YAML would give it: a port becomes a number', async () => {
    const value = await compileValue(yaml('binds:', '  - port: ${GW_PORT}', '    listeners: []'), { env: { GW_PORT: '9123' } });
    assert.equal(binds(value)[0]!.port, 9123);
  });

  it('a plain `${VAR}` takes only scalar types from YAML: a value with ` #` or `: ` is kept whole, as a string', async () => {
    const text = yaml('binds:', '  - port: 8080', '    listeners:', '      - name: ${NAME}', '        routes: []');
    for (const name of ['tok #frag', 'a: b', '[x]', '- y', '{z}', 'true-ish']) {
      assert.equal(binds(await compileValue(text, { env: { NAME: name } }))[0]!.listeners[0]!.name, name, name);
    }
  });

  it('`${VAR:-default}` uses the default when the variable is unset', async () => {
    const value = await compileValue(yaml('binds:', '  - port: ${GW_PORT:-8088}', '    listeners: []'), { env: {} });
    assert.equal(binds(value)[0]!.port, 8088);
  });

  it('`${VAR:-default}` uses the default when the variable is empty, and the variable when set', async () => {
    const text = yaml('binds:', '  - port: ${GW_PORT:-8088}', '    listeners: []');
    assert.equal(binds(await compileValue(text, { env: { GW_PORT: '' } }))[0]!.port, 8088);
    assert.equal(binds(await compileValue(text, { env: { GW_PORT: '7001' } }))[0]!.port, 7001);
  });

  it('expands inside a longer string, several references per scalar', async () => {
    const text = yaml(
      'binds:',
      '  - port: 8080',
      '    listeners:',
      '      - name: ${ENV_NAME}-${REGION:-eu}-main',
      '        hostname: api.${DOMAIN}',
      '        routes: []',
    );
    const value = await compileValue(text, { env: { ENV_NAME: 'prod', DOMAIN: 'example.com' } });
    assert.equal(binds(value)[0]!.listeners[0]!.name, 'prod-eu-main');
    assert.equal(binds(value)[0]!.listeners[0]!.hostname, 'api.example.com');
  });

  it('quoted scalars stay strings, so a quoted port is still a type error, at the quoted value', async () => {
    const text = yaml('binds:', '  - port: "${GW_PORT}"', '    listeners: []');
    const err = await compileError(text, { env: { GW_PORT: '9123' } });
    assert.deepEqual(headlines(err), ['test.yaml:2:11: must be an integer, got a string (from `${GW_PORT}`) (at binds[0].port) [SWY_ERR_CONFIG_SCHEMA]']);
  });

  it('a quoted number-like value stays a string where a string is expected', async () => {
    const text = yaml('binds:', '  - port: 8080', '    listeners:', "      - name: '${LISTENER}'", '        routes: []');
    const value = await compileValue(text, { env: { LISTENER: '0012' } });
    assert.equal(binds(value)[0]!.listeners[0]!.name, '0012');
  });

  it('an unset variable without default is an error at its scalar, naming the variable and the config path', async () => {
    const text = yaml('binds:', '  - port: 8080', '    listeners:', '      - hostname: ${GW_HOSTNAME}', '        routes: []');
    const err = await compileError(text, { env: { OTHER: 'x' } });
    assert.deepEqual(summarize(err.issues), [
      {
        at: 'test.yaml:4:19',
        path: 'binds[0].listeners[0].hostname',
        code: 'SWY_ERR_CONFIG_ENV',
        message: 'environment variable `GW_HOSTNAME` is not set (write `${GW_HOSTNAME:-default}` to give a default)',
      },
    ]);
    assert.match(err.message, /^test\.yaml:4:19: environment variable `GW_HOSTNAME` is not set/);
    assert.match(err.issues[0]!.frame, /> 4 \|       - hostname: \$\{GW_HOSTNAME\}\n {4}\| {19}\^/);
  });

  it('every unset variable is reported, each at its own place', async () => {
    const text = yaml('binds:', '  - port: ${NO_PORT}', '    listeners:', '      - name: "${NO_A}/${NO_B}"', '        routes: []');
    const err = await compileError(text, { env: {} });
    assert.deepEqual(
      summarize(err.issues).map((i) => `${i.at} ${i.path} ${i.message.split(' is not set')[0]}`),
      ['test.yaml:2:11 binds[0].port environment variable `NO_PORT`', 'test.yaml:4:15 binds[0].listeners[0].name environment variable `NO_A`, `NO_B`'],
    );
  });

  it('`$${` writes a literal `${` and is not expanded', async () => {
    const text = yaml(
      'binds:',
      '  - port: 8080',
      '    listeners:',
      '      - routes:',
      '          - policies:',
      '              directResponse:',
      '                status: 200',
      '                body: "cost: $${AMOUNT} and ${AMOUNT}"',
    );
    const value = await compileValue(text, { env: { AMOUNT: '5' } });
    const policies = binds(value)[0]!.listeners[0]!.routes[0]!.policies!;
    assert.deepEqual(policies.directResponse, { status: 200, body: 'cost: ${AMOUNT} and 5' });
  });

  it('`$${VAR}` needs no variable to be set', async () => {
    const text = yaml('binds:', '  - port: 8080', '    listeners:', '      - name: $${NOT_SET}', '        routes: []');
    const value = await compileValue(text, { env: {} });
    assert.equal(binds(value)[0]!.listeners[0]!.name, '${NOT_SET}');
  });

  it('a default may contain `}` escaped and spaces', async () => {
    const text = yaml('binds:', '  - port: 8080', '    listeners:', '      - name: "${NAME:-a b\\\\}c}"', '        routes: []');
    const value = await compileValue(text, { env: {} });
    assert.equal(binds(value)[0]!.listeners[0]!.name, 'a b}c');
  });

  it('a value from the environment is data, not config: a plain `${VAR}` holding YAML does not inject keys', async () => {
    // The expanded text is read as one scalar's value, so `8080\nlisteners: ...` cannot add sibling keys.
    const text = yaml('binds:', '  - port: ${GW_PORT}', '    listeners: []');
    const err = await compileError(text, { env: { GW_PORT: '8080\nextra: 1' } });
    assert.equal(err.issues[0]!.path, 'binds[0].port');
    assert.equal(err.issues.length, 1);
  });

  it('a comment with `${...}` (the yaml-language-server header) is not expanded', async () => {
    const text = yaml('# yaml-language-server: $schema=${SCHEMA_URL}', 'binds:', '  - port: 8080', '    listeners: []');
    const value = await compileValue(text, { env: {} });
    assert.equal(binds(value)[0]!.port, 8080);
  });

  describe('in flow style and JSON (ADR 0160)', () => {
    it('a plain `${VAR}` in a flow mapping or sequence is a scalar typed as in block style', async () => {
      for (const text of [yaml('binds: [{port: ${GW_PORT}, listeners: []}]'), yaml('binds:', '  - {port: ${GW_PORT:-1}, listeners: []}'), '{"binds": [{"port": ${GW_PORT}, "listeners": []}]}\n']) {
        assert.equal(binds(await compileValue(text, { env: { GW_PORT: '9123' } }))[0]!.port, 9123, text);
      }
      const flags = await compileValue(yaml('binds: [{port: 80, listeners: [{name: "${N}", routes: [{name: ${N}x}, {name: $${N}}]}]}]'), { env: { N: 'a, b}' } });
      assert.equal(binds(flags)[0]!.listeners[0]!.name, 'a, b}', 'the value is data: its `,` and `}` end nothing');
      assert.equal(binds(flags)[0]!.listeners[0]!.routes[0]!.name, 'a, b}x');
      assert.equal(binds(flags)[0]!.listeners[0]!.routes[1]!.name, '${N}', '`$${` writes `${` in flow style too');
    });

    it('a quoted one stays a string, and errors keep file:line:col', async () => {
      const quoted = await compileError('{"binds": [{"port": "${GW_PORT}", "listeners": []}]}\n', { env: { GW_PORT: '9123' } });
      assert.deepEqual(headlines(quoted), ['test.yaml:1:21: must be an integer, got a string (from `${GW_PORT}`) (at binds[0].port) [SWY_ERR_CONFIG_SCHEMA]']);
      const unset = await compileError(yaml('binds:', '  - {port: ${NO_PORT}, listeners: []}'), { env: {} });
      assert.deepEqual(summarize(unset.issues).map((i) => `${i.at} ${i.path}`), ['test.yaml:2:12 binds[0].port']);
      assert.match(unset.issues[0]!.frame, /> 2 \|   - \{port: \$\{NO_PORT\}, listeners: \[\]\}/);
      const wrong = await compileError(yaml('binds: [{port: ${P}, listeners: [], nope: ${P}}]'), { env: { P: '80' } });
      assert.match(headlines(wrong)[0]!, /^test\.yaml:1:37: unknown key `nope`/);
      const syntax = await compileError(yaml('binds: [{port: ${P}, listeners: []]'), { env: { P: '80' } });
      assert.match(headlines(syntax)[0]!, /^test\.yaml:1:\d+: YAML syntax error/);
      assert.ok(!/[\uE000-\uEFFF]/.test(syntax.message), 'no placeholder shows');
    });

    it('a comment keeps its `${...}`, and a default with a backslash or quote is read as before', async () => {
      const text = yaml('# $schema=${SCHEMA_URL}', 'binds:', "  - port: 8080", '    listeners:', '      - name: "${NAME:-a b\\\\}c}"', "        routes: [{name: '${R:-it''s}'}]");
      const value = await compileValue(text, { env: {} });
      assert.equal(binds(value)[0]!.listeners[0]!.name, 'a b}c');
      assert.equal(binds(value)[0]!.listeners[0]!.routes[0]!.name, "it's");
    });
  });
});
