import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { CredentialLocation } from 'switchyard/sdk';
import { isObject, serversPath } from './document.ts';
import type { JsonObject, OpenApiDocument } from './document.ts';
import { jsonExtent } from './expanded-size.ts';
import { bareMediaType, multipartFiles, pickBody } from './media.ts';
import type { JsonExtent } from './expanded-size.ts';
import { ExpansionLimit, RefResolver, writableOnly } from './refs.ts';
import { credentialLocationOf } from './security.ts';
import { NOT_FORWARDED } from '../../lib/mcp/client-headers.ts';

/** HTTP methods an OpenAPI path item may hold, lower-case as in the document. */
const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
/** Header parameters OpenAPI says to ignore: the request's own framing decides them. */
const IGNORED_HEADER_PARAMS = new Set(['accept', 'content-type', 'authorization']);
/**
 * Tool names: 1-64 of `[A-Za-z0-9_-]`, what LLM APIs take as a function name (OpenAI, Anthropic); MCP 2025-11-25
 * allows 128 and dots, but a client hands the names to a model, whose API refuses the whole request for one. ADR 0163.
 */
const TOOL_NAME_MAX = 64;
/**
 * JSON of one tool (its input schema with every `$ref` inlined) past which the tool is left out: more than a model
 * can read, and `$ref`s used many times over expand without bound (expanded-size.ts). ADR 0134.
 */
export const MAX_TOOL_BYTES = 4 * 1024 * 1024;
/**
 * Nesting of one tool's JSON past which the tool is left out: a schema 2,000 levels deep was converted, then failed
 * every `tools/list` (the copy each list makes ran out of stack). Real schemas nest a few dozen levels.
 */
export const MAX_TOOL_DEPTH = 128;
/** JSON of all of a document's tools past which the rest are left out: as much as a paged target's list (MAX_LIST_BYTES). */
export const MAX_TOOLS_BYTES = 32 * 1024 * 1024;
/**
 * Tools one document gives. Past it (or past MAX_TOOLS_BYTES) the rest are counted, not converted: a 20 MiB document
 * of 1,000,000 bare operations took 12 s of load (or of a serving gateway's refresh) and 1.4 GiB of heap to keep
 * 215,000. A model is offered a few hundred tools at most (OpenAI takes 128 per request). ADR 0163.
 */
export const MAX_TOOLS = 10_000;

/** A parameter of an operation, as the call needs it. */
export interface ParameterPlan {
  readonly name: string;
  readonly required: boolean;
  /**
   * `form` (query default), `simple` (path and header default), `deepObject`, `spaceDelimited`, `pipeDelimited`,
   * ..., or `json` for a parameter described by `content` (sent as serialised JSON).
   */
  readonly style: string;
  readonly explode: boolean;
}

/** How a tool's `body` argument is sent. */
export interface BodyPlan {
  /** The media type sent as `content-type`. */
  readonly mediaType: string;
  /**
   * `json`: serialised JSON; `form`: URL-encoded fields; `multipart`: `multipart/form-data` parts;
   * `binary`: base64 decoded; `text`: as is.
   */
  readonly encoding: 'json' | 'form' | 'multipart' | 'binary' | 'text';
  readonly required: boolean;
  /** Multipart fields sent as files: their input is base64 (`format: binary` in the document). */
  readonly fileFields?: readonly string[];
  /** A file field's part type when not `application/octet-stream`: the document's `encoding`, else `contentMediaType`. */
  readonly fileTypes?: Readonly<Record<string, string>>;
}

/** Everything a call of one operation needs. */
export interface OperationPlan {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** The path as the document writes it, with `{name}` templates, before the base path. */
  readonly pathTemplate: string;
  readonly path: readonly ParameterPlan[];
  readonly query: readonly ParameterPlan[];
  readonly header: readonly ParameterPlan[];
  readonly cookie: readonly ParameterPlan[];
  readonly body: BodyPlan | undefined;
  /** The `accept` header: the media types of the operation's 2xx answers, JSON preferred. */
  readonly accept: string;
  /** The path of the operation's own or its path item's first server, when either lists one; else the document's. */
  readonly basePath?: string;
  /** Where its `security` puts a static credential, when unambiguous (security.ts). */
  readonly credentialLocation?: CredentialLocation;
}

/** An MCP tool made from one operation, plus the plan to call it. */
export interface OpenApiTool {
  /** What `tools/list` shows. */
  readonly tool: Tool;
  readonly operation: OperationPlan;
}

/** The result of converting a document: tools in document order, plus notes for load-time warnings. */
export interface ConversionResult {
  readonly tools: readonly OpenApiTool[];
  readonly warnings: readonly string[];
}

/**
 * A stable name for an operation without `operationId`: method and path segments joined by `_`, template
 * braces dropped and other characters replaced (`GET /pet/{petId}` -> `get_pet_petId`, `GET /` -> `get_root`).
 */
export function derivedToolName(method: string, path: string): string {
  const segments = path
    .split('/')
    .map((s) => s.replace(/[{}]/g, '').replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^_+|_+$/g, ''))
    .filter((s) => s !== '');
  return toolName([method.toLowerCase(), ...(segments.length ? segments : ['root'])].join('_'));
}

/** `name` made a valid tool name: characters outside `[A-Za-z0-9_-]` become `_`, at most 64 long. */
export function toolName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, TOOL_NAME_MAX);
  return cleaned === '' ? '_' : cleaned;
}

/** A group (`path`, `query`, `header`, `cookie`) of the input schema. */
interface Group {
  readonly properties: JsonObject;
  readonly required: string[];
  readonly plans: ParameterPlan[];
}

/** Converts the operations of one document. Construction does nothing; `convert` does the work. */
export class OperationConverter {
  private readonly doc: OpenApiDocument;
  private readonly refs: RefResolver;
  private readonly warnings: string[] = [];
  /** The URL the document was fetched from, for relative server URLs; undefined for a file. */
  private readonly location: string | undefined;

  constructor(doc: OpenApiDocument, location?: string) {
    this.doc = doc;
    this.refs = new RefResolver(doc);
    this.location = location;
  }

  /**
   * One tool per operation, in document order. Names are `operationId` (made valid for MCP) or derived from
   * method and path; a name used twice gets `_2`, `_3`, ... in document order. Throws on a broken document
   * (an unresolvable `$ref`), with the operation in the message.
   */
  convert(): ConversionResult {
    const tools: OpenApiTool[] = [];
    const used = new Set<string>();
    const suffixes = new Map<string, number>();
    const measured = new WeakMap<object, JsonExtent>();
    let bytes = 0;
    let overTotal = 0;
    /** Why the rest are left out, once the tools reached a bound. */
    let full: string | undefined;
    for (const [path, rawItem] of Object.entries(this.doc.paths ?? {})) {
      const item = this.refs.deref(rawItem);
      if (!item) continue;
      for (const [method, rawOperation] of Object.entries(item)) {
        if (!METHODS.has(method) || !isObject(rawOperation)) continue;
        const where = `${method.toUpperCase()} ${path}`;
        if (full !== undefined) {
          overTotal++;
          continue;
        }
        try {
          this.refs.startOperation();
          const tool = this.operation(path, method, item, rawOperation, where);
          const { length: size, depth } = jsonExtent(tool.tool, MAX_TOOL_BYTES, measured);
          if (size === Infinity || depth > MAX_TOOL_DEPTH) {
            const why = size === Infinity ? `is over ${MAX_TOOL_BYTES / 1024 / 1024} MiB of JSON` : `nests ${depth} levels deep (at most ${MAX_TOOL_DEPTH})`;
            this.warnings.push(`${where}: left out: its tool's input schema, with every \`$ref\` inlined, ${why}`);
            continue;
          }
          if (bytes + size > MAX_TOOLS_BYTES) {
            full = `the tools before them reached ${MAX_TOOLS_BYTES / 1024 / 1024} MiB of JSON`;
            overTotal++;
            continue;
          }
          bytes += size;
          let name = tool.tool.name;
          if (used.has(name)) {
            // From the suffix this name reached last: searching from 2 every time made many equal ids quadratic.
            // The suffix replaces the end of a name already as long as a name may be.
            const suffixed = (n: number): string => `${name.slice(0, TOOL_NAME_MAX - `_${n}`.length)}_${n}`;
            let n = suffixes.get(name) ?? 2;
            while (used.has(suffixed(n))) n++;
            suffixes.set(name, n + 1);
            this.warnings.push(`${where}: tool name \`${name}\` is already taken; using \`${suffixed(n)}\``);
            name = suffixed(n);
          }
          used.add(name);
          tools.push(name === tool.tool.name ? tool : { ...tool, tool: { ...tool.tool, name } });
          if (tools.length === MAX_TOOLS) full = `a document gives at most ${MAX_TOOLS} tools`;
        } catch (err) {
          if (err instanceof ExpansionLimit) {
            this.warnings.push(`${where}: left out: ${err.message}`);
            continue;
          }
          // A schema nested thousands of levels deep runs the converter out of stack: that operation only.
          if (err instanceof RangeError) {
            this.warnings.push(`${where}: left out: its schemas nest too deeply to convert`);
            continue;
          }
          throw new Error(`${where}: ${(err as Error).message}`);
        }
      }
    }
    if (overTotal > 0) this.warnings.unshift(`${overTotal} operations left out: ${full}`);
    return { tools, warnings: this.warnings };
  }

  private operation(path: string, method: string, item: JsonObject, op: JsonObject, where: string): OpenApiTool {
    const groups = { path: newGroup(), query: newGroup(), header: newGroup(), cookie: newGroup() };
    for (const param of this.parameters(item, op, where)) {
      const location = param.in as 'path' | 'query' | 'header' | 'cookie';
      const group = groups[location];
      const name = param.name as string;
      const schema = this.parameterSchema(param);
      const required = location === 'path' || param.required === true;
      group.properties[name] = schema;
      if (required) group.required.push(name);
      // A parameter described by `content` (not `schema`) is sent as serialised JSON.
      const style = param.schema === undefined && isObject(param.content) ? 'json' : typeof param.style === 'string' ? param.style : location === 'query' || location === 'cookie' ? 'form' : 'simple';
      const explode = typeof param.explode === 'boolean' ? param.explode : style === 'form';
      group.plans.push({ name, required, style, explode });
    }
    // A `{name}` in the path that no parameter declares is still required, as a string.
    for (const match of path.matchAll(/\{([^}]+)\}/g)) {
      const name = match[1]!;
      if (Object.hasOwn(groups.path.properties, name)) continue;
      groups.path.properties[name] = { type: 'string' };
      groups.path.required.push(name);
      groups.path.plans.push({ name, required: true, style: 'simple', explode: false });
    }

    const properties: JsonObject = {};
    const required: string[] = [];
    for (const key of ['path', 'query', 'header', 'cookie'] as const) {
      const group = groups[key];
      if (group.plans.length === 0) continue;
      properties[key] = {
        type: 'object',
        description: `${key[0]!.toUpperCase()}${key.slice(1)} parameters.`,
        properties: group.properties,
        ...(group.required.length ? { required: group.required } : {}),
      };
      if (group.required.length) required.push(key);
    }
    const body = this.requestBody(op, where);
    if (body) {
      properties.body = body.schema;
      if (body.plan.required) required.push('body');
    }

    const operationId = typeof op.operationId === 'string' && op.operationId.trim() !== '' ? op.operationId.trim() : undefined;
    const name = operationId ? toolName(operationId) : derivedToolName(method, path);
    if (operationId && name !== operationId) this.warnings.push(`${where}: operationId \`${operationId}\` is not a valid tool name (\`[A-Za-z0-9_-]\`, at most 64); using \`${name}\``);
    const summary = typeof op.summary === 'string' && op.summary.trim() !== '' ? op.summary.trim() : undefined;
    const detail = typeof op.description === 'string' && op.description.trim() !== '' ? op.description.trim() : undefined;
    const description = `${op.deprecated === true ? '(Deprecated) ' : ''}${detail ?? summary ?? `${method.toUpperCase()} ${path}`}`;
    const upper = method.toUpperCase();
    const readOnly = upper === 'GET' || upper === 'HEAD' || upper === 'OPTIONS';
    const tool: Tool = {
      name,
      ...(summary ? { title: summary } : {}),
      description,
      inputSchema: { type: 'object', properties: properties as Record<string, object>, ...(required.length ? { required } : {}) },
      annotations: {
        ...(summary ? { title: summary } : {}),
        readOnlyHint: readOnly,
        ...(readOnly ? {} : { destructiveHint: upper === 'DELETE', idempotentHint: upper === 'PUT' || upper === 'DELETE' }),
        openWorldHint: true,
      },
    };
    return {
      tool,
      operation: {
        method: upper,
        pathTemplate: path.replace(/#.*$/s, ''),
        path: groups.path.plans,
        query: groups.query.plans,
        header: groups.header.plans,
        cookie: groups.cookie.plans,
        body: body?.plan,
        accept: this.accept(op),
        ...ownServer(item, op, this.location),
        ...credentialLocationOf(this.doc, op, this.refs),
      },
    };
  }

  /** Path-item parameters overridden by operation parameters of the same name and location. */
  private parameters(item: JsonObject, op: JsonObject, where: string): JsonObject[] {
    const merged = new Map<string, JsonObject>();
    const owned: string[] = [];
    for (const list of [item.parameters, op.parameters]) {
      if (!Array.isArray(list)) continue;
      for (const raw of list) {
        const param = this.refs.deref(raw);
        if (!param || typeof param.name !== 'string' || typeof param.in !== 'string') continue;
        if (param.in !== 'path' && param.in !== 'query' && param.in !== 'header' && param.in !== 'cookie') continue;
        if (param.in === 'header' && IGNORED_HEADER_PARAMS.has(param.name.toLowerCase())) continue;
        // Host, framing and hop-by-hop headers are the gateway's: a model's `Host` would reach another site on the
        // API's address (with the target's backendAuth), its `Content-Length` would break the request.
        if (param.in === 'header' && NOT_FORWARDED.has(param.name.toLowerCase())) {
          if (!owned.includes(param.name)) owned.push(param.name);
          continue;
        }
        const key = `${param.in}:${param.in === 'header' ? param.name.toLowerCase() : param.name}`;
        merged.set(key, param);
      }
    }
    if (owned.length > 0) this.warnings.push(`${where}: header parameters ${owned.map((n) => `\`${n}\``).join(', ')} are set by the gateway and are left out`);
    return [...merged.values()];
  }

  /** The parameter's schema (from `schema`, or the first `content` entry) with its description. */
  private parameterSchema(param: JsonObject): unknown {
    let raw = param.schema;
    if (raw === undefined && isObject(param.content)) {
      const first = Object.values(param.content)[0];
      raw = isObject(first) ? first.schema : undefined;
    }
    const schema = this.refs.inline(raw ?? {});
    if (!isObject(schema)) return schema;
    const extra: JsonObject = {};
    if (typeof param.description === 'string' && param.description.trim() !== '') extra.description = param.description.trim();
    if (param.deprecated === true) extra.deprecated = true;
    if (param.example !== undefined && schema.examples === undefined) extra.examples = [param.example];
    return Object.keys(extra).length ? { ...schema, ...extra } : schema;
  }

  /**
   * The media types of the 2xx answers (`200`..., `2XX`), JSON first and the others at `q=0.9` so a server that
   * can answer JSON does; `application/json` when none is declared. A type that is not `type/subtype` is skipped.
   */
  private accept(op: JsonObject): string {
    const types: string[] = [];
    for (const [code, raw] of Object.entries(isObject(op.responses) ? op.responses : {})) {
      if (!/^2(?:\d\d|XX)$/i.test(code)) continue;
      const response = this.refs.deref(raw);
      for (const type of Object.keys(isObject(response?.content) ? response.content : {})) {
        const bare = bareMediaType(type, true);
        if (bare !== undefined && !types.includes(bare)) types.push(bare);
      }
    }
    const json = types.filter((t) => t === 'application/json' || t.endsWith('+json'));
    const rest = types.filter((t) => !json.includes(t)).slice(0, 16);
    if (json.length === 0 && rest.length === 0) return 'application/json';
    if (json.length === 0) return rest.join(', ');
    return [...json.slice(0, 4), ...rest.map((t) => `${t};q=0.9`)].join(', ');
  }

  private requestBody(op: JsonObject, where: string): { schema: unknown; plan: BodyPlan } | undefined {
    const body = this.refs.deref(op.requestBody);
    if (!body || !isObject(body.content)) return undefined;
    const picked = pickBody(body.content);
    if (!picked) {
      const types = Object.keys(body.content).slice(0, 4).map((t) => `\`${t}\``).join(', ');
      this.warnings.push(`${where}: request body of ${types} is not one the gateway can send (a wildcard type); the tool sends none`);
      return undefined;
    }
    const media = body.content[picked.mediaType];
    let plan: BodyPlan = { ...picked, required: body.required === true };
    let schema: unknown;
    if (picked.encoding === 'binary') {
      const type = picked.mediaType.split(';')[0]!.trim();
      schema = { type: 'string', contentEncoding: 'base64', ...(type === 'application/octet-stream' ? {} : { contentMediaType: type }), description: 'The request body, base64-encoded.' };
    } else schema = writableOnly(this.refs.inline(isObject(media) && media.schema !== undefined ? media.schema : {}));
    if (picked.encoding === 'multipart' && isObject(schema) && isObject(schema.properties)) {
      // File fields take base64 text, as binary cannot travel in JSON arguments.
      const files = multipartFiles(schema.properties, isObject(media) && isObject(media.encoding) ? media.encoding : {});
      schema = { ...schema, properties: files.properties };
      plan = { ...plan, fileFields: files.fileFields, ...(Object.keys(files.fileTypes).length ? { fileTypes: files.fileTypes } : {}) };
    }
    if (isObject(schema) && schema.description === undefined && typeof body.description === 'string' && body.description.trim() !== '') {
      schema = { ...schema, description: body.description.trim() };
    }
    return { schema, plan };
  }
}

/** The base path of an operation's own `servers`, else its path item's (an empty list names none). */
function ownServer(item: JsonObject, op: JsonObject, location: string | undefined): { basePath?: string } {
  for (const servers of [op.servers, item.servers]) {
    if (Array.isArray(servers) && servers.length > 0) return { basePath: serversPath(servers, location).path };
  }
  return {};
}

function newGroup(): Group {
  return { properties: {}, required: [], plans: [] };
}

/** Convert every operation of `doc` into an MCP tool; `location`: the URL it was fetched from, if it was. */
export function convertDocument(doc: OpenApiDocument, location?: string): ConversionResult {
  return new OperationConverter(doc, location).convert();
}
