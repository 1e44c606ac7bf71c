// What a `passthrough` answer is read in for its usage (ADR 0164): the request is forwarded unread, but an answer of
// an API the path names is observed on the way as a translated route's is, so limits and budgets settle on it.
import { replyHeader } from 'switchyard/sdk';
import type { Reply } from 'switchyard/sdk';
import type { LlmProviderInstance, LlmWireFormat } from '../../lib/llm/contract.ts';
import type { LlmFormat } from '../../lib/llm/formats/format.ts';
import { formatOf } from '../../lib/llm/formats/index.ts';
import { decodedSegment } from '../../lib/llm/gemini/paths.ts';

/** The API a request path's last part names: the providers' own paths (a prefix before them is the route's). */
function formatOfPath(path: string): LlmWireFormat | undefined {
  if (path.endsWith('/chat/completions')) return 'completions';
  if (path.endsWith('/responses')) return 'responses';
  if (path.endsWith('/messages')) return 'messages';
  if (path.endsWith('/embeddings')) return 'embeddings';
  if (path.endsWith(':generateContent') || path.endsWith(':streamGenerateContent')) return 'geminiNative';
  if (path.endsWith('/converse') || path.endsWith('/converse-stream')) return 'converse';
  // Bedrock's InvokeModel: a Claude model answers in the Messages format (another model's answer has no such usage).
  // Its stream (`chunk` events with the model's JSON in base64, read as such by stream.ts) too; another model's last
  // chunk carries Bedrock's invocation metrics, which the Messages format reads as well (ADR 0190).
  if (path.endsWith('/invoke') || path.endsWith('/invoke-with-response-stream')) return 'messages';
  return undefined;
}

/**
 * The format a passthrough answer's usage is read in: the API the path names, else the one the provider says its
 * path is in (Vertex's Claude `rawPredict`: Messages); undefined when neither says (the answer is not read).
 */
export function passthroughAnswerFormat(provider: LlmProviderInstance, path: string, named: LlmWireFormat | undefined): LlmFormat | undefined {
  const name = formatOfPath(path) ?? named;
  return name === undefined ? undefined : formatOf(name, provider.formats);
}

/** Whether an answer may carry usage: JSON, or an event stream (SSE, AWS's); audio, files and the like are not read. */
export function mayCarryUsage(reply: Reply): boolean {
  const type = String(replyHeader(reply, 'content-type') ?? '').toLowerCase();
  return type.includes('json') || type.includes('text/event-stream') || type.includes('application/vnd.amazon.eventstream');
}

/** Whether an answer is a stream (its events observed as they pass) rather than a whole body. */
export function isStreamAnswer(reply: Reply): boolean {
  const type = String(replyHeader(reply, 'content-type') ?? '').toLowerCase();
  return type.includes('text/event-stream') || type.includes('application/vnd.amazon.eventstream');
}

/** A model in the path: Gemini's and Vertex's `models/<m>:<method>`, Bedrock's `model/<id>/<operation>`. */
const MODEL_IN_PATH = /\/models?\/([^/:]+)(?::(generateContent|streamGenerateContent|countTokens|rawPredict|streamRawPredict)|\/(converse|converse-stream|invoke|invoke-with-response-stream|count-tokens))$/;
const STREAMED_METHODS: ReadonlySet<string> = new Set(['streamGenerateContent', 'streamRawPredict', 'converse-stream', 'invoke-with-response-stream']);

/**
 * What a passthrough path says of its call (ADR 0180): the model it names (URL-decoded) and whether the method it
 * names streams; both undefined when the path names no model (OpenAI's and Anthropic's APIs name it in the body).
 */
export function passthroughPathCall(path: string): { model: string | undefined; stream: boolean | undefined } {
  const m = MODEL_IN_PATH.exec(path);
  if (!m) return { model: undefined, stream: undefined };
  return { model: decodedSegment(m[1]!), stream: STREAMED_METHODS.has(m[2] ?? m[3]!) };
}
