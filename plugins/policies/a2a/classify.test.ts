import assert from 'node:assert/strict';
import { it } from 'node:test';
import { agentCardBase, isEventStream, isJsonType, jsonRpcCall, jsonRpcMethod, restMethod } from './classify.ts';

it('recognises both well-known card paths, under any prefix', () => {
  assert.equal(agentCardBase('/.well-known/agent-card.json'), '');
  assert.equal(agentCardBase('/agents/x/.well-known/agent.json'), '/agents/x');
  assert.equal(agentCardBase('/x.well-known/agent.json'), undefined);
  assert.equal(agentCardBase('/.well-known/agent-card.json/more'), undefined);
  // Routers that match paths case-insensitively and ignore a trailing slash (Express) serve the card there too.
  assert.equal(agentCardBase('/Agents/X/.WELL-KNOWN/Agent-Card.JSON'), '/Agents/X');
  assert.equal(agentCardBase('/x/.well-known/agent.json/'), '/x');
  assert.equal(agentCardBase('/x/.well-known/agent.json//'), '/x');
});

it('recognises the card path however an agent\'s server may read it: escapes, repeated slashes, `;` parameters, trailing dots (ADR 0182)', () => {
  // Servers that decode the path (uvicorn), merge slashes (Tomcat, with `mergeSlashes: false` at the gateway), drop
  // `;` parameters (Tomcat, Jetty) or trailing dots (IIS) serve the card for these too: it must be rewritten.
  const card = ['/x/%2Ewell-known/agent-card%2ejson', '/x/.well-known/agent%2Dcard.json', '/x//.well-known//agent-card.json', '/x/.well-known/agent-card.json;v=1', '/x/.well-known;a=b/agent.json', '/x/.well-known/agent-card.json.', '/x/.well-known/agent-card.json./'];
  for (const path of card) assert.equal(agentCardBase(path), '/x', path);
  assert.equal(agentCardBase('//.well-known/agent-card.json'), '');
  // Still only the card.
  for (const path of ['/x/.well-known/agent-card.jsonx', '/x/.well-known/agent-card%2Fjson', '/x/well-known/agent-card.json']) assert.equal(agentCardBase(path), undefined, path);
});

it('maps HTTP+JSON (REST) requests to the canonical A2A method names', () => {
  const cases: [string, string, string | undefined][] = [
    ['POST', '/message:send', 'SendMessage'],
    ['POST', '/a2a/rest/message:stream', 'SendStreamingMessage'],
    ['POST', '/v1/message/stream', 'SendStreamingMessage'],
    ['POST', '/tasks/t-1:cancel', 'CancelTask'],
    ['POST', '/tenant/tasks/t:1:subscribe', 'SubscribeToTask'],
    ['POST', '/tasks/t-1/pushNotificationConfigs', 'CreateTaskPushNotificationConfig'],
    ['GET', '/tasks/t-1', 'GetTask'],
    ['GET', '/a2a/rest/tasks', 'ListTasks'],
    ['GET', '/tasks/t-1/pushNotificationConfigs', 'ListTaskPushNotificationConfigs'],
    ['GET', '/tasks/t-1/pushNotificationConfigs/c-1', 'GetTaskPushNotificationConfig'],
    ['DELETE', '/tasks/t-1/pushNotificationConfigs/c-1', 'DeleteTaskPushNotificationConfig'],
    ['GET', '/extendedAgentCard', 'GetExtendedAgentCard'],
    // v1.0 subscribes with GET (POST is accepted too); a task id may hold a colon.
    ['GET', '/a2a/rest/tasks/t-1:subscribe', 'SubscribeToTask'],
    ['GET', '/tenant/tasks/t:1:subscribe', 'SubscribeToTask'],
    ['GET', '/tasks/a:b', 'GetTask'],
    // v0.3 REST: the authenticated extended card.
    ['GET', '/a2a/rest/v1/card', 'GetExtendedAgentCard'],
    ['GET', '/agent/authenticatedExtendedCard', 'GetExtendedAgentCard'],
    // Matched as case-insensitively as the agent's router may match them.
    ['GET', '/a2a/rest/EXTENDEDAGENTCARD/', 'GetExtendedAgentCard'],
    ['GET', '/V1/Card', 'GetExtendedAgentCard'],
    ['POST', '/Message:Send', 'SendMessage'],
    ['GET', '/Tasks/T-1:Subscribe', 'SubscribeToTask'],
    ['POST', '/a2a/jsonrpc', undefined],
    ['POST', '/things:cancel', undefined],
    ['GET', '/', undefined],
    ['PUT', '/tasks/t-1', undefined],
  ];
  for (const [method, path, expected] of cases) assert.equal(restMethod(method, path), expected, `${method} ${path}`);
});

it('reads the JSON-RPC method of a body', () => {
  assert.equal(jsonRpcMethod(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"message/send"}')), 'message/send');
  assert.equal(jsonRpcMethod(Buffer.from('{"message":{}}')), undefined);
  assert.equal(jsonRpcMethod(Buffer.from('[{"method":"x"}]')), undefined);
  assert.equal(jsonRpcMethod(Buffer.from('{"method":')), undefined);
});

it('tells JSON and event streams by media type', () => {
  assert.ok(isJsonType('application/json; charset=utf-8'));
  assert.ok(isJsonType('application/a2a+json'));
  assert.ok(!isJsonType('text/plain'));
  assert.ok(!isJsonType(undefined));
  assert.ok(isEventStream('text/event-stream; charset=utf-8'));
  assert.ok(!isEventStream('application/json'));
});

it('reads the call of a JSON-RPC body: id, context and task ids (v0.3 and v1.0 shapes)', () => {
  const call = (v: unknown) => jsonRpcCall(Buffer.from(JSON.stringify(v)));
  assert.deepEqual(call({ jsonrpc: '2.0', id: 7, method: 'message/send', params: { message: { contextId: 'c1', taskId: 't1' } } }), { method: 'message/send', id: '7', contextId: 'c1', taskId: 't1' });
  assert.deepEqual(call({ jsonrpc: '2.0', id: 'a', method: 'GetTask', params: { id: 't2' } }), { method: 'GetTask', id: 'a', contextId: undefined, taskId: 't2' });
  assert.deepEqual(call({ jsonrpc: '2.0', method: 'GetTask', params: { name: 'tasks/t3' } }), { method: 'GetTask', id: undefined, contextId: undefined, taskId: 't3' });
  assert.equal(call({ id: 1 }), undefined);
});

it('ignores names too long to be an A2A method or id (the log and the span stay bounded)', () => {
  const long = 'x'.repeat(257);
  const call = (v: unknown) => jsonRpcCall(Buffer.from(JSON.stringify(v)));
  assert.equal(call({ jsonrpc: '2.0', id: 1, method: long }), undefined);
  assert.deepEqual(call({ jsonrpc: '2.0', id: long, method: 'GetTask', params: { id: long, message: { contextId: long } } }), { method: 'GetTask', id: undefined, contextId: undefined, taskId: undefined });
  assert.equal(call({ jsonrpc: '2.0', id: 1, method: 'x'.repeat(256) })?.method.length, 256);
});
