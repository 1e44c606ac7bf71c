// Gemini native paths (`models/<m>:generateContent`, `:streamGenerateContent`, `:countTokens`), BEHAVIOUR.md §2.8.

/** What a Gemini native path says: the model (`models/<m>:...`, URL-decoded) and whether the answer streams. */
export interface GeminiPath {
  readonly model: string | undefined;
  readonly method: 'generateContent' | 'streamGenerateContent' | 'countTokens' | undefined;
}

const NATIVE_PATH = /\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;

/**
 * Read a Gemini native request path: `/v1beta/models/<m>:generateContent`, Vertex's
 * `/v1/projects/<p>/locations/<l>/publishers/google/models/<m>:streamGenerateContent`, or any route prefix before them.
 */
export function parseGeminiPath(path: string): GeminiPath {
  const m = NATIVE_PATH.exec(path);
  if (!m) return { model: undefined, method: undefined };
  return { model: decodedSegment(m[1]!), method: m[2] as GeminiPath['method'] };
}

/** A path segment URL-decoded; as it is when it does not decode (a lone `%`). */
export function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** A model name as Gemini's paths take it: without the `models/` resource prefix or a `google/` publisher. */
export function geminiModelName(model: string): string {
  return model.replace(/^models\//, '').replace(/^google\//, '');
}

/** `models/<m>:generateContent`, `:streamGenerateContent?alt=sse` or `:countTokens` under `prefix`. */
export function geminiNativePath(prefix: string, format: 'geminiNative' | 'geminiCountTokens', model: string, stream: boolean): string {
  const name = encodeURIComponent(geminiModelName(model)).replace(/%40/g, '@');
  if (format === 'geminiCountTokens') return `${prefix}/models/${name}:countTokens`;
  return `${prefix}/models/${name}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`;
}
