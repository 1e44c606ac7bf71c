import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentCardError, joinPath, pathMapping, rewriteAgentCard, rewriteAgentCardBody, stripPathPrefix } from './agent-card.ts';
import type { CardRequest } from './agent-card.ts';

const at = (clientPath: string, upstreamPath = clientPath, origin = 'https://gw.example.com'): CardRequest => ({ origin, clientPath, upstreamPath });
const v1 = (...urls: string[]) => ({ supportedInterfaces: urls.map((url) => ({ url, protocolBinding: 'JSONRPC' })) });
const urlsOf = (card: Record<string, unknown>) => (card.supportedInterfaces as { url: string }[]).map((i) => i.url);

describe('path helpers', () => {
  it('strips prefixes on segment boundaries only', () => {
    assert.equal(stripPathPrefix('/a/b', '/a'), '/b');
    assert.equal(stripPathPrefix('/a', '/a/'), '');
    assert.equal(stripPathPrefix('/ab', '/a'), undefined);
    assert.equal(stripPathPrefix('/weather-v2/x', '/weather'), undefined);
    assert.equal(stripPathPrefix('/x', ''), '/x');
    assert.equal(stripPathPrefix('/x', '/'), '/x');
  });

  it('joins with exactly one slash', () => {
    assert.equal(joinPath('/a/', '/b'), '/a/b');
    assert.equal(joinPath('', '/b'), '/b');
    assert.equal(joinPath('/a', ''), '/a');
    assert.equal(joinPath('', ''), '/');
  });

  it('reads the swapped prefixes off the card request', () => {
    assert.deepEqual(pathMapping('/agents/echo/.well-known/agent-card.json', '/.well-known/agent-card.json'), { clientPrefix: '/agents/echo', upstreamPrefix: '' });
    assert.deepEqual(pathMapping('/a/x/.well-known/agent.json', '/b/c/x/.well-known/agent.json'), { clientPrefix: '/a', upstreamPrefix: '/b/c' });
    assert.deepEqual(pathMapping('/.well-known/agent.json', '/.well-known/agent.json'), { clientPrefix: '', upstreamPrefix: '' });
    // The client's path as sent, the upstream one as the gateway decoded it: `%2E` is `.` (it mapped the whole path).
    assert.deepEqual(pathMapping('/a/%7Ex/.well-known/agent-card%2Ejson', '/a/~x/.well-known/agent-card.json'), { clientPrefix: '', upstreamPrefix: '' });
  });
});

describe('rewriteAgentCard', () => {
  it('v1.0 without a rewrite: the gateway origin replaces the agent origin, paths and queries kept', () => {
    const card = rewriteAgentCard(v1('http://10.0.0.5:9999/a2a/jsonrpc', 'http://10.0.0.5:9999/a2a/rest?x=1'), at('/.well-known/agent-card.json'));
    assert.deepEqual(urlsOf(card), ['https://gw.example.com/a2a/jsonrpc', 'https://gw.example.com/a2a/rest?x=1']);
  });

  it('v1.0 behind a prefix rewrite: the rewrite is inverted', () => {
    const card = rewriteAgentCard(v1('http://agent:1/a2a/jsonrpc', 'http://agent:1/'), at('/agents/echo/.well-known/agent-card.json', '/.well-known/agent-card.json'));
    assert.deepEqual(urlsOf(card), ['https://gw.example.com/agents/echo/a2a/jsonrpc', 'https://gw.example.com/agents/echo']);
  });

  it('v1.0: the inversion reaches interfaces outside the agent base but under the rewritten prefix', () => {
    // /agents/echo/v1/.well-known/… → /v1/.well-known/…: the JSON-RPC endpoint /rpc is reached at /agents/echo/rpc.
    const card = rewriteAgentCard(v1('http://agent/rpc', 'http://agent/v1/rest'), at('/agents/echo/v1/.well-known/agent-card.json', '/v1/.well-known/agent-card.json'));
    assert.deepEqual(urlsOf(card), ['https://gw.example.com/agents/echo/rpc', 'https://gw.example.com/agents/echo/v1/rest']);
  });

  it('v1.0: a path the rewrite cannot produce is appended to the gateway base', () => {
    const card = rewriteAgentCard(v1('http://agent/other/rpc'), at('/agents/echo/.well-known/agent-card.json', '/internal/echo/.well-known/agent-card.json'));
    // The common tail is `echo/.well-known/…`: `/internal` ↔ `/agents`; /other is under neither.
    assert.deepEqual(urlsOf(card), ['https://gw.example.com/agents/echo/other/rpc']);
  });

  it('v1.0: leaves non-HTTP interface URLs (gRPC host:port) alone and skips entries without url', () => {
    const card = rewriteAgentCard({ supportedInterfaces: [{ url: '10.0.0.5:50051', protocolBinding: 'GRPC' }, { protocolBinding: 'JSONRPC' }, 'junk'] }, at('/.well-known/agent-card.json'));
    assert.deepEqual(card.supportedInterfaces, [{ url: '10.0.0.5:50051', protocolBinding: 'GRPC' }, { protocolBinding: 'JSONRPC' }, 'junk']);
  });

  it('leaves gRPC interfaces as the agent wrote them, https URL or not: the card route gives no gateway address for gRPC', () => {
    const card = rewriteAgentCard(
      { supportedInterfaces: [{ url: 'https://agent.internal/', protocolBinding: 'GRPC' }, { url: 'https://agent.internal/rpc', protocolBinding: 'JSONRPC' }] },
      at('/.well-known/agent-card.json'),
    );
    assert.deepEqual(urlsOf(card), ['https://agent.internal/', 'https://gw.example.com/rpc']);
    const legacy = rewriteAgentCard(
      { url: 'https://agent.internal:50051', preferredTransport: 'GRPC', additionalInterfaces: [{ url: 'https://agent.internal:50051', transport: 'grpc' }, { url: 'https://agent.internal/', transport: 'JSONRPC' }] },
      at('/.well-known/agent-card.json'),
    );
    assert.equal(legacy.url, 'https://agent.internal:50051');
    assert.deepEqual((legacy.additionalInterfaces as { url: string }[]).map((i) => i.url), ['https://agent.internal:50051', 'https://gw.example.com']);
  });

  it('v0.3: url := the gateway base (the client card URL without the well-known suffix)', () => {
    assert.equal(rewriteAgentCard({ url: 'http://agent:9999/' }, at('/.well-known/agent.json', '/.well-known/agent.json', 'http://gw:3000')).url, 'http://gw:3000');
    assert.equal(rewriteAgentCard({ url: 'http://agent:9999/team/' }, at('/team/.well-known/agent-card.json')).url, 'https://gw.example.com/team');
    assert.equal(rewriteAgentCard({ url: 'http://agent:9999/' }, at('/agents/echo/.well-known/agent-card.json', '/.well-known/agent-card.json')).url, 'https://gw.example.com/agents/echo');
    // An advertised URL that is not below the card's base (a public name configured on the agent) gives the base too.
    assert.equal(rewriteAgentCard({ url: 'https://public.example.org/elsewhere' }, at('/team/.well-known/agent-card.json')).url, 'https://gw.example.com/team');
  });

  it('v0.3: an endpoint below the agent base keeps its place below the gateway base', () => {
    const card = rewriteAgentCard(
      { url: 'http://agent/a2a/jsonrpc', additionalInterfaces: [{ url: 'http://agent/a2a/jsonrpc', transport: 'JSONRPC' }, { url: 'http://agent/a2a/rest', transport: 'HTTP+JSON' }] },
      at('/agents/echo/.well-known/agent-card.json', '/.well-known/agent-card.json'),
    );
    assert.equal(card.url, 'https://gw.example.com/agents/echo/a2a/jsonrpc');
    assert.deepEqual((card.additionalInterfaces as { url: string }[]).map((i) => i.url), ['https://gw.example.com/agents/echo/a2a/jsonrpc', 'https://gw.example.com/agents/echo/a2a/rest']);
  });

  it('a card with both shapes gets both rewritten', () => {
    const card = rewriteAgentCard({ url: 'http://agent/a2a/jsonrpc', ...v1('http://agent/a2a/jsonrpc') }, at('/.well-known/agent-card.json'));
    assert.equal(card.url, 'https://gw.example.com/a2a/jsonrpc');
    assert.deepEqual(urlsOf(card), ['https://gw.example.com/a2a/jsonrpc']);
  });

  it('fails on a card with neither field, a non-array supportedInterfaces, a non-object, or invalid JSON', () => {
    const missing = "processing failed: agent card missing URL (no 'url' or 'supportedInterfaces' field)";
    assert.throws(() => rewriteAgentCard({ name: 'x' }, at('/.well-known/agent.json')), { name: 'AgentCardError', message: missing });
    assert.throws(() => rewriteAgentCard([], at('/.well-known/agent.json')), { message: missing });
    assert.throws(() => rewriteAgentCard({ supportedInterfaces: {} }, at('/.well-known/agent.json')), { message: 'processing failed: agent card supportedInterfaces is not an array' });
    assert.throws(() => rewriteAgentCardBody(Buffer.from('{"url":'), at('/.well-known/agent.json')), (err: unknown) => err instanceof AgentCardError && err.message === 'processing failed: agent card invalid JSON');
    // JSON.parse takes any depth, JSON.stringify does not: a card nested past the stack is refused, not thrown at.
    const deep = Buffer.from(`{"url":"http://agent/","x":${'['.repeat(500_000)}${']'.repeat(500_000)}}`);
    assert.throws(() => rewriteAgentCardBody(deep, at('/.well-known/agent.json')), (err: unknown) => err instanceof AgentCardError && err.message === 'processing failed: agent card nested too deeply');
  });
});
