// The partial success of an OTLP answer (ExportTraceServiceResponse.partial_success): read when present, and a
// collector's malformed answer is no answer (the export it accepted is not failed for it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { partialSuccess } from './export-calls.ts';

test('partial_success: rejected_spans (int64 varint) and error_message; absent, empty or malformed answers', () => {
  // { partial_success: { rejected_spans: 300, error_message: "bad" } }
  const inner = Buffer.from([0x08, 0xac, 0x02, 0x12, 0x03, 0x62, 0x61, 0x64]);
  assert.deepEqual(partialSuccess(Buffer.concat([Buffer.from([0x0a, inner.length]), inner])), { rejected: 300, message: 'bad' });
  // Only a message (a warning): nothing rejected.
  assert.deepEqual(partialSuccess(Buffer.from([0x0a, 0x03, 0x12, 0x01, 0x77])), { rejected: 0, message: 'w' });
  assert.equal(partialSuccess(Buffer.alloc(0)), undefined);
  // An unknown field before it is skipped.
  assert.deepEqual(partialSuccess(Buffer.concat([Buffer.from([0x10, 0x01]), Buffer.from([0x0a, inner.length]), inner])), { rejected: 300, message: 'bad' });
  // Truncated, or an impossible wire type: undefined, no throw.
  assert.equal(partialSuccess(Buffer.from([0x0a, 0x09, 0x08])), undefined);
  assert.equal(partialSuccess(Buffer.from([0x0f])), undefined);
  assert.equal(partialSuccess(Buffer.from([0x0a, 0x02, 0x08, 0xff])), undefined);
  // A long message is cut (it goes into the log).
  const text = Buffer.alloc(1000, 0x61);
  const long = Buffer.concat([Buffer.from([0x12, 0xe8, 0x07]), text]);
  assert.equal(partialSuccess(Buffer.concat([Buffer.from([0x0a, 0xeb, 0x07]), long]))?.message.length, 256);
});
