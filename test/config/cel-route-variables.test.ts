// ADR 0179: `jwt`, `apiKey`, `key` and `basicAuth` are set only by a route's own policies (jwtAuth or
// mcpAuthentication, apiKey, virtualKeys, basicAuth). Read on a route with none of them, an expression loaded and
// then failed on every request (an allow rule denied everyone, a deny rule let everyone through): a load error.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import { fullPreset } from '../../plugins/presets/full.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { compileError, compileValue, routeWithPolicies, summarize, yaml } from './helpers.ts';

const options = { preset: fullPreset };
const ROUTE = 'binds[0].listeners[0].routes[0]';
const MCP_BACKEND = ['- mcp: { targets: [{ name: t, mcp: { host: "127.0.0.1:9" } }] }'];
const AI_BACKEND = ['- ai: { name: openai, provider: { openAI: {} } }'];

async function refused(text: string, name: string, path: string): Promise<string> {
  const issues = summarize((await compileError(text, options)).issues);
  assert.equal(issues.length, 1, JSON.stringify(issues));
  assert.match(issues[0]!.message, new RegExp(`\`${name}\` is not available on this route`), issues[0]!.message);
  assert.equal(issues[0]!.path, path);
  return issues[0]!.message;
}

describe('CEL: variables only a route policy sets, read on a route without one (ADR 0179)', () => {
  let jwtAuth: string;
  let mcpAuthentication: string;
  const apiKey = 'apiKey: { keys: [{ key: k-1, metadata: { team: a } }] }';
  const virtualKeys = 'virtualKeys: { store: { sqlite: { path: ":memory:" } } }';
  let basicAuth: string;
  before(async () => {
    const dir = testTempDir('switchyard-route-vars-');
    const { publicKey } = await generateKeyPair('RS256', { extractable: true });
    const jwks = join(dir, 'jwks.json');
    writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k', alg: 'RS256', use: 'sig' }] }));
    jwtAuth = `jwtAuth: { issuer: "https://issuer.test", jwks: { file: "${jwks}" } }`;
    writeFileSync(join(dir, 'users'), 'alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n');
    basicAuth = `basicAuth: { htpasswd: { file: "${join(dir, 'users')}" } }`;
    mcpAuthentication = `mcpAuthentication: { issuer: "https://issuer.test", audiences: [api], jwks: { file: "${jwks}" }, mode: strict }`;
  });

  it('`jwt` in an authorization rule without jwtAuth or mcpAuthentication; with an apiKey policy the hint names `apiKey`', async () => {
    const bare = await refused(routeWithPolicies(['authorization:', '  rules:', '  - \'jwt.sub == "alice"\'']), 'jwt', `${ROUTE}.policies.authorization.rules[0]`);
    assert.match(bare, /only a `jwtAuth` or `mcpAuthentication` policy of the route sets it, and the route has none/);
    assert.doesNotMatch(bare, /did you mean/);
    const hinted = await refused(routeWithPolicies([apiKey, 'authorization:', '  rules:', '  - \'jwt.team == "a"\'']), 'jwt', `${ROUTE}.policies.authorization.rules[0]`);
    assert.match(hinted, /did you mean `apiKey`, which its `apiKey` policy sets\?/);
  });

  it('`apiKey`, `key` and `basicAuth` likewise; each loads with its policy', async () => {
    await refused(routeWithPolicies(['authorization:', '  rules:', '  - \'apiKey.team == "a"\'']), 'apiKey', `${ROUTE}.policies.authorization.rules[0]`);
    await refused(routeWithPolicies([jwtAuth, 'transformations:', '  request:', '    set: { x-team: key.team }']), 'key', `${ROUTE}.policies.transformations.request.set.x-team`);
    await refused(routeWithPolicies(['authorization:', '  rules:', '  - \'basicAuth.username == "alice"\'']), 'basicAuth', `${ROUTE}.policies.authorization.rules[0]`);
    await compileValue(routeWithPolicies([apiKey, 'authorization:', '  rules:', '  - \'apiKey.team == "a"\'']), options);
    await compileValue(routeWithPolicies([virtualKeys, 'transformations:', '  request:', '    set: { x-team: key.team }']), options);
    await compileValue(routeWithPolicies([basicAuth, 'authorization:', '  rules:', '  - \'basicAuth.username == "alice"\'']), options);
  });

  it('`jwt` loads with jwtAuth or mcpAuthentication, in the route policies, its backends\' and its MCP targets\'', async () => {
    await compileValue(routeWithPolicies([jwtAuth, 'authorization:', '  rules:', '  - \'jwt.sub == "alice"\'']), options);
    await compileValue(routeWithPolicies([mcpAuthentication, 'authorization:', '  rules:', '  - \'jwt.sub == "alice"\''], MCP_BACKEND), options);
    // Policy order in the map does not matter: the setter may come after the rule.
    await compileValue(routeWithPolicies(['authorization:', '  rules:', '  - \'jwt.sub == "alice"\'', jwtAuth]), options);
    await compileValue(routeWithPolicies([jwtAuth], ['- host: 127.0.0.1:9', '  policies: { authorization: { rules: [\'jwt.sub == "alice"\'] } }']), options);
    await compileValue(
      routeWithPolicies([mcpAuthentication], ['- mcp: { targets: [{ name: t, mcp: { host: "127.0.0.1:9" }, policies: { mcpAuthorization: { rules: [\'jwt.sub == "alice"\'] } } }] }']),
      options,
    );
    // A backend's rule on a route without a setter is refused where the route uses it.
    await refused(
      routeWithPolicies(['cors: {}'], ['- host: 127.0.0.1:9', '  policies: { authorization: { rules: [\'jwt.sub == "alice"\'] } }']),
      'jwt',
      `${ROUTE}.backends[0].policies.authorization.rules[0]`,
    );
  });

  it('a named backend reading `jwt` is judged on the routes that use it; `config.logging` is not a route', async () => {
    const named = (policies: string[]): string =>
      yaml(
        'backends:',
        '  - name: api',
        '    host: 127.0.0.1:9',
        '    policies: { authorization: { rules: [\'jwt.sub == "alice"\'] } }',
        'binds:',
        '  - port: 8080',
        '    listeners:',
        '      - routes:',
        '          - policies: {' + policies.join(', ') + '}',
        '            backends: [{ backend: api }]',
      );
    await compileValue(named([jwtAuth]), options);
    await refused(named(['cors: {}']), 'jwt', `${ROUTE}.backends[0].policies.authorization.rules[0]`);
    await compileValue(yaml('config:', '  logging:', '    fields:', '      add: { user: jwt.sub }', routeWithPolicies(['cors: {}'])), options);
  });

  it('a virtualModels condition reads `llm.requestModel` and `llm.promptTokens`, not what the backend sets later', async () => {
    // Before: `llm.inputTokens` loaded and failed on every request, so its target was always left out.
    const vm = (when: string) => routeWithPolicies(['ai:', '  virtualModels:', `    smart: { targets: [{ backend: openai, model: gpt-4o, when: '${when}' }] }`], AI_BACKEND);
    const at = `${ROUTE}.policies.ai.virtualModels.smart.targets[0].when`;
    const issues = async (when: string) => summarize((await compileError(vm(when), options)).issues);
    const tokens = await issues('llm.inputTokens > 1000');
    assert.deepEqual(tokens.map((i) => [i.path, i.at]), [[at, 'test.yaml:8:79']]);
    assert.match(tokens[0]!.message, /`llm\.inputTokens` is not available in a `virtualModels` condition: .*; did you mean `llm\.promptTokens`\?/);
    assert.match((await issues('has(llm.cost) && llm.cost > 1.0'))[0]!.message, /`llm\.cost` is not available/);
    assert.match((await issues('llm["outputTokens"] > 1'))[0]!.message, /`llm\.outputTokens` is not available/);
    assert.match((await issues('llm.responseModel == "x"'))[0]!.message, /did you mean `llm\.requestModel`\?/);
    await compileValue(vm('llm.promptTokens > 10 && llm.requestModel == "smart" && [1].all(llm, llm > 0)'), options);
  });

  it('a `type: tokens` descriptor reads the call about to be made: `llm.provider`, `llm.requestModel`, `llm.promptTokens`', async () => {
    // Before: `llm.inputTokens` loaded and failed on every call, so the limit counted nothing.
    const tokens = (value: string) =>
      routeWithPolicies(['remoteRateLimit:', '  host: 127.0.0.1:9', '  domain: d', `  descriptors: [{ type: tokens, entries: [{ key: k, value: '${value}' }] }]`], AI_BACKEND);
    const issues = summarize((await compileError(tokens('string(llm.inputTokens)'), options)).issues);
    assert.equal(issues.length, 1, JSON.stringify(issues));
    assert.equal(issues[0]!.path, `${ROUTE}.policies.remoteRateLimit.descriptors[0].entries[0].value`);
    assert.match(issues[0]!.message, /`llm\.inputTokens` is not available in `type: tokens` descriptors: .*; did you mean `llm\.promptTokens`\?/);
    await compileValue(tokens('llm.provider + "/" + llm.requestModel + "/" + string(llm.promptTokens)'), options);
  });
});
