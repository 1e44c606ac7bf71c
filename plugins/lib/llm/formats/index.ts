// The format registry (ADR 0032): the built-in client API formats by name, a provider's own formats before them,
// and the translation between any two, composed through the canonical form (OpenAI Chat Completions).
import type { LlmEvent, StreamTranslator } from '../events.ts';
import type { Obj } from '../json.ts';
import { completions, embeddings } from './completions.ts';
import type { LlmFormat } from './format.ts';
import { geminiCountTokens, geminiNative } from './gemini.ts';
import { anthropicTokenCount, messages } from './messages.ts';
import { responses } from './responses.ts';

/** Built-in formats by route type and wire-format name (`generateContent` and `geminiNative` are one format). */
const BUILT_IN: ReadonlyMap<string, LlmFormat> = new Map<string, LlmFormat>([
  ['completions', completions],
  ['embeddings', embeddings],
  ['messages', messages],
  ['anthropicTokenCount', anthropicTokenCount],
  ['responses', responses],
  ['generateContent', geminiNative],
  ['geminiNative', geminiNative],
  ['geminiCountTokens', geminiCountTokens],
]);

/** The canonical form every translation goes through. */
export const CANONICAL: LlmFormat = completions;

/** The format of a name: a provider's own (`extra`) first, then the built-in ones. */
export function formatOf(name: string, extra?: readonly LlmFormat[]): LlmFormat | undefined {
  if (extra) for (const f of extra) if (f.name === name) return f;
  return BUILT_IN.get(name);
}

/** How a request of one format reaches a provider speaking another, and how its answer comes back. */
export interface Translation {
  /** No change either way: bodies and streams pass through as they are. */
  readonly identity: boolean;
  request(body: Obj): Obj;
  response(body: Obj, model: string): Obj;
  /** Translator of the response stream (wire events in, client events out). */
  stream(model: string): StreamTranslator;
}

const IDENTITY: Translation = {
  identity: true,
  request: (b) => b,
  response: (b) => b,
  stream: () => ({ event: (e) => [e], end: () => [] }),
};

/** Two stream translators in a row: each event goes through the wire side first. */
class ChainedStream implements StreamTranslator {
  private readonly first: StreamTranslator;
  private readonly second: StreamTranslator;
  constructor(first: StreamTranslator, second: StreamTranslator) {
    this.first = first;
    this.second = second;
  }
  event(e: LlmEvent): LlmEvent[] {
    const out: LlmEvent[] = [];
    for (const x of this.first.event(e)) out.push(...this.second.event(x));
    return out;
  }
  end(): LlmEvent[] {
    const out: LlmEvent[] = [];
    for (const x of this.first.end()) out.push(...this.second.event(x));
    out.push(...this.second.end());
    return out;
  }
  get halted(): boolean {
    return this.first.halted === true || this.second.halted === true;
  }
}

/**
 * The translation from a client format to a wire format: client -> canonical -> wire for the request, wire ->
 * canonical -> client for the answer; undefined when a side lacks its half (the backend answers 400 unsupported).
 */
function compose(client: LlmFormat, wire: LlmFormat): Translation | undefined {
  if (client === wire) return IDENTITY;
  const direct = wire.from !== undefined && Object.hasOwn(wire.from, client.name) ? wire.from[client.name]! : undefined;
  if (direct) return { identity: false, request: direct.request, response: direct.response, stream: IDENTITY.stream };
  const c = client === CANONICAL ? undefined : client;
  const w = wire === CANONICAL ? undefined : wire;
  if (c && !(c.requestToCanonical && c.responseFromCanonical && c.streamFromCanonical)) return undefined;
  if (w && !(w.requestFromCanonical && w.responseToCanonical && w.streamToCanonical)) return undefined;
  return {
    identity: false,
    request: (body) => {
      const canonical = c ? c.requestToCanonical!(body) : body;
      return w ? w.requestFromCanonical!(canonical) : canonical;
    },
    response: (body, model) => {
      const canonical = w ? w.responseToCanonical!(body, model) : body;
      return c ? c.responseFromCanonical!(canonical, model) : canonical;
    },
    stream: (model) => {
      if (!c) return w!.streamToCanonical!(model);
      if (!w) return c.streamFromCanonical!(model);
      return new ChainedStream(w.streamToCanonical!(model), c.streamFromCanonical!(model));
    },
  };
}

/** Built once per pair of formats: a request only looks its translation up. */
const TRANSLATIONS = new WeakMap<LlmFormat, Map<LlmFormat, Translation | undefined>>();

export function translationBetween(client: LlmFormat, wire: LlmFormat): Translation | undefined {
  let byWire = TRANSLATIONS.get(client);
  if (!byWire) TRANSLATIONS.set(client, (byWire = new Map()));
  if (byWire.has(wire)) return byWire.get(wire);
  const t = compose(client, wire);
  byWire.set(wire, t);
  return t;
}

/** The translation between two formats named by route type and wire format (`extra`: the provider's own formats). */
export function translation(client: string, wire: string, extra?: readonly LlmFormat[]): Translation | undefined {
  const c = formatOf(client);
  const w = formatOf(wire, extra);
  return c && w ? translationBetween(c, w) : undefined;
}
