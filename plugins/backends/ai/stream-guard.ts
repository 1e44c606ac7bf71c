// Response guards on streamed LLM answers (`promptGuard.streaming: Enabled`, BEHAVIOUR.md §2.9, §4.6; docs/llm.md).
//
// The stream, already in the client's format (translated back when the provider speaks another), is held until it
// ends. Its events are put together into the complete response the client would have got without `stream: true`
// (a `chat.completion`, an Anthropic `message`, an OpenAI Responses `response`, a Gemini `GenerateContentResponse`:
// stream-guard-gemini.ts), the response guards run on that, and
// only then does the client get anything:
//   - pass: the stream's bytes, unchanged;
//   - reject (or a guard that failed): the guard's reply instead of the stream (status, body, headers);
//   - mask: the same events, with each masked text carried whole by its first text delta and its other text deltas
//     left out; events that repeat the whole text (Responses `*.done`, `response.completed`) carry the masked text.
import type { Readable } from 'node:stream';
import type { Exchange, Reply } from 'switchyard/sdk';
import type { AiPolicyRuntime, LlmRouteType } from '../../lib/llm/contract.ts';
import { llmResponseError } from '../../lib/llm/errors.ts';
import { isObj } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';
import { SseParser } from '../../lib/llm/sse.ts';
import { readAll } from '../../lib/llm/stream.ts';
import { generateContent } from './stream-guard-gemini.ts';

/** Largest stream held for response guards (its SSE bytes in the client's format); a larger one fails with 502. */
export const STREAM_GUARD_LIMIT = 8 * 1024 * 1024;

/** One held event: its SSE `event:` name, its data as received, and the data parsed (undefined: `[DONE]`, not JSON). */
export interface HeldEvent {
  readonly event: string | undefined;
  readonly raw: string;
  readonly data: Obj | undefined;
  /** Changed by masking: serialized again from `data`. */
  changed: boolean;
  /** Left out by masking: it carried only text that another event now carries. */
  dropped: boolean;
}

/** One event carrying part of a text, as a delta. */
export interface TextRef {
  readonly at: number;
  /** Carry the whole text. */
  set(text: string): void;
  /** Carry none of it; true when the event then says nothing else and is left out. */
  clear(): boolean;
}

/**
 * Another event to update when a text is masked: one repeating the whole text (Responses `output_text.done`,
 * `content_part.done`, `output_item.done`), or one with log probabilities of the original tokens (Chat Completions).
 */
export interface Snapshot {
  readonly at: number;
  set(text: string): void;
}

/** A guarded text of the reconstructed response and the events it came from. */
export interface StreamText {
  /** The text in the reconstructed body (after the guards: possibly masked). */
  read(): string;
  readonly refs: TextRef[];
  readonly snapshots: Snapshot[];
}

export interface Reconstruction {
  /** The complete response in the client's format, as guards see non-streamed ones. */
  readonly body: Obj;
  readonly texts: StreamText[];
  /** Events that are the body itself (Responses `response.completed`): changed whenever a text is masked. */
  readonly bodyEvents: number[];
}

export type Builder = (events: HeldEvent[]) => Reconstruction;

const typeOf = (e: HeldEvent): unknown => e.data?.type ?? e.event;

// ---------------------------------------------------------------------------------------------------------------
// OpenAI Chat Completions: `chat.completion.chunk`s → `chat.completion`

interface ChoiceAcc {
  index: number;
  role: string;
  content: string;
  hasContent: boolean;
  refusal: string | undefined;
  finish: unknown;
  readonly toolCalls: Map<number, Obj>;
  readonly refs: TextRef[];
  readonly snapshots: Snapshot[];
}

/** A chunk that says nothing once its text is gone: no usage, every choice without delta fields or finish reason. */
function emptyChunk(d: Obj): boolean {
  if (isObj(d.usage) || !Array.isArray(d.choices)) return false;
  return d.choices.every((c: unknown) => isObj(c) && c.finish_reason == null && (!isObj(c.delta) || Object.keys(c.delta).length === 0));
}

function completionsRef(at: number, chunk: Obj, delta: Obj): TextRef {
  return {
    at,
    set(text) {
      delta.content = text;
    },
    clear() {
      delete delta.content;
      return emptyChunk(chunk);
    },
  };
}

const completions: Builder = (events) => {
  let head: Obj | undefined;
  let usage: Obj | undefined;
  const choices = new Map<number, ChoiceAcc>();
  events.forEach((e, at) => {
    const d = e.data;
    if (!d) return;
    if (!head && (d.id !== undefined || d.model !== undefined)) head = d;
    if (isObj(d.usage)) usage = d.usage;
    if (!Array.isArray(d.choices)) return;
    for (const c of d.choices) {
      if (!isObj(c)) continue;
      const index = typeof c.index === 'number' ? c.index : 0;
      let acc = choices.get(index);
      if (!acc) choices.set(index, (acc = { index, role: 'assistant', content: '', hasContent: false, refusal: undefined, finish: null, toolCalls: new Map(), refs: [], snapshots: [] }));
      if (c.finish_reason != null) acc.finish = c.finish_reason;
      // Log probabilities spell out the tokens of the original text: a masked choice loses them.
      if (c.logprobs != null) {
        acc.snapshots.push({
          at,
          set() {
            c.logprobs = null;
          },
        });
      }
      const delta = c.delta;
      if (!isObj(delta)) continue;
      if (typeof delta.role === 'string') acc.role = delta.role;
      if (typeof delta.content === 'string') {
        acc.content += delta.content;
        acc.hasContent = true;
        acc.refs.push(completionsRef(at, d, delta));
      }
      if (typeof delta.refusal === 'string') acc.refusal = (acc.refusal ?? '') + delta.refusal;
      if (Array.isArray(delta.tool_calls)) {
        for (const t of delta.tool_calls) {
          if (!isObj(t)) continue;
          const i = typeof t.index === 'number' ? t.index : acc.toolCalls.size;
          let call = acc.toolCalls.get(i);
          if (!call) acc.toolCalls.set(i, (call = { id: undefined, type: 'function', function: { name: '', arguments: '' } }));
          if (typeof t.id === 'string') call.id = t.id;
          if (typeof t.type === 'string') call.type = t.type;
          if (isObj(t.function)) {
            if (typeof t.function.name === 'string') call.function.name += t.function.name;
            if (typeof t.function.arguments === 'string') call.function.arguments += t.function.arguments;
          }
        }
      }
    }
  });
  const accs = [...choices.values()].sort((a, b) => a.index - b.index);
  const body: Obj = {
    id: head?.id,
    object: 'chat.completion',
    created: head?.created,
    model: head?.model,
    choices: accs.map((a) => {
      const message: Obj = { role: a.role, content: a.hasContent ? a.content : null };
      if (a.refusal !== undefined) message.refusal = a.refusal;
      if (a.toolCalls.size) message.tool_calls = [...a.toolCalls.entries()].sort(([x], [y]) => x - y).map(([, c]) => c);
      return { index: a.index, message, finish_reason: a.finish };
    }),
  };
  if (usage) body.usage = usage;
  const texts: StreamText[] = [];
  accs.forEach((a, k) => {
    if (a.hasContent) texts.push({ read: () => body.choices[k].message.content, refs: a.refs, snapshots: a.snapshots });
  });
  return { body, texts, bodyEvents: [] };
};

// ---------------------------------------------------------------------------------------------------------------
// Anthropic Messages: `message_start`, `content_block_*`, `message_delta`, `message_stop` → `message`

interface BlockAcc {
  readonly block: Obj;
  text: string;
  json: string | undefined;
  readonly refs: TextRef[];
  /** Text given by `content_block_start` (normally none). */
  start?: TextRef;
}

const messages: Builder = (events) => {
  let message: Obj | undefined;
  const blocks = new Map<number, BlockAcc>();
  events.forEach((e, at) => {
    const d = e.data;
    if (!d) return;
    switch (typeOf(e)) {
      case 'message_start':
        if (isObj(d.message)) message = structuredClone(d.message);
        break;
      case 'content_block_start': {
        if (typeof d.index !== 'number' || !isObj(d.content_block)) break;
        const cb = d.content_block;
        const acc: BlockAcc = { block: structuredClone(cb), text: typeof cb.text === 'string' ? cb.text : '', json: undefined, refs: [] };
        blocks.set(d.index, acc);
        // Text given at the start (normally none) is kept apart: the masked text goes to the first delta when there is one.
        if (cb.type === 'text' && typeof cb.text === 'string' && cb.text) {
          acc.start = {
            at,
            set(text) {
              cb.text = text;
            },
            clear() {
              cb.text = '';
              return false;
            },
          };
        }
        break;
      }
      case 'content_block_delta': {
        const acc = typeof d.index === 'number' ? blocks.get(d.index) : undefined;
        const delta = d.delta;
        if (!acc || !isObj(delta)) break;
        if (delta.type === 'text_delta' && typeof delta.text === 'string') {
          acc.text += delta.text;
          acc.refs.push({
            at,
            set(text) {
              delta.text = text;
            },
            clear: () => true,
          });
        } else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') acc.json = (acc.json ?? '') + delta.partial_json;
        else if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string') acc.block.thinking = (typeof acc.block.thinking === 'string' ? acc.block.thinking : '') + delta.thinking;
        else if (delta.type === 'signature_delta' && typeof delta.signature === 'string') acc.block.signature = delta.signature;
        break;
      }
      case 'message_delta': {
        message ??= {};
        if (isObj(d.delta)) {
          if (d.delta.stop_reason !== undefined) message.stop_reason = d.delta.stop_reason;
          if (d.delta.stop_sequence !== undefined) message.stop_sequence = d.delta.stop_sequence;
        }
        if (isObj(d.usage)) {
          const usage: Obj = isObj(message.usage) ? message.usage : (message.usage = {});
          for (const [k, v] of Object.entries(d.usage)) if (v !== null && v !== undefined) usage[k] = v;
        }
        break;
      }
      default:
        break;
    }
  });
  const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, acc]) => acc);
  const content = ordered.map((acc) => {
    const block = acc.block;
    if (block.type === 'text') block.text = acc.text;
    if (block.type === 'tool_use' && acc.json !== undefined) {
      try {
        block.input = acc.json.trim() ? (JSON.parse(acc.json) as unknown) : {};
      } catch {
        block.input = {};
      }
    }
    return block;
  });
  const body: Obj = { type: 'message', role: 'assistant', ...(message ?? {}), content };
  const texts: StreamText[] = [];
  ordered.forEach((acc, k) => {
    if (acc.block.type !== 'text') return;
    texts.push({ read: () => body.content[k].text, refs: acc.start ? [...acc.refs, acc.start] : acc.refs, snapshots: [] });
  });
  return { body, texts, bodyEvents: [] };
};

// ---------------------------------------------------------------------------------------------------------------
// OpenAI Responses: `response.*` events → the `response` of `response.completed` (or one put together)

interface PartAcc {
  text: string;
  readonly refs: TextRef[];
  readonly snapshots: Snapshot[];
}

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

const responses: Builder = (events) => {
  let latest: Obj | undefined;
  let terminal: { at: number; response: Obj } | undefined;
  const items = new Map<number, Obj>();
  const parts = new Map<string, PartAcc>();
  const part = (oi: unknown, ci: unknown): PartAcc | undefined => {
    if (typeof oi !== 'number' || typeof ci !== 'number') return undefined;
    const key = `${oi}:${ci}`;
    let acc = parts.get(key);
    if (!acc) parts.set(key, (acc = { text: '', refs: [], snapshots: [] }));
    return acc;
  };
  events.forEach((e, at) => {
    const d = e.data;
    if (!d) return;
    const type = typeOf(e);
    if (typeof type !== 'string') return;
    if (TERMINAL.has(type) && isObj(d.response)) terminal = { at, response: d.response };
    else if ((type === 'response.created' || type === 'response.in_progress') && isObj(d.response)) latest = d.response;
    else if (type === 'response.output_item.added' && typeof d.output_index === 'number' && isObj(d.item)) {
      if (!items.has(d.output_index)) items.set(d.output_index, structuredClone(d.item));
    } else if (type === 'response.output_item.done' && typeof d.output_index === 'number' && isObj(d.item)) {
      const item = d.item;
      items.set(d.output_index, structuredClone(item));
      if (Array.isArray(item.content)) {
        item.content.forEach((p: unknown, ci: number) => {
          if (isObj(p) && typeof p.text === 'string') {
            part(d.output_index, ci)!.snapshots.push({
              at,
              set(text) {
                p.text = text;
              },
            });
          }
        });
      }
    } else if (type === 'response.output_text.delta' && typeof d.delta === 'string') {
      const acc = part(d.output_index, d.content_index);
      if (!acc) return;
      acc.text += d.delta;
      acc.refs.push({
        at,
        set(text) {
          d.delta = text;
        },
        clear: () => true,
      });
    } else if (type === 'response.output_text.done' && typeof d.text === 'string') {
      part(d.output_index, d.content_index)?.snapshots.push({
        at,
        set(text) {
          d.text = text;
        },
      });
    } else if (type === 'response.content_part.done' && isObj(d.part) && typeof d.part.text === 'string') {
      const p = d.part;
      part(d.output_index, d.content_index)?.snapshots.push({
        at,
        set(text) {
          p.text = text;
        },
      });
    }
  });

  let body: Obj;
  const bodyEvents: number[] = [];
  if (terminal) {
    // The complete response is in the stream: guarded as it is, and the event carries the guards' result.
    body = terminal.response;
    bodyEvents.push(terminal.at);
  } else {
    // A stream that ended without one: the response as far as it went.
    const output: Obj[] = [];
    for (const [oi, item] of [...items.entries()].sort(([a], [b]) => a - b)) output[oi] = item;
    for (const [key, acc] of parts) {
      const [oi, ci] = key.split(':').map(Number) as [number, number];
      const item = (output[oi] ??= { type: 'message', role: 'assistant', content: [] });
      if (item.type !== 'message') continue;
      if (!Array.isArray(item.content)) item.content = [];
      if (!isObj(item.content[ci]) || typeof item.content[ci].text !== 'string') item.content[ci] = { type: 'output_text', text: acc.text, annotations: [] };
    }
    body = { ...(latest ?? { object: 'response' }), output: Array.from(output, (item) => item ?? {}) };
  }
  const texts: StreamText[] = [];
  const output: unknown[] = Array.isArray(body.output) ? body.output : [];
  output.forEach((item, oi) => {
    if (!isObj(item) || item.type !== 'message' || !Array.isArray(item.content)) return;
    item.content.forEach((p: unknown, ci: number) => {
      if (!isObj(p) || typeof p.text !== 'string') return;
      const acc = parts.get(`${oi}:${ci}`);
      texts.push({ read: () => p.text as string, refs: acc?.refs ?? [], snapshots: acc?.snapshots ?? [] });
    });
  });
  return { body, texts, bodyEvents };
};

/** Client formats whose streams can be put together into a complete response. */
const BUILDERS: Partial<Record<LlmRouteType, Builder>> = { completions, messages, responses, generateContent };

// ---------------------------------------------------------------------------------------------------------------

function parseEvents(bytes: Buffer): HeldEvent[] {
  const parser = new SseParser(STREAM_GUARD_LIMIT);
  const out: HeldEvent[] = [];
  for (const ev of [...parser.feed(bytes), ...parser.end()]) {
    let data: Obj | undefined;
    if (ev.data !== '[DONE]') {
      try {
        const v = JSON.parse(ev.data) as unknown;
        if (isObj(v)) data = v;
      } catch {
        // Kept as it came.
      }
    }
    out.push({ event: ev.event, raw: ev.data, data, changed: false, dropped: false });
  }
  return out;
}

function serialize(events: readonly HeldEvent[]): string {
  let out = '';
  for (const e of events) {
    if (e.dropped) continue;
    if (e.event !== undefined) out += `event: ${e.event}\n`;
    const data = e.changed && e.data ? JSON.stringify(e.data) : e.raw;
    for (const line of data.split('\n')) out += `data: ${line}\n`;
    out += '\n';
  }
  return out;
}

/** Put a masked text back into the events that carried it. */
function rewrite(events: HeldEvent[], t: StreamText, text: string): void {
  const [first, ...rest] = t.refs;
  if (first) {
    first.set(text);
    events[first.at]!.changed = true;
  }
  for (const r of rest) {
    if (r.clear()) events[r.at]!.dropped = true;
    else events[r.at]!.changed = true;
  }
  for (const s of t.snapshots) {
    s.set(text);
    events[s.at]!.changed = true;
  }
}

/**
 * Hold a streamed answer (`reply.body`: SSE in the client's format) until it ends, run the response guards on the
 * complete response it makes, and answer with the stream (unchanged or masked) or the guards' reply.
 */
export async function guardStreamedReply(ex: Exchange, reply: Reply, client: LlmRouteType, policy: AiPolicyRuntime): Promise<Reply> {
  const build = BUILDERS[client];
  // A format whose streams are not put together here has no text to guard (as its complete responses have none).
  if (!build) return reply;
  const stream = reply.body as Readable;
  // A client that leaves (or a route timeout) while the stream is held releases the provider (pipeInto closes the
  // upstream); the exchange's reason (499, 504) is what the kernel then reports.
  const onAbort = (): void => void stream.destroy(ex.signal.reason instanceof Error ? ex.signal.reason : new Error('the client went away'));
  if (ex.signal.aborted) onAbort();
  else ex.signal.addEventListener('abort', onAbort, { once: true });
  let bytes: Buffer;
  try {
    bytes = await readAll(stream, STREAM_GUARD_LIMIT);
  } catch (err) {
    if (err instanceof RangeError) return llmResponseError(502, `streamed response too large to guard (over ${STREAM_GUARD_LIMIT} bytes)`);
    throw err;
  } finally {
    ex.signal.removeEventListener('abort', onAbort);
  }

  const events = parseEvents(bytes);
  const { body, texts, bodyEvents } = build(events);
  const before = texts.map((t) => t.read());
  const rejected = await policy.guardResponse(ex, client, body);
  if (rejected) return rejected;

  const h = reply.headers;
  delete h['content-length'];
  delete h['transfer-encoding'];
  let masked = false;
  texts.forEach((t, i) => {
    const text = t.read();
    if (text === before[i]) return;
    masked = true;
    rewrite(events, t, text);
  });
  if (!masked) {
    reply.body = bytes;
    return reply;
  }
  for (const at of bodyEvents) events[at]!.changed = true;
  reply.body = serialize(events);
  return reply;
}
