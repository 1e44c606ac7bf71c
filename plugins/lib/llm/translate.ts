// Which translation a (client format, wire format) pair needs, composed from the pairwise translators.
import type { LlmRouteType, LlmWireFormat } from './contract.ts';
import {
  completionsRequestToMessages,
  completionsResponseToMessages,
  CompletionsToMessagesStream,
  messagesRequestToCompletions,
  messagesResponseToCompletions,
  MessagesToCompletionsStream,
} from './completions-messages.ts';
import { completionsRequestToConverse, converseResponseToCompletions, ConverseToCompletionsStream } from './converse.ts';
import type { LlmEvent, StreamTranslator } from './events.ts';
import { completionsRequestToGemini, geminiResponseToCompletions, GeminiToCompletionsStream } from './gemini.ts';
import type { Obj } from './json.ts';

/** One step between two formats: the request one way, the response and stream the other way. */
interface Step {
  request(body: Obj): Obj;
  response(body: Obj, model: string): Obj;
  stream(model: string): StreamTranslator;
}

const COMPLETIONS_TO_MESSAGES: Step = {
  request: completionsRequestToMessages,
  response: (b) => messagesResponseToCompletions(b),
  stream: () => new MessagesToCompletionsStream(),
};

const MESSAGES_TO_COMPLETIONS: Step = {
  request: messagesRequestToCompletions,
  response: (b) => completionsResponseToMessages(b),
  stream: () => new CompletionsToMessagesStream(),
};

const COMPLETIONS_TO_CONVERSE: Step = {
  request: completionsRequestToConverse,
  response: (b, model) => converseResponseToCompletions(b, model),
  stream: (model) => new ConverseToCompletionsStream(model),
};

const COMPLETIONS_TO_GEMINI: Step = {
  request: completionsRequestToGemini,
  response: (b, model) => geminiResponseToCompletions(b, model),
  stream: (model) => new GeminiToCompletionsStream(model),
};

/** The steps from a client format to a wire format, client side first; undefined when not supported. */
function steps(client: LlmRouteType, wire: LlmWireFormat): Step[] | undefined {
  if ((client as string) === wire) return [];
  if (client === 'completions' && wire === 'messages') return [COMPLETIONS_TO_MESSAGES];
  if (client === 'messages' && wire === 'completions') return [MESSAGES_TO_COMPLETIONS];
  if (client === 'completions' && wire === 'converse') return [COMPLETIONS_TO_CONVERSE];
  if (client === 'messages' && wire === 'converse') return [MESSAGES_TO_COMPLETIONS, COMPLETIONS_TO_CONVERSE];
  if (client === 'completions' && wire === 'geminiNative') return [COMPLETIONS_TO_GEMINI];
  if (client === 'messages' && wire === 'geminiNative') return [MESSAGES_TO_COMPLETIONS, COMPLETIONS_TO_GEMINI];
  // Gemini's own clients reach Gemini natively (the route types are named differently from the wire formats).
  if (client === 'generateContent' && wire === 'geminiNative') return [];
  if (client === 'geminiCountTokens' && wire === 'geminiCountTokens') return [];
  return undefined;
}

/** Chained stream translators: each incoming event goes through the wire-side one first. */
class ChainedStream implements StreamTranslator {
  private readonly chain: StreamTranslator[];
  constructor(chain: StreamTranslator[]) {
    this.chain = chain;
  }
  private run(events: LlmEvent[], from: number): LlmEvent[] {
    let current = events;
    for (let i = from; i < this.chain.length; i++) {
      const next: LlmEvent[] = [];
      for (const e of current) next.push(...this.chain[i]!.event(e));
      current = next;
    }
    return current;
  }
  event(e: LlmEvent): LlmEvent[] {
    return this.run([e], 0);
  }
  end(): LlmEvent[] {
    const out: LlmEvent[] = [];
    for (let i = 0; i < this.chain.length; i++) out.push(...this.run(this.chain[i]!.end(), i + 1));
    return out;
  }
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

/** Built once per (client, wire) pair: a request only looks its translation up. */
const TRANSLATIONS = new Map<string, Translation | undefined>();

export function translation(client: LlmRouteType, wire: LlmWireFormat): Translation | undefined {
  const key = `${client} ${wire}`;
  if (TRANSLATIONS.has(key)) return TRANSLATIONS.get(key);
  const t = buildTranslation(client, wire);
  TRANSLATIONS.set(key, t);
  return t;
}

function buildTranslation(client: LlmRouteType, wire: LlmWireFormat): Translation | undefined {
  const chain = steps(client, wire);
  if (!chain) return undefined;
  return {
    identity: chain.length === 0,
    request: (body) => chain.reduce((b, s) => s.request(b), body),
    response: (body, model) => chain.reduceRight((b, s) => s.response(b, model), body),
    stream: (model) => {
      const translators = chain.map((s) => s.stream(model)).reverse();
      return translators.length === 1 ? translators[0]! : new ChainedStream(translators);
    },
  };
}

/** The API family whose error shape a format uses. */
export function errorFamily(format: LlmRouteType | LlmWireFormat): 'openai' | 'anthropic' | 'aws' | 'google' | 'other' {
  switch (format) {
    case 'completions':
    case 'responses':
    case 'embeddings':
      return 'openai';
    case 'messages':
    case 'anthropicTokenCount':
      return 'anthropic';
    case 'converse':
      return 'aws';
    case 'generateContent':
    case 'geminiCountTokens':
    case 'geminiNative':
      return 'google';
    default:
      return 'other';
  }
}
