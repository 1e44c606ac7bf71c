// The images of an LLM request, for guards whose service judges images (`GuardInstance.seesImages`, ADR 0181). Every
// client API's image part, wherever it sits (a message, a tool result, a Responses item):
//   Chat Completions  {type: 'image_url', image_url: {url} | url}
//   Responses         {type: 'input_image', image_url}            (a `file_id` has no URL a service could read)
//   Anthropic         {type: 'image', source: {type: 'base64', media_type, data} | {type: 'url', url}}
//   Gemini            {inlineData | inline_data: {mimeType | mime_type: 'image/...', data}},
//                     {fileData | file_data: {mimeType | mime_type: 'image/...', fileUri | file_uri}} (http(s) only)
// Each becomes a URL: an `http(s)` URL as sent, inline bytes as a `data:` URL. Tool definitions are not walked.
import { isObj } from '../llm/json.ts';

type Obj = Record<string, unknown>;

/** Images of one request a guard service judges at most; a guard given more fails (503) rather than pass them unjudged. */
export const MAX_GUARDED_IMAGES = 16;

/** A guard given more images than it judges fails: passing them unjudged would make the image count a way around it. */
export function checkImageCount(images: readonly string[], service: string): void {
  if (images.length > MAX_GUARDED_IMAGES) throw new Error(`the request has ${images.length} images; ${service} judges at most ${MAX_GUARDED_IMAGES}`);
}

const WEB_URL = /^https?:\/\//i;
const DATA_IMAGE_URL = /^data:image\//i;

function imageUrl(url: unknown): string | undefined {
  return typeof url === 'string' && (WEB_URL.test(url) || DATA_IMAGE_URL.test(url)) ? url : undefined;
}

/** The image one part carries, as a URL, or undefined. */
function partImage(part: Obj): string | undefined {
  if (part.type === 'image_url') return imageUrl(isObj(part.image_url) ? part.image_url.url : part.image_url);
  if (part.type === 'input_image') return imageUrl(part.image_url);
  if (part.type === 'image' && isObj(part.source)) {
    const s = part.source;
    if (s.type === 'base64' && typeof s.media_type === 'string' && typeof s.data === 'string') return `data:${s.media_type};base64,${s.data}`;
    if (s.type === 'url') return imageUrl(s.url);
    return undefined;
  }
  const inline = part.inlineData ?? part.inline_data;
  if (isObj(inline)) {
    const mime = inline.mimeType ?? inline.mime_type;
    if (typeof mime === 'string' && mime.startsWith('image/') && typeof inline.data === 'string') return `data:${mime};base64,${inline.data}`;
    return undefined;
  }
  const file = part.fileData ?? part.file_data;
  if (isObj(file)) {
    const mime = file.mimeType ?? file.mime_type;
    if (typeof mime === 'string' && mime.startsWith('image/')) return imageUrl(file.fileUri ?? file.file_uri);
  }
  return undefined;
}

function walk(value: unknown, out: string[]): void {
  if (Array.isArray(value)) {
    for (const v of value) walk(v, out);
    return;
  }
  if (!isObj(value)) return;
  const image = partImage(value);
  if (image !== undefined) {
    out.push(image);
    return;
  }
  // Bodies are parsed with a depth limit (ADR 0148), so the recursion is bounded.
  for (const key in value) if (key !== 'tools' && key !== 'functions') walk(value[key], out);
}

/** The images of a request body in any client API's shape, as URLs, in document order. */
export function requestImages(body: Obj): string[] {
  const out: string[] = [];
  walk(body, out);
  return out;
}
