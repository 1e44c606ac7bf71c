// Gemini `streamGenerateContent?alt=sse` for response guards on streams (stream-guard.ts): each event is a
// `GenerateContentResponse` whose candidates carry text deltas in `content.parts[].text`; put together, a candidate
// has one text part (and one thought part, when the model streams its thoughts) as a non-streamed answer would.
import { isObj } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';
import type { Builder, StreamText, TextRef } from './stream-guard.ts';

interface TextAcc {
  text: string;
  readonly refs: TextRef[];
}

interface CandidateAcc {
  readonly index: number;
  finish: unknown;
  /** Answer text, then thought text (`thought: true` parts), each put together from its deltas. */
  readonly answer: TextAcc;
  readonly thought: TextAcc;
  /** Parts without text (function calls, inline data), in order. */
  readonly other: Obj[];
  readonly extra: Obj;
}

/** A text delta: masking gives the first one the whole text and empties the others (the event stays). */
function partRef(at: number, part: Obj): TextRef {
  return {
    at,
    set(text) {
      part.text = text;
    },
    clear() {
      part.text = '';
      return false;
    },
  };
}

export const generateContent: Builder = (events) => {
  const candidates = new Map<number, CandidateAcc>();
  const top: Obj = {};
  events.forEach((e, at) => {
    const d = e.data;
    if (!d) return;
    for (const key of ['usageMetadata', 'modelVersion', 'responseId', 'promptFeedback']) if (d[key] !== undefined) top[key] = d[key];
    if (!Array.isArray(d.candidates)) return;
    for (const c of d.candidates) {
      if (!isObj(c)) continue;
      const index = typeof c.index === 'number' ? c.index : 0;
      let acc = candidates.get(index);
      if (!acc) candidates.set(index, (acc = { index, finish: undefined, answer: { text: '', refs: [] }, thought: { text: '', refs: [] }, other: [], extra: {} }));
      if (c.finishReason !== undefined) acc.finish = c.finishReason;
      for (const key of ['safetyRatings', 'citationMetadata', 'groundingMetadata']) if (c[key] !== undefined) acc.extra[key] = c[key];
      if (!isObj(c.content) || !Array.isArray(c.content.parts)) continue;
      for (const part of c.content.parts) {
        if (!isObj(part)) continue;
        if (typeof part.text !== 'string') {
          acc.other.push(part);
          continue;
        }
        const into = part.thought === true ? acc.thought : acc.answer;
        into.text += part.text;
        into.refs.push(partRef(at, part));
      }
    }
  });
  const accs = [...candidates.values()].sort((a, b) => a.index - b.index);
  const texts: StreamText[] = [];
  const body: Obj = {
    candidates: accs.map((a) => {
      const parts: Obj[] = [];
      for (const [acc, thought] of [[a.thought, true], [a.answer, false]] as const) {
        if (acc.refs.length === 0) continue;
        const part: Obj = thought ? { text: acc.text, thought: true } : { text: acc.text };
        parts.push(part);
        texts.push({ read: () => part.text as string, refs: acc.refs, snapshots: [] });
      }
      parts.push(...a.other);
      const candidate: Obj = { index: a.index, content: { role: 'model', parts }, ...a.extra };
      if (a.finish !== undefined) candidate.finishReason = a.finish;
      return candidate;
    }),
    ...top,
  };
  return { body, texts, bodyEvents: [] };
};
