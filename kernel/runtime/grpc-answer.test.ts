// The pieces of a gRPC answer to a gateway-made error (ADR 0178): which content types are gRPC's, and gRPC's
// percent-encoding of `grpc-message` (read back by grpc-js with decodeURIComponent semantics).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grpcMessage } from './grpc-answer.ts';
import { grpcMediaType } from '../upstream/trailers.ts';

describe('grpcMediaType', () => {
  it("gRPC's and gRPC-Web's media types, lower-cased, parameters dropped; look-alikes are not", () => {
    const cases: [unknown, string | undefined][] = [
      ['application/grpc', 'application/grpc'],
      ['Application/GRPC+proto', 'application/grpc+proto'],
      ['application/grpc; charset=utf-8', 'application/grpc'],
      ['application/grpc-web', 'application/grpc-web'],
      ['application/grpc-web+json', 'application/grpc-web+json'],
      ['application/grpc-web-text+proto', 'application/grpc-web-text+proto'],
      ['application/grpcfoo', undefined],
      ['application/grpc-webby', undefined],
      ['application/json', undefined],
      ['application/grp', undefined],
      [undefined, undefined],
      [['application/grpc'], undefined],
    ];
    for (const [value, want] of cases) assert.equal(grpcMediaType(value), want, String(value));
  });
});

describe('grpcMessage', () => {
  it('printable ASCII as it is; %, controls and UTF-8 bytes as %XX', () => {
    assert.equal(grpcMessage('authorization failed'), 'authorization failed');
    assert.equal(grpcMessage('100%'), '100%25');
    assert.equal(grpcMessage('a\r\nb'), 'a%0D%0Ab');
    assert.equal(grpcMessage('caf\u00e9 \u{1f600}'), 'caf%C3%A9 %F0%9F%98%80');
    for (const text of ['x%y', 'caf\u00e9\t\u{1f600}~ ']) assert.equal(decodeURIComponent(grpcMessage(text)), text);
  });

  it('at most 1,024 characters encoded, cut before a whole character (never inside a %XX or a UTF-8 sequence)', () => {
    // 1,024 three-byte characters grow to 9,216: past grpc-js's 8 KiB metadata limit (RESOURCE_EXHAUSTED).
    const wide = '\u4e2d'.repeat(1024);
    assert.equal(grpcMessage(wide), '%E4%B8%AD'.repeat(113));
    for (const text of [wide, `ab${'\u{1f600}'.repeat(300)}`, `${'%'.repeat(500)}x`, 'y'.repeat(2000)]) {
      const sent = grpcMessage(text);
      assert.ok(sent.length <= 1024 && sent.length > 1000, `${sent.length} characters`);
      assert.ok(text.startsWith(decodeURI(sent)), 'a whole-character prefix');
    }
  });
});
