import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttributeKey, CompileContext, CompiledExpression, Exchange, ExpressionCompiler } from 'switchyard/sdk';
import { MCP_AUTHORIZER } from '../../lib/mcp/authorizer.ts';
import type { McpAuthorizer } from '../../lib/mcp/authorizer.ts';
import { compileMcpAuthorization, mcpVariable } from './mcp-authorization.ts';

// A stand-in compiler for a few fixed rules, reading the `mcp` variable the policy passes as `extra`.
type Mcp = { tool?: { name: string; target: string }; prompt?: { name: string; target: string }; resource?: { uri: string }; method?: string };
const RULES: Record<string, (mcp: Mcp, jwt: Record<string, unknown> | undefined) => unknown> = {
  'tool is echo': (m) => m.tool!.name === 'echo',
  'prompt': (m) => m.prompt !== undefined,
  'deny target b': (m) => (m.tool ?? m.prompt)!.target === 'b',
  'admin': (_m, jwt) => jwt!.role === 'admin',
};
const compiler: ExpressionCompiler = {
  compile(source): CompiledExpression {
    const rule = RULES[source];
    if (!rule) throw new Error(`unknown test rule ${source}`);
    return { source, evaluate: (ex, extra) => rule((extra as { mcp: Mcp }).mcp, (ex as FakeExchange).jwt) };
  },
};
const ctx = { expr: compiler, fail: (m: string) => { throw new Error(m); } } as unknown as CompileContext;

interface FakeExchange extends Exchange {
  jwt?: Record<string, unknown>;
}
function exchange(jwt?: Record<string, unknown>): FakeExchange {
  const attrs = new Map<string, unknown>();
  return {
    jwt,
    get: <T>(k: AttributeKey<T>) => attrs.get(k.name) as T | undefined,
    set: <T>(k: AttributeKey<T>, v: T) => void attrs.set(k.name, v),
  } as unknown as FakeExchange;
}
function authorizer(configs: Parameters<typeof compileMcpAuthorization>[0][], ex = exchange()): McpAuthorizer | undefined {
  for (const c of configs) compileMcpAuthorization(c, ctx).onRequest?.(ex);
  return ex.get(MCP_AUTHORIZER);
}

describe('mcpAuthorization', () => {
  it('builds the mcp variable per item kind', () => {
    assert.deepEqual(mcpVariable({ kind: 'tool', target: 't', name: 'echo' }), { tool: { name: 'echo', target: 't' } });
    assert.deepEqual(mcpVariable({ kind: 'prompt', target: 't', name: 'p' }), { prompt: { name: 'p', target: 't' } });
    assert.deepEqual(mcpVariable({ kind: 'resource', target: 't', name: 'demo://a' }), { resource: { uri: 'demo://a', name: 'demo://a', target: 't' } });
    const withMethod = { kind: 'tool', target: 't', name: 'x', method: 'tools/call' } as const;
    assert.deepEqual(mcpVariable(withMethod), { tool: { name: 'x', target: 't' }, method: 'tools/call', methodName: 'tools/call' });
  });

  it('an empty rule list sets no authorizer (everything allowed)', () => {
    assert.equal(authorizer([{ rules: [] }]), undefined);
  });

  it('allows by any rule; an erroring rule counts false, so a tool-only rule hides prompts', () => {
    const auth = authorizer([{ rules: ['tool is echo'] }])!;
    assert.equal(auth({ kind: 'tool', target: 'a', name: 'echo' }), true);
    assert.equal(auth({ kind: 'tool', target: 'a', name: 'add' }), false);
    assert.equal(auth({ kind: 'prompt', target: 'a', name: 'p' }), false, 'mcp.tool is absent for a prompt: the rule errors');
    const both = authorizer([{ rules: ['tool is echo', 'prompt'] }])!;
    assert.equal(both({ kind: 'prompt', target: 'a', name: 'p' }), true);
  });

  it('reads the request attributes (jwt) next to mcp', () => {
    assert.equal(authorizer([{ rules: ['admin'] }], exchange({ role: 'admin' }))!({ kind: 'tool', target: 'a', name: 'x' }), true);
    assert.equal(authorizer([{ rules: ['admin'] }], exchange({ role: 'user' }))!({ kind: 'tool', target: 'a', name: 'x' }), false);
  });

  it('concatenates levels: a deny at any level denies, allows OR across levels', () => {
    const auth = authorizer([{ rules: ['tool is echo'] }, { rules: ['prompt', { deny: 'deny target b' }] }])!;
    assert.equal(auth({ kind: 'tool', target: 'a', name: 'echo' }), true);
    assert.equal(auth({ kind: 'prompt', target: 'a', name: 'p' }), true);
    assert.equal(auth({ kind: 'tool', target: 'b', name: 'echo' }), false);
  });
});
