import type { Readable } from 'node:stream';
import { SseOverflowError, SseParser } from 'switchyard/sdk';
import { MAX_TARGET_MESSAGE, MAX_TARGET_MESSAGE_BYTES, McpProtocolViolation } from '../../lib/mcp/upstream-contract.ts';
import type { FlowGate } from '../../lib/mcp/upstream-contract.ts';
import { ERROR_EXCERPT } from './endpoint.ts';

export type RpcId = string | number;

/** Longest SSE event read from a target (its data plus an unfinished line): one message of any transport. */
const MAX_SSE_EVENT = MAX_TARGET_MESSAGE_BYTES;

/** How an SSE response body ended. */
export interface StreamOutcome {
  /** The stream carried the answer it was waiting for (POST streams). */
  readonly answered: boolean;
  /** The stream brought something (a message or an event id): reconnect attempts start over. */
  readonly progress: boolean;
  readonly lastEventId: string | undefined;
  /** Why it ended, when it did not end cleanly. */
  readonly error: Error | undefined;
}

/** Where the messages of an SSE body go. */
export interface SseMessageSink {
  /** A JSON-RPC message (or batch) the stream carried. */
  deliver(value: unknown): void;
  onerror?: (error: Error) => void;
  /** The server's `retry:` field (ms). */
  retry(ms: number): void;
}

/** Whether a message or batch holds a JSON-RPC answer (result or error) to request `id`. */
export function answers(value: unknown, id: RpcId): boolean {
  if (Array.isArray(value)) return value.some((v) => answers(v, id));
  if (typeof value !== 'object' || value === null) return false;
  const m = value as { id?: unknown; method?: unknown };
  // `2` and `"2"` are one id here, as the gateway matches answers to its requests (target-conn.ts).
  return m.method === undefined && (m.id === id || (m.id !== null && m.id !== undefined && Number(m.id) === Number(id)));
}

/**
 * Read an SSE response body of a streamable-HTTP target: each `message` event's data is a JSON-RPC message, handed
 * to `sink.deliver`. `waitingFor` is the request a POST stream answers. `done` runs once, when the body ends, fails
 * or is destroyed. `gate`: the pace of the client the stream is relayed to; reading stops while it is backlogged.
 */
export function readSseMessages(body: Readable, waitingFor: RpcId | undefined, sink: SseMessageSink, done: (outcome: StreamOutcome) => void, gate?: FlowGate): void {
  let answered = false;
  let waiting = false;
  const resume = (): void => {
    waiting = false;
    body.resume();
  };
  let progress = false;
  let finished = false;
  const parser = new SseParser({
    onEvent: (event) => {
      progress = true;
      if (event.data === '' || (event.event || 'message') !== 'message') return;
      let value: unknown;
      try {
        value = JSON.parse(event.data);
      } catch {
        sink.onerror?.(new McpProtocolViolation(`the target sent an SSE event whose data is not JSON: ${event.data.slice(0, ERROR_EXCERPT)}`));
        return;
      }
      if (waitingFor !== undefined && !answered && answers(value, waitingFor)) answered = true;
      sink.deliver(value);
    },
    onRetry: (ms) => sink.retry(ms),
    maxEventSize: MAX_SSE_EVENT,
  });
  const finish = (error: Error | undefined): void => {
    if (finished) return;
    finished = true;
    if (parser.lastEventId !== undefined) progress = true;
    done({ answered, progress, lastEventId: parser.lastEventId, error });
  };
  body.on('data', (chunk: Buffer) => {
    try {
      parser.push(chunk);
    } catch (err) {
      // An event past MAX_SSE_EVENT (UTF-8 bytes, as a JSON body or a stdio line is bounded).
      const over = err instanceof SseOverflowError;
      body.destroy(over ? new Error(`an event longer than ${MAX_TARGET_MESSAGE}, the most a target may send in one message`) : (err as Error));
      return;
    }
    // The client has not taken what this stream relayed: the target waits (its socket buffers fill), not the gateway.
    if (gate !== undefined && !waiting && gate.backlogged) {
      waiting = true;
      body.pause();
      gate.whenDrained(resume);
    }
  });
  body.on('end', () => {
    try {
      parser.end();
    } catch {
      // an unfinished oversized event: dropped
    }
    finish(undefined);
  });
  body.on('error', (err: Error) => finish(err));
  body.on('close', () => {
    if (!finished) finish(new Error('the connection closed'));
  });
}
