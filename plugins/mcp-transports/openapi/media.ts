import { isObject } from './document.ts';
import type { JsonObject } from './document.ts';
import type { BodyPlan } from './tools.ts';

/** Media types read as text besides `text/*` (and any type that names a charset). */
const TEXT_TYPES = /^application\/(?:json|xml|yaml|x-yaml|javascript|ecmascript|graphql|x-ndjson|x-www-form-urlencoded)$|[+/](?:json|xml|yaml)$/;

/**
 * `type` as a bare media type (`type/subtype`, lower-case, parameters dropped), or undefined when it is not one (it
 * then never reaches a header); a wildcard subtype (`image/*`) only when `wildcard`.
 */
export function bareMediaType(type: string, wildcard = false): string | undefined {
  const bare = type.split(';')[0]!.trim().toLowerCase();
  return (wildcard ? /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+*-]+$/ : /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/).test(bare) ? bare : undefined;
}

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

/**
 * Choose how a request body is sent: JSON first, then form fields, multipart parts, raw bytes (octet-stream, then
 * any other binary type), text (`text/plain`, then any other text type). A wildcard type (with a `*`) names nothing.
 */
export function pickBody(content: JsonObject): { mediaType: string; encoding: BodyPlan['encoding'] } | undefined {
  const base = (t: string): string => t.split(';')[0]!.trim().toLowerCase();
  const types = Object.keys(content).filter((t) => !base(t).includes('*'));
  const json = types.find((t) => base(t) === 'application/json') ?? types.find((t) => /^[a-z]+\/[^;]*\+json$/.test(base(t)));
  if (json) return { mediaType: json, encoding: 'json' };
  const form = types.find((t) => base(t) === 'application/x-www-form-urlencoded');
  if (form) return { mediaType: form, encoding: 'form' };
  const multipart = types.find((t) => base(t) === 'multipart/form-data');
  if (multipart) return { mediaType: multipart, encoding: 'multipart' };
  const binary = types.find((t) => base(t) === 'application/octet-stream') ?? types.find((t) => !base(t).startsWith('multipart/') && mediaKind(t) !== 'text');
  if (binary) return { mediaType: binary, encoding: 'binary' };
  const text = types.find((t) => base(t) === 'text/plain') ?? types.find((t) => mediaKind(t) === 'text' && !base(t).startsWith('multipart/'));
  if (text) return { mediaType: text, encoding: 'text' };
  return undefined;
}

/** A multipart field that is a file (base64 input): `format: binary`, or 3.1's `contentMediaType` without an encoding. */
function isFileSchema(schema: unknown): boolean {
  return isObject(schema) && schema.type === 'string' && (schema.format === 'binary' || (typeof schema.contentMediaType === 'string' && schema.contentEncoding === undefined));
}

/** A file field's input schema: base64 text in place of `format: binary`. */
function base64Schema(schema: JsonObject): JsonObject {
  const { format: _format, ...rest } = schema;
  return { ...rest, contentEncoding: 'base64' };
}

/**
 * A multipart body's properties with its file fields (a file schema, or an array of them) taking base64, the names
 * of those fields, and each one's part type when not octet-stream: the first concrete type its `encoding` entry
 * lists, else the field's `contentMediaType`.
 */
export function multipartFiles(
  schemaProperties: JsonObject,
  encoding: JsonObject,
): { properties: JsonObject; fileFields: string[]; fileTypes: Record<string, string> } {
  const properties: JsonObject = {};
  const fileFields: string[] = [];
  const fileTypes: Record<string, string> = {};
  for (const [name, sub] of Object.entries(schemaProperties)) {
    const file = isFileSchema(sub) ? (sub as JsonObject) : isObject(sub) && sub.type === 'array' && isFileSchema(sub.items) ? (sub.items as JsonObject) : undefined;
    if (!file) {
      properties[name] = sub;
      continue;
    }
    fileFields.push(name);
    properties[name] = file === sub ? base64Schema(file) : { ...(sub as JsonObject), items: base64Schema(file) };
    const entry = Object.hasOwn(encoding, name) ? encoding[name] : undefined;
    const listed = isObject(entry) && typeof entry.contentType === 'string' ? entry.contentType.split(',') : [];
    const type = [...listed, file.contentMediaType].map((t) => (typeof t === 'string' ? bareMediaType(t) : undefined)).find((t) => t !== undefined);
    if (type !== undefined && type !== 'application/octet-stream') fileTypes[name] = type;
  }
  return { properties, fileFields, fileTypes };
}
