import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grpcStatusOf, kGrpcStatus } from './trailers.ts';

/** A response head as grpcStatusOf reads it. */
const head = (fields: Record<string, string>, trailerStatus?: string): { getHeader(name: string): unknown } =>
  Object.assign({ getHeader: (name: string) => fields[name] }, trailerStatus === undefined ? {} : { [kGrpcStatus]: trailerStatus });

describe('grpcStatusOf (ADR 0141)', () => {
  it("reads the trailers' status, else a gRPC answer's head (trailers-only); other answers' heads are not looked at", () => {
    assert.equal(grpcStatusOf(head({ 'content-type': 'text/plain' }, '13')), 13, 'from the trailers');
    assert.equal(grpcStatusOf(head({ 'content-type': 'application/grpc+proto', 'grpc-status': '5' })), 5, 'trailers-only');
    assert.equal(grpcStatusOf(head({ 'content-type': 'Application/GRPC', 'grpc-status': '0' })), 0);
    assert.equal(grpcStatusOf(head({ 'content-type': 'application/json', 'grpc-status': '5' })), undefined, 'not a gRPC answer');
    assert.equal(grpcStatusOf(head({ 'grpc-status': '5' })), undefined);
    assert.equal(grpcStatusOf(head({ 'content-type': 'application/grpcfoo', 'grpc-status': '5' })), undefined, 'a look-alike (grpcMediaType)');
    assert.equal(grpcStatusOf(head({ 'content-type': 'application/grpc', 'grpc-status': '5; drop table' })), undefined, 'not a status');
  });
});
