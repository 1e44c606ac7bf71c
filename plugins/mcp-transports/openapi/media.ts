/** Media types read as text besides `text/*` (and any type that names a charset). */
const TEXT_TYPES = /^application\/(?:json|xml|yaml|x-yaml|javascript|ecmascript|graphql|x-ndjson|x-www-form-urlencoded)$|[+/](?:json|xml|yaml)$/;

/**
 * What a body of `contentType` is: text, or bytes (an image, audio, any other binary type). A request body of a
 * binary type takes base64 input; an answer's bytes become an MCP image, audio or blob block. No type is text.
 */
export function mediaKind(contentType: string | undefined): 'text' | 'image' | 'audio' | 'blob' {
  if (contentType === undefined) return 'text';
  const [type = '', ...params] = contentType.split(';').map((p) => p.trim().toLowerCase());
  if (type === '' || type.startsWith('text/') || TEXT_TYPES.test(type) || params.some((p) => p.startsWith('charset='))) return 'text';
  if (type.startsWith('image/')) return 'image';
  if (type.startsWith('audio/')) return 'audio';
  return 'blob';
}
