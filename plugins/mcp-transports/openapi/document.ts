import { resolve } from 'node:path';
import { discardBody, FILE_SIZE_LIMITS, parseJsonFileText, parseYamlData, readCappedText, readSharedFile } from 'switchyard/sdk';
import type { HttpUpstreams, SharedFetches } from 'switchyard/sdk';

/** A JSON object. */
export type JsonObject = Record<string, unknown>;

/** An OpenAPI 3.x document after parsing; only the top-level shape is checked here. */
export interface OpenApiDocument extends JsonObject {
  readonly openapi: string;
  readonly paths?: JsonObject;
  readonly servers?: unknown[];
  readonly components?: JsonObject;
  readonly info?: JsonObject;
}

/** The largest document accepted (a generous bound; large public APIs are a few MiB). */
export const MAX_DOCUMENT_BYTES = FILE_SIZE_LIMITS.document;
/** Deadline of fetching a `schema.url`. */
export const FETCH_TIMEOUT_MS = 10_000;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Read a document file, relative to `cwd` (its `FileDocument` watches it). Rejects with a message naming the file. */
export async function readDocumentFile(file: string, cwd: string, fetches?: SharedFetches): Promise<string> {
  const full = resolve(cwd, file);
  try {
    // Once for the gateway's workers (plugins/lib/watched-file/shared-read.ts).
    return await readSharedFile(fetches, full, MAX_DOCUMENT_BYTES, { watched: true });
  } catch (err) {
    throw new Error(`cannot read the OpenAPI document \`${file}\` (${full}): ${(err as Error).message}`);
  }
}

/** A fetched document: its text and the response's `Cache-Control` (how long it may be kept). */
export interface FetchedDocument {
  readonly text: string;
  readonly cacheControl: string | undefined;
}

/**
 * The GET of the document at `url`, through a pooled upstream taken now (at config load, so fetches made later,
 * in the background, use a pool of a config that is live). Throws when `url` is not an http(s) URL; the fetch
 * rejects with a message naming the URL.
 */
export function documentFetcher(url: string, http: HttpUpstreams): () => Promise<FetchedDocument> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`\`${url}\` is not a valid URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`\`${url}\` is not an http(s) URL`);
  const target = http.target({ origin: parsed.origin, authority: 'target' });
  return async () => {
    try {
      const response = await target.request({
        method: 'GET',
        path: `${parsed.pathname}${parsed.search}`,
        headers: { accept: 'application/json, application/yaml;q=0.9, */*;q=0.5' },
        timeoutMs: FETCH_TIMEOUT_MS,
      });
      if (response.status < 200 || response.status > 299) {
        discardBody(response.body);
        throw new Error(`the server answered HTTP ${response.status}`);
      }
      const cc = response.headers['cache-control'];
      return { text: await readCappedText(response.body, MAX_DOCUMENT_BYTES), cacheControl: Array.isArray(cc) ? cc.join(',') : cc };
    } catch (err) {
      throw new Error(`cannot fetch the OpenAPI document from ${url}: ${(err as Error).message}`);
    }
  };
}

/**
 * Parse JSON or YAML text into an OpenAPI 3.x document. `label` (the file or URL) starts every message.
 * Swagger 2.0 and other non-3.x documents are refused.
 */
export function parseDocument(text: string, label: string): OpenApiDocument {
  let value: unknown;
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{')) {
    try {
      value = parseJsonFileText(trimmed);
    } catch (err) {
      throw new Error(`the OpenAPI document ${label} is not valid JSON: ${(err as Error).message}`);
    }
  } else {
    try {
      // js-yaml first, as the config loader parses (about 8 times faster: ADR 0175), else `yaml`, whose duplicate-key
      // check compares every key of a map with every other (40,000 paths took 11.5 s): off, a repeated key is the
      // last, as JSON.parse takes it. Aliases take the `yaml` parse and its bound.
      value = parseYamlData(text, { maxAliasCount: 1000, uniqueKeys: false });
    } catch (err) {
      throw new Error(`the OpenAPI document ${label} is neither valid JSON nor valid YAML: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  if (!isObject(value)) throw new Error(`the OpenAPI document ${label} is not an object`);
  if (value.swagger !== undefined) {
    throw new Error(`the document ${label} is Swagger ${String(value.swagger)}; only OpenAPI 3.0 and 3.1 are supported (convert it first)`);
  }
  if (typeof value.openapi !== 'string' || !/^3\.\d+(\.\d+)?/.test(value.openapi)) {
    throw new Error(`the document ${label} is not an OpenAPI 3.x document (its \`openapi\` field is ${JSON.stringify(value.openapi) ?? 'missing'})`);
  }
  if (value.paths !== undefined && !isObject(value.paths)) throw new Error(`the OpenAPI document ${label} has a \`paths\` that is not an object`);
  if (value.components !== undefined && !isObject(value.components)) {
    throw new Error(`the OpenAPI document ${label} has a \`components\` that is not an object`);
  }
  if (value.servers !== undefined && !Array.isArray(value.servers)) throw new Error(`the OpenAPI document ${label} has a \`servers\` that is not a list`);
  return value as OpenApiDocument;
}

/** What a relative server URL of a document read from a file is relative to: the root. */
const NO_LOCATION = 'http://base.invalid/';

/**
 * The path of the document's first server URL (`http://petstore.swagger.io/v2` -> `/v2`, `/api` -> `/api`),
 * server variables filled with their defaults; `''` without servers. `count` says how many servers there were.
 * A relative URL is relative to `location`, the URL the document was fetched from (OpenAPI 3.x "Server Object").
 */
export function serverBasePath(doc: OpenApiDocument, location?: string): { path: string; count: number } {
  return serversPath(doc.servers ?? [], location);
}

/** The path of the first of `servers` (a document's, a path item's or an operation's), as serverBasePath. */
export function serversPath(list: readonly unknown[], location = NO_LOCATION): { path: string; count: number } {
  const servers = list.filter(isObject);
  const first = servers[0];
  if (!first || typeof first.url !== 'string') return { path: '', count: servers.length };
  const variables = isObject(first.variables) ? first.variables : {};
  const url = first.url.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    const v = variables[name];
    return isObject(v) && v.default !== undefined ? String(v.default) : whole;
  });
  let path: string;
  try {
    path = new URL(url, URL.canParse(location) ? location : NO_LOCATION).pathname;
  } catch {
    path = url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '');
  }
  return { path: path.replace(/\/+$/, ''), count: servers.length };
}
