import assert from 'node:assert/strict';
import { it } from 'node:test';
import { agentCardBase, isEventStream, isJsonType, jsonRpcMethod, restMethod } from './classify.ts';

it('recognises both well-known card paths, under any prefix', () => {
  assert.equal(agentCardBase('/.well-known/agent-card.json'), '');
  assert.equal(agentCardBase('/agents/x/.well-known/agent.json'), '/agents/x');
  assert.equal(agentCardBase('/x.well-known/agent.json'), undefined);
  assert.equal(agentCardBase('/.well-known/agent-card.json/more'), undefined);
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
