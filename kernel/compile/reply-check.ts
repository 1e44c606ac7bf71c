import { Readable } from 'node:stream';
import { RawHeadersReply } from '../sdk/index.ts';

/**
 * What makes `value` not a reply the kernel can write, or undefined (ADR 0154). Applied to what a third-party hook,
 * backend selector or backend returns: JavaScript lets it return `true`, `{ status: 403 }` without `headers`, or a
 * web `ReadableStream` body, each of which failed inside the response writer, outside any request's error handling,
 * and ended the process. A reply the kernel made (an upstream's answer) keeps its header list unread.
 */
export function replyProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return `${describe(value)}, not a reply`;
  const { status, body } = value as { status?: unknown; body?: unknown };
  // Node's range: an upstream's odd status relayed by a backend stays writable.
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 999) return `a status of ${describe(status)}, not a reply (an HTTP status)`;
  // An upstream's answer whose header list nobody read is fine; once a hook set its `headers`, they are checked.
  if (!(value instanceof RawHeadersReply) || value.rawHeaders === undefined) {
    const headers = (value as { headers?: unknown }).headers;
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return `headers ${describe(headers)}, not a reply (a header object)`;
  }
  if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array) && !(body instanceof Readable)) {
    return `a body of ${describe(body)}, not a reply (a string, bytes or a Node Readable)`;
  }
  return undefined;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') return `a ${value.constructor?.name ?? 'object'}`;
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : `${typeof value} ${String(value)}`;
}
