// What a translated request cannot carry that changes what the client gets back (ADR 0135): fields asking for more
// than the default answer, and content the model would never see. Asked of a provider whose API has no equivalent,
// they would be dropped and the answer would silently lack them.
import { imageUrlOf } from './chat-messages.ts';
import { isObj, parseDataUrl } from './json.ts';
import type { Obj } from './json.ts';

/** One field or content part the translation cannot carry: where it is, and what it asks for. */
export interface Unhonoured {
  readonly field: string;
  readonly asks: string;
}

/** Wire formats a JSON answer format reaches (Gemini's `responseMimeType`/`responseSchema`, OpenAI's own). */
const JSON_FORMATS: ReadonlySet<string> = new Set(['completions', 'responses', 'geminiNative']);
/** Wire formats that take audio input (Gemini's `inlineData`). */
const AUDIO_INPUT: ReadonlySet<string> = new Set(['completions', 'responses', 'geminiNative']);

const positive = (v: unknown): boolean => typeof v === 'number' && v > 0;
const jsonFormat = (f: unknown): boolean => isObj(f) && f.type !== undefined && f.type !== 'text';
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/**
 * What a `client` request translated to `wire` asks for that the translation cannot carry, in the order checked.
 * Values that ask for nothing more (`n: 1`, `logprobs: false`, `response_format: {type: "text"}`) pass.
 */
export function unhonouredFields(client: string, wire: string, body: Obj): Unhonoured[] {
  const out: Unhonoured[] = [];
  const add = (field: string, asks: string): void => void out.push({ field, asks });
  if (client === 'completions') {
    if (typeof body.n === 'number' && body.n > 1) add('n', 'several choices');
    if (body.logprobs === true) add('logprobs', 'log probabilities');
    if (positive(body.top_logprobs)) add('top_logprobs', 'log probabilities');
    if (list(body.modalities).includes('audio')) add('modalities', 'an audio answer');
    if (isObj(body.audio)) add('audio', 'an audio answer');
    if (jsonFormat(body.response_format) && !JSON_FORMATS.has(wire)) add('response_format', 'a JSON answer format');
    list(body.messages).forEach((m, i) => {
      if (isObj(m)) list(m.content).forEach((p, j) => chatPart(p, wire, `messages[${i}].content[${j}]`, add));
    });
  } else if (client === 'responses') {
    if (positive(body.top_logprobs)) add('top_logprobs', 'log probabilities');
    if (list(body.include).includes('message.output_text.logprobs')) add('include', 'log probabilities');
    if (isObj(body.text) && jsonFormat(body.text.format) && !JSON_FORMATS.has(wire)) add('text.format', 'a JSON answer format');
    list(body.input).forEach((item, i) => {
      if (isObj(item)) list(item.content).forEach((p, j) => responsesPart(p, wire, `input[${i}].content[${j}]`, add));
    });
  } else if (client === 'messages') {
    // Converse carries thinking for Claude (a model field, ADR 0167) and Nova 2 (`reasoningConfig`, ADR 0180) only.
    const thinking = isObj(body.thinking) && (body.thinking.type === 'enabled' || body.thinking.type === 'adaptive');
    const thinks = typeof body.model === 'string' && (body.model.includes('anthropic.') || body.model.includes('amazon.nova-2-'));
    if (thinking && wire === 'converse' && !thinks) add('thinking', 'extended thinking');
    list(body.messages).forEach((m, i) => {
      if (isObj(m)) list(m.content).forEach((b, j) => messagesBlock(b, wire, `messages[${i}].content[${j}]`, add));
    });
  }
  return out;
}

/** A Chat Completions content part the wire cannot take. */
function chatPart(p: unknown, wire: string, at: string, add: (field: string, asks: string) => void): void {
  if (!isObj(p)) return;
  if (p.type === 'image_url' && wire === 'converse') {
    const url = imageUrlOf(p);
    // Converse takes image bytes only.
    if (typeof url !== 'string' || parseDataUrl(url) === undefined) add(at, 'an image by URL');
  } else if (p.type === 'input_audio' && !AUDIO_INPUT.has(wire)) add(at, 'audio input');
  else if (p.type === 'file') {
    if (!isObj(p.file) || typeof p.file.file_data !== 'string') add(at, "a file in OpenAI's storage");
    else if (wire === 'converse') add(at, 'a document');
  }
}

/** A Responses input content part the translation through Chat Completions cannot carry. */
function responsesPart(p: unknown, wire: string, at: string, add: (field: string, asks: string) => void): void {
  if (!isObj(p)) return;
  if (p.type === 'input_image') {
    if (typeof p.image_url !== 'string') add(at, "an image in OpenAI's storage");
    else if (wire === 'converse' && parseDataUrl(p.image_url) === undefined) add(at, 'an image by URL');
  } else if (p.type === 'input_file') {
    if (typeof p.file_data !== 'string') add(at, "a file by URL or in OpenAI's storage");
    else if (wire === 'converse') add(at, 'a document');
  }
}

/**
 * An Anthropic content block the translation through Chat Completions cannot carry: an image or document other than
 * inline (or an image by URL); to Converse, an image by URL or a PDF.
 */
function messagesBlock(b: unknown, wire: string, at: string, add: (field: string, asks: string) => void): void {
  if (!isObj(b) || !isObj(b.source)) return;
  const source = b.source.type;
  if (b.type === 'image') {
    if (source !== 'base64' && source !== 'url') add(at, "an image in Anthropic's storage");
    else if (source === 'url' && wire === 'converse') add(at, 'an image by URL');
  } else if (b.type === 'document') {
    if (source === 'url') add(at, 'a document by URL');
    else if (source !== 'base64' && source !== 'text') add(at, 'a document by file id or of content blocks');
    else if (source === 'base64' && wire === 'converse') add(at, 'a document');
  }
}

/** The refusal's text: each field named, with what it asks for. */
export function unhonouredMessage(provider: string, found: readonly Unhonoured[]): string {
  const named = firstOf(found.map((u) => `\`${u.field}\` (${u.asks})`)).join(', ');
  return `the ${provider} provider's API has no equivalent of ${named}; send the request without ${found.length > 1 ? 'them' : 'it'}, or set \`dropUnsupportedParams\` on the \`ai\` backend to drop such fields`;
}

/** Fields named one by one in a message or a log field; past them, a count (a body of 100,000 parts names 10). */
const NAMED_FIELDS = 10;

/** The first NAMED_FIELDS of `names`, then `+N more`: what a client's body holds cannot size a log line or an answer. */
function firstOf(names: string[]): string[] {
  return names.length <= NAMED_FIELDS ? names : [...names.slice(0, NAMED_FIELDS), `+${names.length - NAMED_FIELDS} more`];
}

/** `llm.droppedParams`: the fields dropped, comma-separated, the first ten named. */
export function droppedFields(found: readonly Unhonoured[]): string {
  return firstOf(found.map((u) => u.field)).join(',');
}
