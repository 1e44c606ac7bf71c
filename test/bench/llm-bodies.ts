// The bodies of the `peers` scenario (BENCH_ONLY=peers): a 220-byte chat-completion request, and two answers, a small
// chat completion and one of exactly 16 KiB. Shared by the Node upstream (upstream.ts) and the nginx upstream config.

/** Pad the assistant's `content` so the JSON text is exactly `size` bytes (ASCII only: bytes = characters). */
function completion(size: number): string {
  const make = (content: string): string =>
    JSON.stringify({
      id: 'chatcmpl-bench',
      object: 'chat.completion',
      created: 1767225600,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 38, completion_tokens: Math.max(1, Math.round(size / 4)), total_tokens: 38 + Math.max(1, Math.round(size / 4)) },
    }) + '\n';
  const base = make('');
  return make('x'.repeat(Math.max(0, size - base.length)));
}

const request = (pad: string, stream?: boolean): string =>
  JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: 'You are a terse assistant.' },
      { role: 'user', content: `Summarise the bench in one line.${pad}` },
    ],
    max_tokens: 64,
    ...(stream ? { stream: true } : {}),
  });

/** The POST body of every request in the scenario: 220 bytes. */
export const CHAT_REQUEST = request(' '.repeat(220 - request('').length));
/**
 * CHAT_REQUEST with another `max_tokens` (the keys benches: the small answer's 80 completion tokens are above the 64
 * of CHAT_REQUEST, which no provider answers; a cap above the answer makes a keyed request's settlement a refund, as
 * with a real provider). Same length for caps of two digits, one byte more for three.
 */
export function chatRequestWithMaxTokens(maxTokens: number): string {
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new Error(`max_tokens must be a positive integer, not ${maxTokens}`);
  return CHAT_REQUEST.replace('"max_tokens":64', `"max_tokens":${maxTokens}`);
}

/** The same request streamed (`"stream": true`; the `ai` rows, bench/ai.ts). */
export const CHAT_STREAM_REQUEST = request(' '.repeat(220 - request('').length), true);

/** A streamed chat completion: eight content chunks, the finish chunk, the usage chunk and `[DONE]`. */
function streamAnswer(): string {
  const chunk = (delta: object, finish: string | null, usage?: object): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1767225600, model: 'gpt-4o-mini', choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
  let out = chunk({ role: 'assistant', content: '' }, null);
  for (const word of ['The ', 'bench ', 'sends ', 'one ', 'short ', 'chat ', 'and ', 'streams.']) out += chunk({ content: word }, null);
  out += chunk({}, 'stop');
  out += chunk({}, null, { prompt_tokens: 38, completion_tokens: 8, total_tokens: 46 });
  return `${out}data: [DONE]\n\n`;
}
/** The upstream's answer to a request whose body has `"stream":true` (bench/upstream.ts). */
export const STREAM_ANSWER = streamAnswer();
/** The upstream's answer on paths under `/small`. */
export const SMALL_ANSWER = completion(320);
/** The upstream's answer on paths under `/large`: 16 KiB. */
export const LARGE_ANSWER = completion(16 * 1024);
/** The paths the scenario posts to; the upstream answers by the first segment. */
export const SMALL_PATH = '/small/v1/chat/completions';
export const LARGE_PATH = '/large/v1/chat/completions';
