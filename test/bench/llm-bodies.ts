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

const request = (pad: string): string =>
  JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: 'You are a terse assistant.' },
      { role: 'user', content: `Summarise the bench in one line.${pad}` },
    ],
    max_tokens: 64,
  });

/** The POST body of every request in the scenario: 220 bytes. */
export const CHAT_REQUEST = request(' '.repeat(220 - request('').length));
/** The upstream's answer on paths under `/small`. */
export const SMALL_ANSWER = completion(320);
/** The upstream's answer on paths under `/large`: 16 KiB. */
export const LARGE_ANSWER = completion(16 * 1024);
/** The paths the scenario posts to; the upstream answers by the first segment. */
export const SMALL_PATH = '/small/v1/chat/completions';
export const LARGE_PATH = '/large/v1/chat/completions';
