import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fullPreset } from '../../plugins/presets/full.ts';
import { compileError, compileValue, routeWithPolicies, summarize, yaml } from './helpers.ts';

// A variable set only where one policy evaluates its own expressions (`mcp`, `llmRequest`), or only once the `ai`
// backend made its call (`llm`), used where it is never set loaded fine and then failed on every request: an allow
// rule denied everyone, a deny rule let everyone through. Such a use is a load error at the name (ADR 0176).

const options = { preset: fullPreset };
const AI_BACKEND = ['- ai: { name: openai, provider: { openAI: {} } }'];
const MCP_BACKEND = ['- mcp: { targets: [{ name: t, mcp: { host: "127.0.0.1:9" } }] }'];

async function refused(text: string, name: string, path: string, at?: string): Promise<string> {
  const issues = summarize((await compileError(text, options)).issues);
  assert.equal(issues.length, 1, JSON.stringify(issues));
  assert.match(issues[0]!.message, new RegExp(`\`${name}\` is not available`), issues[0]!.message);
  assert.equal(issues[0]!.path, path);
  if (at !== undefined) assert.equal(issues[0]!.at, at);
  return issues[0]!.message;
}

const ROUTE = 'binds[0].listeners[0].routes[0].policies';

describe('CEL: variables used where they are never set (ADR 0176)', () => {
  it('`mcp` in an authorization rule, even on an MCP route: only mcpAuthorization rules see it', async () => {
    const message = await refused(
      routeWithPolicies(['authorization:', '  rules:', '  - request.path == "/x"', '  - mcp.tool.name == "echo"'], MCP_BACKEND),
      'mcp',
      `${ROUTE}.authorization.rules[1]`,
      'test.yaml:9:19',
    );
    assert.match(message, /mcpAuthorization/);
    await refused(routeWithPolicies(['authorization:', '  rules:', '  - \'has(mcp.tool)\'']), 'mcp', `${ROUTE}.authorization.rules[0]`);
  });

  it('`llm` and `llmRequest` in an authorization rule, even on an ai route', async () => {
    await refused(routeWithPolicies(['authorization:', '  rules:', '  - \'llm.requestModel == "gpt-4o"\''], AI_BACKEND), 'llm', `${ROUTE}.authorization.rules[0]`);
    await refused(routeWithPolicies(['authorization:', '  rules:', '  - \'llmRequest.model == "gpt-4o"\''], AI_BACKEND), 'llmRequest', `${ROUTE}.authorization.rules[0]`);
  });

  it('`llmGuards` before the guards ran: authorization, request transformations, ai.transformations (ADR 0181)', async () => {
    const message = await refused(routeWithPolicies(['authorization:', '  rules:', '  - \'!has(llmGuards.request)\''], AI_BACKEND), 'llmGuards', `${ROUTE}.authorization.rules[0]`);
    assert.match(message, /prompt guards/);
    await refused(routeWithPolicies(['transformations:', '  request:', '    add: { x-g: \'string(size(llmGuards.request))\' }'], AI_BACKEND), 'llmGuards', `${ROUTE}.transformations.request.add.x-g`);
    await refused(routeWithPolicies(['ai:', '  transformations:', '    user: \'string(size(llmGuards.request))\''], AI_BACKEND), 'llmGuards', `${ROUTE}.ai.transformations.user`);
    await compileValue(routeWithPolicies(['transformations:', '  response:', '    set: { x-g: \'has(llmGuards.request) ? "guarded" : "no"\' }'], AI_BACKEND), options);
  });

  it('mcpAuthorization reads `mcp`, never `llmRequest` or `llm`', async () => {
    await compileValue(routeWithPolicies(['mcpAuthorization:', '  rules:', '  - \'mcp.tool.name == "echo" || has(mcp.prompt)\''], MCP_BACKEND), options);
    await refused(routeWithPolicies(['mcpAuthorization:', '  rules:', '  - \'llmRequest.model == "x"\''], MCP_BACKEND), 'llmRequest', `${ROUTE}.mcpAuthorization.rules[0]`);
    const llm = await refused(routeWithPolicies(['mcpAuthorization:', '  rules:', '  - \'llm.provider == "x"\''], MCP_BACKEND), 'llm', `${ROUTE}.mcpAuthorization.rules[0]`);
    assert.match(llm, /only an `ai` backend sets it/);
  });

  it('mcpAuthorization in front of a backend that is not `mcp`: its rules would never run', async () => {
    const err = await compileError(routeWithPolicies(['mcpAuthorization:', '  rules:', '  - \'mcp.tool.name == "echo"\'']), options);
    const issues = summarize(err.issues);
    assert.equal(issues.length, 1, JSON.stringify(issues));
    assert.equal(issues[0]!.path, `${ROUTE}.mcpAuthorization`);
    assert.match(issues[0]!.message, /only an `mcp` backend applies it/);
    // An empty rule list allows everything, so it needs no backend.
    await compileValue(routeWithPolicies(['mcpAuthorization: { rules: [] }']), options);
  });

  it('transformations: none of the three in request headers; `llm` in response headers of an ai route', async () => {
    await refused(routeWithPolicies(['transformations:', '  request:', '    set: { x-tool: mcp.tool.name }']), 'mcp', `${ROUTE}.transformations.request.set.x-tool`);
    await refused(routeWithPolicies(['transformations:', '  request:', '    add: { x-model: llm.requestModel }'], AI_BACKEND), 'llm', `${ROUTE}.transformations.request.add.x-model`);
    await refused(routeWithPolicies(['transformations:', '  response:', '    set: { x-model: llmRequest.model }'], AI_BACKEND), 'llmRequest', `${ROUTE}.transformations.response.set.x-model`);
    await refused(routeWithPolicies(['transformations:', '  response:', '    set: { x-tool: mcp.tool.name }'], MCP_BACKEND), 'mcp', `${ROUTE}.transformations.response.set.x-tool`);
    await compileValue(routeWithPolicies(['transformations:', '  response:', '    set: { x-model: \'default(llm.responseModel, "")\' }'], AI_BACKEND), options);
  });

  it('transformations: `llm` in response headers of a route whose backend is not `ai`', async () => {
    const err = await compileError(routeWithPolicies(['transformations:', '  response:', '    add: { x-tokens: string(llm.totalTokens) }']), options);
    const issues = summarize(err.issues);
    assert.equal(issues.length, 1, JSON.stringify(issues));
    assert.equal(issues[0]!.path, `${ROUTE}.transformations.response.add.x-tokens`);
    assert.match(issues[0]!.message, /only an `ai` backend sets `llm`/);
    // A macro variable of that name is not the variable.
    await compileValue(routeWithPolicies(['transformations:', '  response:', '    add: { x-n: \'string(["a"].map(llm, llm + "b").size())\' }']), options);
  });

  it('extAuthz path and remoteRateLimit descriptors', async () => {
    await refused(
      routeWithPolicies(['extAuthz:', '  host: 127.0.0.1:9', '  protocol: { http: { path: \'"/check/" + llm.requestModel\' } }'], AI_BACKEND),
      'llm',
      `${ROUTE}.extAuthz.protocol.http.path`,
    );
    await refused(
      routeWithPolicies(['remoteRateLimit:', '  host: 127.0.0.1:9', '  domain: d', '  descriptors: [{ entries: [{ key: tool, value: mcp.tool.name }] }]'], MCP_BACKEND),
      'mcp',
      `${ROUTE}.remoteRateLimit.descriptors[0].entries[0].value`,
    );
    await refused(
      routeWithPolicies(['remoteRateLimit:', '  host: 127.0.0.1:9', '  domain: d', '  descriptors: [{ type: tokens, entries: [{ key: tool, value: mcp.tool.name }] }]'], AI_BACKEND),
      'mcp',
      `${ROUTE}.remoteRateLimit.descriptors[0].entries[0].value`,
    );
  });

  it('the ai policy: `llmRequest` yes, `mcp` no, `llm` only where documented', async () => {
    await compileValue(routeWithPolicies(['ai:', '  transformations: { max_tokens: "llmRequest.max_tokens > 1024 ? 1024 : llmRequest.max_tokens" }'], AI_BACKEND), options);
    await refused(routeWithPolicies(['ai:', '  transformations: { user: mcp.tool.name }'], AI_BACKEND), 'mcp', `${ROUTE}.ai.transformations.user`);
    await refused(routeWithPolicies(['ai:', '  transformations: { user: llm.provider }'], AI_BACKEND), 'llm', `${ROUTE}.ai.transformations.user`);
    const vm = (when: string) => routeWithPolicies(['ai:', '  virtualModels:', `    smart: { targets: [{ backend: openai, model: gpt-4o, when: '${when}' }] }`], AI_BACKEND);
    await compileValue(vm('llmRequest.max_tokens * 2 > 1000 && llm.promptTokens > 10 && llm.requestModel == "smart"'), options);
    await refused(vm('mcp.tool.name == "x"'), 'mcp', `${ROUTE}.ai.virtualModels.smart.targets[0].when`);
  });

  it('config.logging reads `llm` and `response`, never `mcp` or `llmRequest`', async () => {
    const logging = (expr: string): string =>
      yaml('config:', '  logging:', '    fields:', '      add:', `        x: '${expr}'`, 'binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - backends: [{ host: "127.0.0.1:9" }]');
    await compileValue(logging('default(llm.inputTokens, 0) + response.code'), options);
    await refused(logging('mcp.tool.name'), 'mcp', 'config.logging.fields.add.x', 'test.yaml:5:13');
    await refused(logging('llmRequest.model'), 'llmRequest', 'config.logging.fields.add.x');
    const filter = yaml('config:', '  logging:', '    filter: has(mcp.tool)', 'binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - backends: [{ host: "127.0.0.1:9" }]');
    await refused(filter, 'mcp', 'config.logging.filter');
  });
});
