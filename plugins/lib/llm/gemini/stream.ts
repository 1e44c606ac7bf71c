// Gemini native `streamGenerateContent?alt=sse` -> OpenAI Chat Completions stream (BEHAVIOUR.md §2.8, §4.6).
import { randomUUID } from 'node:crypto';
import { DONE } from '../events.ts';
import type { LlmEvent, StreamTranslator } from '../events.ts';
import { addThinking } from '../thinking.ts';
import { isObj, nowSeconds } from '../json.ts';
import type { Obj } from '../json.ts';
import { firstCandidate, geminiFinishToOpenAi, geminiUsageToCompletions, thinkingOfParts, toolCallOf } from './answer.ts';

/**
 * `streamGenerateContent?alt=sse` chunks (each a partial `GenerateContentResponse`) as `chat.completion.chunk`s:
 * a role chunk first, text and whole function calls as they come, the finish reason, then, once the provider's
 * stream has ended after a finish reason, a usage chunk and `[DONE]`. A stream cut before a finish reason is not
 * completed.
 */
export class GeminiToCompletionsStream implements StreamTranslator {
  private id = `chatcmpl-${randomUUID()}`;
  private readonly created = nowSeconds();
  private model: string;
  private started = false;
  private nextTool = 0;
  private finish: string | null = null;
  private failed = false;
  private usage: Obj | undefined = undefined;
  /** The turn's first thought signature has been passed on (the one Gemini wants back). */
  private signed = false;

  constructor(model: string) {
    this.model = model;
  }

  private chunk(delta: Obj, finish: string | null = null): LlmEvent {
    return { type: undefined, data: { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] } };
  }

  event(e: LlmEvent): LlmEvent[] {
    if (this.failed || e.done) return [];
    const d = e.data;
    if (isObj(d.error)) {
      this.failed = true;
      const err: Obj = d.error;
      return [{ type: undefined, data: { error: { message: err.message ?? 'upstream error', type: err.status ?? 'api_error', param: null, code: err.code ?? null } } }];
    }
    const out: LlmEvent[] = [];
    if (!this.started) {
      this.started = true;
      if (typeof d.responseId === 'string' && d.responseId) this.id = d.responseId;
      if (typeof d.modelVersion === 'string' && d.modelVersion) this.model = d.modelVersion;
      out.push(this.chunk({ role: 'assistant', content: '' }));
    }
    if (isObj(d.usageMetadata)) this.usage = { ...(this.usage ?? {}), ...d.usageMetadata };
    const candidate = firstCandidate(d);
    if (!candidate) {
      if (isObj(d.promptFeedback) && d.promptFeedback.blockReason && this.finish === null) {
        this.finish = 'content_filter';
        out.push(this.chunk({}, this.finish));
      }
      return out;
    }
    const parts: Obj[] = isObj(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts.filter(isObj) : [];
    for (const p of parts) {
      // Thoughts and signatures ride beside the chunk for an Anthropic client's thinking block (ADR 0167).
      const { thinking, signature } = thinkingOfParts([p]);
      const piece: Obj = { type: 'thinking' };
      if (thinking) piece.thinking = thinking;
      if (signature && !this.signed) piece.signature = signature;
      if (piece.signature) this.signed = true;
      if (piece.thinking !== undefined || piece.signature !== undefined) {
        const delta: Obj = {};
        addThinking(delta, [piece]);
        out.push(this.chunk(delta));
      }
      if (p.thought === true) continue;
      if (typeof p.text === 'string') {
        if (p.text) out.push(this.chunk({ content: p.text }));
      } else if (isObj(p.functionCall)) {
        out.push(this.chunk({ tool_calls: [toolCallOf(p, this.nextTool++)] }));
      }
    }
    const finish = geminiFinishToOpenAi(candidate.finishReason, this.nextTool > 0);
    if (finish && this.finish === null) {
      this.finish = finish;
      out.push(this.chunk({}, finish));
    }
    return out;
  }

  end(): LlmEvent[] {
    if (this.failed || this.finish === null) return [];
    const out: LlmEvent[] = [];
    const usage = geminiUsageToCompletions(this.usage);
    if (usage) out.push({ type: undefined, data: { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage } });
    out.push(DONE);
    return out;
  }
}
