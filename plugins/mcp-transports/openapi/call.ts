import { randomBytes } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isObject } from './document.ts';
import { mediaKind } from './media.ts';
import type { JsonObject } from './document.ts';
import type { OperationPlan, ParameterPlan } from './tools.ts';
import { NOT_FORWARDED } from '../../lib/mcp/client-headers.ts';

/** The HTTP request one tool call becomes. */
export interface BuiltRequest {
  readonly method: string;
  /** Base path + filled path template + query string. */
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string | Buffer | undefined;
}

/** Percent-encode everything but RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`). */
export function encodeStrict(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function scalar(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}

/** A path or header value in `simple` style: arrays `a,b`, objects `k,v,k,v` (or `k=v,k=v` exploded). */
function simpleValue(value: unknown, explode: boolean, encode: (s: string) => string): string {
  if (Array.isArray(value)) return value.map((v) => encode(scalar(v))).join(',');
  if (isObject(value)) {
    return Object.entries(value)
      .map(([k, v]) => (explode ? `${encode(k)}=${encode(scalar(v))}` : `${encode(k)},${encode(scalar(v))}`))
      .join(',');
  }
  return encode(scalar(value));
}

/**
 * A path parameter's text per its style: `simple` (`x,y`), `label` (`.x,y`, exploded `.x.y`), `matrix` (`;id=x,y`,
 * exploded `;id=x;id=y`, objects `;k=v;k2=v2`), or `json` for one described by `content`.
 */
function pathValue(plan: ParameterPlan | undefined, name: string, value: unknown): string {
  const explode = plan?.explode ?? false;
  switch (plan?.style) {
    case 'json':
      return encodeStrict(JSON.stringify(value));
    case 'label':
      return `.${explode && (Array.isArray(value) || isObject(value)) ? simpleValue(value, true, encodeStrict).replace(/,/g, '.') : simpleValue(value, false, encodeStrict)}`;
    case 'matrix': {
      const key = encodeStrict(name);
      if (explode && Array.isArray(value)) return value.map((v) => `;${key}=${encodeStrict(scalar(v))}`).join('');
      if (explode && isObject(value)) return Object.entries(value).map(([k, v]) => `;${encodeStrict(k)}=${encodeStrict(scalar(v))}`).join('');
      return `;${key}=${simpleValue(value, false, encodeStrict)}`;
    }
    default:
      return simpleValue(value, explode, encodeStrict);
  }
}

/** The `k=v` pairs of one query parameter: arrays repeated (or joined when not exploded), null a bare key. */
function queryPairs(plan: ParameterPlan, value: unknown): string[] {
  const key = encodeStrict(plan.name);
  if (plan.style === 'json') return [`${key}=${encodeStrict(JSON.stringify(value))}`];
  if (value === null) return [key];
  const separator = plan.style === 'spaceDelimited' ? '%20' : plan.style === 'pipeDelimited' ? '|' : ',';
  if (Array.isArray(value)) {
    if (plan.explode) return value.map((v) => `${key}=${encodeStrict(scalar(v))}`);
    return [`${key}=${value.map((v) => encodeStrict(scalar(v))).join(separator)}`];
  }
  if (isObject(value)) {
    if (plan.style === 'deepObject') return Object.entries(value).map(([k, v]) => `${key}%5B${encodeStrict(k)}%5D=${encodeStrict(scalar(v))}`);
    if (plan.explode) return Object.entries(value).map(([k, v]) => `${encodeStrict(k)}=${encodeStrict(scalar(v))}`);
    return [`${key}=${Object.entries(value).flatMap(([k, v]) => [encodeStrict(k), encodeStrict(scalar(v))]).join(separator)}`];
  }
  return [`${key}=${encodeStrict(scalar(value))}`];
}

/**
 * The `name=value` pairs of one cookie parameter (`form` style): arrays and objects joined by `,`, or when exploded
 * one pair per item (`name=a; name=b`, objects `k=v`); names and values percent-encoded, so no `;`, `,` or space
 * of a model's value can end the pair or add another cookie.
 */
function cookiePairs(plan: ParameterPlan, value: unknown): string[] {
  const key = encodeStrict(plan.name);
  if (plan.style === 'json') return [`${key}=${encodeStrict(JSON.stringify(value))}`];
  if (plan.explode && Array.isArray(value)) return value.map((v) => `${key}=${encodeStrict(scalar(v))}`);
  if (plan.explode && isObject(value)) return Object.entries(value).map(([k, v]) => `${encodeStrict(k)}=${encodeStrict(scalar(v))}`);
  return [`${key}=${simpleValue(value, false, encodeStrict)}`];
}

/** `multipart/form-data` parts: file fields (base64 input) as their declared type or `application/octet-stream`, others as text. */
function multipartBody(fields: JsonObject, fileFields: ReadonlySet<string>, fileTypes: Readonly<Record<string, string>>, boundary: string): Buffer {
  const parts: Buffer[] = [];
  const quote = (s: string): string => s.replace(/["\r\n]/g, (c) => encodeURIComponent(c));
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) && fileFields.has(name) ? value : [value]) {
      const file = fileFields.has(name);
      const head = file
        ? `Content-Disposition: form-data; name="${quote(name)}"; filename="${quote(name)}"\r\nContent-Type: ${(Object.hasOwn(fileTypes, name) && fileTypes[name]) || 'application/octet-stream'}`
        : `Content-Disposition: form-data; name="${quote(name)}"`;
      parts.push(Buffer.from(`--${boundary}\r\n${head}\r\n\r\n`));
      parts.push(file ? Buffer.from(typeof item === 'string' ? item : '', 'base64') : Buffer.from(scalar(item)));
      parts.push(Buffer.from('\r\n'));
    }
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(parts);
}

/** `group[name]` when the arguments hold it: not `constructor`, `toString`, ... of every object. */
function own(group: JsonObject, name: string): unknown {
  return Object.hasOwn(group, name) ? group[name] : undefined;
}

/** The argument groups a tool's input schema lists (tools.ts), in its order. */
function argumentGroups(operation: OperationPlan): string[] {
  const groups = (['path', 'query', 'header', 'cookie'] as const).filter((g) => operation[g].length > 0);
  return operation.body ? [...groups, 'body'] : groups;
}

/** The problem with an argument the tool's input schema does not list, or a parameter group that is not an object. */
function unknownArgument(operation: OperationPlan, args: JsonObject): string | undefined {
  const groups = argumentGroups(operation);
  for (const [key, value] of Object.entries(args)) {
    // `query` sends undeclared keys even where the document declares none; an empty group says nothing.
    if (value === undefined || (key === 'query' && isObject(value)) || (isObject(value) && Object.keys(value).length === 0 && key !== 'body')) continue;
    if (!groups.includes(key)) {
      const takes = groups.length ? `this tool takes ${groups.map((g) => `\`${g}\``).join(', ')}` : 'this tool takes no arguments';
      const group = (['path', 'query', 'header', 'cookie'] as const).find((g) => operation[g].some((p) => p.name === key));
      return `unknown argument \`${key}\`: ${takes}${group ? ` (a parameter goes in its group: arguments.${group}.${key})` : ''}`;
    }
    if (key !== 'body' && !isObject(value)) return `argument \`${key}\` must be an object`;
  }
  return undefined;
}

/**
 * Build the HTTP request of a tool call, or return the message of an argument problem (an argument the input schema
 * does not list, a missing required parameter or body, a value that cannot be sent). `args` is the tool's
 * `arguments`: `{path?, query?, header?, cookie?, body?}`.
 *
 * - path: `{name}` filled per its style (`simple`, `label`, `matrix`), strings percent-encoded (all but unreserved
 *   characters), numbers as they are; a value that fills nothing or makes a dot segment refused;
 * - query: declared and undeclared keys sent; arrays as repeated keys (`explode`, the default) or joined;
 *   null as a bare key; objects per `style` (`deepObject` as `name[k]=v`);
 * - headers: client headers (`clientHeaders`, minus framing and MCP session headers), then declared header
 *   parameters over them; declared cookie parameters added to the client's `cookie`; `accept` the operation's
 *   2xx media types;
 * - body: JSON (or URL-encoded form fields, multipart parts, base64-decoded bytes, text, per the operation's
 *   media type).
 */
export function buildRequest(
  operation: OperationPlan,
  basePath: string,
  args: JsonObject,
  clientHeaders: Readonly<Record<string, string>> = {},
): BuiltRequest | string {
  const unknown = unknownArgument(operation, args);
  if (unknown !== undefined) return unknown;
  const pathArgs = isObject(args.path) ? args.path : {};
  const queryArgs = isObject(args.query) ? args.query : {};
  const headerArgs = isObject(args.header) ? args.header : {};
  const cookieArgs = isObject(args.cookie) ? args.cookie : {};

  const pathPlans = new Map(operation.path.map((p) => [p.name, p]));
  let missing: string | undefined;
  const template = operation.pathTemplate;
  const fill = (segment: string): string =>
    segment.replace(/\{([^}]+)\}/g, (_whole: string, name: string) => {
      const value = own(pathArgs, name);
      // `[]` and `{}` fill nothing: `/pet/` is another endpoint than `/pet/{id}`.
      if (value === undefined || value === null || value === '' || (typeof value === 'object' && Object.keys(value).length === 0)) {
        missing ??= name;
        return '';
      }
      return pathValue(pathPlans.get(name), name, value);
    });
  let dotSegment: string | undefined;
  const filled = template
    .split('/')
    .map((segment) => {
      if (!segment.includes('{')) return segment;
      const text = fill(segment);
      // `.` and `..` are unreserved, so encoding leaves them: as a whole segment the upstream resolves them, and a
      // model's `..` reaches an endpoint of the API no tool offers. Two adjacent parameters can make one too.
      if (text === '.' || text === '..') {
        const one = /^\{([^}]+)\}$/.exec(segment)?.[1];
        dotSegment ??= one !== undefined ? `path parameter \`${one}\` may not be \`${text}\`` : `path parameters may not make the segment \`${text}\``;
      }
      return text;
    })
    .join('/');
  if (missing !== undefined) return `missing path parameter \`${missing}\` (pass it as arguments.path.${missing})`;
  if (dotSegment !== undefined) return `${dotSegment} (a dot segment would call another path of the API)`;

  const queryPlans = new Map(operation.query.map((p) => [p.name, p]));
  const pairs: string[] = [];
  for (const [name, value] of Object.entries(queryArgs)) {
    if (value === undefined) continue;
    pairs.push(...queryPairs(queryPlans.get(name) ?? { name, required: false, style: 'form', explode: true }, value));
  }
  for (const plan of operation.query) {
    if (plan.required && own(queryArgs, plan.name) === undefined) return `missing query parameter \`${plan.name}\` (pass it as arguments.query.${plan.name})`;
  }

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(clientHeaders)) {
    const lower = name.toLowerCase();
    if (!NOT_FORWARDED.has(lower)) headers[lower] = value;
  }
  const headerArgsLower = new Map(Object.entries(headerArgs).map(([k, v]) => [k.toLowerCase(), v]));
  for (const plan of operation.header) {
    const value = headerArgsLower.get(plan.name.toLowerCase());
    if (value === undefined || value === null) {
      if (plan.required) return `missing header parameter \`${plan.name}\` (pass it as arguments.header.${plan.name})`;
      continue;
    }
    const oneLine = (s: string): string => s.replace(/[\r\n]+/g, ' ');
    const text = plan.style === 'json' ? oneLine(JSON.stringify(value)) : simpleValue(value, plan.explode, oneLine);
    // What HTTP field values may hold (as node:http checks); undici would refuse the request with a bare code.
    if (/[^\t\x20-\x7e\x80-\xff]/.test(text)) return `header parameter \`${plan.name}\` has characters a header cannot carry (controls, or past U+00FF)`;
    headers[plan.name.toLowerCase()] = text;
  }
  const cookies: string[] = [];
  for (const plan of operation.cookie) {
    const value = own(cookieArgs, plan.name);
    if (value === undefined || value === null) {
      if (plan.required) return `missing cookie parameter \`${plan.name}\` (pass it as arguments.cookie.${plan.name})`;
      continue;
    }
    cookies.push(...cookiePairs(plan, value));
  }
  // After the client's own cookies, when the backend passes them (ADR 0128).
  if (cookies.length > 0) headers.cookie = [...(headers.cookie ? [headers.cookie] : []), ...cookies].join('; ');
  headers.accept = operation.accept;

  let body: string | Buffer | undefined;
  const plan = operation.body;
  if (plan && args.body !== undefined) {
    headers['content-type'] = plan.mediaType;
    if (plan.encoding === 'json') body = JSON.stringify(args.body);
    else if (plan.encoding === 'binary') body = Buffer.from(typeof args.body === 'string' ? args.body : '', 'base64');
    else if (plan.encoding === 'text') body = scalar(args.body);
    else if (plan.encoding === 'multipart') {
      const boundary = `----switchyard${randomBytes(12).toString('hex')}`;
      headers['content-type'] = `multipart/form-data; boundary=${boundary}`;
      body = multipartBody(isObject(args.body) ? args.body : {}, new Set(plan.fileFields ?? []), plan.fileTypes ?? {}, boundary);
    } else {
      const fields = new URLSearchParams();
      if (isObject(args.body)) {
        for (const [k, v] of Object.entries(args.body)) {
          if (v === undefined) continue;
          if (Array.isArray(v)) for (const item of v) fields.append(k, scalar(item));
          else fields.append(k, scalar(v));
        }
      }
      body = fields.toString();
    }
  } else if (plan?.required) {
    return 'missing request body (pass it as arguments.body)';
  }

  const query = pairs.length ? `?${pairs.join('&')}` : '';
  return { method: operation.method, path: `${basePath}${filled}${query}`, headers, body };
}

/** What came back from the API. */
export interface ApiAnswer {
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: Buffer;
  /** The URL called (origin and path, before `backendAuth`): names a binary answer's embedded resource. */
  readonly url: string;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (text.trim() === '') return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * Turn the API's answer into a `tools/call` result.
 * - 2xx with a JSON object: that object as `structuredContent`, and as a text block of serialised JSON;
 *   JSON arrays and scalars wrapped as `{data: ...}`; JSON `null` only as text;
 * - 2xx with an image or audio type: an `image` / `audio` block of its bytes (base64); another binary type (not
 *   `text/*`, JSON, XML, YAML, nor naming a charset): an embedded `resource` with the bytes as `blob`;
 * - 2xx with any other text (or nothing): `{code: <status>, message: <body text>}`;
 * - any other status: `isError: true`, a text block `HTTP <status>: <body>` and `structuredContent`
 *   `{status, body}` (the body parsed when it is JSON).
 */
export function toToolResult(answer: ApiAnswer): CallToolResult {
  const ok = answer.status >= 200 && answer.status <= 299;
  const kind = mediaKind(answer.contentType);
  if (ok && kind !== 'text' && answer.body.length > 0) {
    const mimeType = answer.contentType!.split(';')[0]!.trim();
    const data = answer.body.toString('base64');
    if (kind === 'blob') return { content: [{ type: 'resource', resource: { uri: answer.url, mimeType, blob: data } }] };
    return { content: [{ type: kind, data, mimeType }] };
  }
  const text = answer.body.toString('utf8');
  const parsed = parseJson(text);
  if (!ok) {
    const body = parsed.ok ? parsed.value : text;
    return {
      isError: true,
      content: [{ type: 'text', text: `HTTP ${answer.status}${text ? `: ${text}` : ''}` }],
      structuredContent: { status: answer.status, body },
    };
  }
  if (parsed.ok && parsed.value === null) return { content: [{ type: 'text', text: 'null' }] };
  let structured: JsonObject;
  if (parsed.ok) structured = isObject(parsed.value) ? parsed.value : { data: parsed.value };
  else structured = { code: answer.status, message: text };
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

/** A result for a call that never reached an answer (bad arguments, the API unreachable). */
export function errorResult(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: message }] };
}
