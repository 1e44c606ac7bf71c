import { withYamlParser } from 'switchyard/sdk';
import type * as Yaml from 'yaml';
import type { Node as YamlNode } from 'yaml';
import type { LlmUsage } from './usage.ts';

/**
 * LLM prices and what a call cost (docs/llm.md "Costs", ADR 0027). Prices are USD per 1M tokens. A catalog maps
 * provider (`llm.provider`: `openai`, `anthropic`, `gcp.gemini`, ...) -> model -> price; model keys may hold `*`
 * wildcards (an exact key wins, then the longest pattern).
 */

/** The price of one model, USD per 1M tokens. */
export interface ModelPrice {
  readonly input: number;
  readonly output: number;
  /** Cached input tokens read (cache hits); the input price when absent. */
  readonly cachedInput?: number;
  /** Input tokens written to a cache (Anthropic, Bedrock cache writes); the input price when absent. */
  readonly cacheCreationInput?: number;
  /** Audio input tokens (realtime and audio models, ADR 0192); the input price when absent. */
  readonly audioInput?: number;
  /** Cached audio input tokens; when absent, `audioInput` if set, else the text cache read price. */
  readonly cachedAudioInput?: number;
  /** Audio output tokens; the output price when absent. */
  readonly audioOutput?: number;
}

/** One provider's prices, compiled for lookups. */
export interface PriceTable {
  readonly exact: ReadonlyMap<string, ModelPrice>;
  /** Wildcard keys split at `*`, longest key first. */
  readonly patterns: readonly (readonly [parts: readonly string[], price: ModelPrice])[];
}

/** A parsed catalog: provider -> price table. */
export type PriceCatalog = ReadonlyMap<string, PriceTable>;

/** Whether `s` matches a `*` pattern given as its parts (linear: no regex, no backtracking). */
function globMatch(parts: readonly string[], s: string): boolean {
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (s.length < first.length + last.length || !s.startsWith(first) || !s.endsWith(last)) return false;
  let at = first.length;
  const end = s.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = s.indexOf(parts[i]!, at);
    if (found === -1 || found + parts[i]!.length > end) return false;
    at = found + parts[i]!.length;
  }
  return true;
}

export function priceTable(prices: Iterable<readonly [string, ModelPrice]>): PriceTable {
  const exact = new Map<string, ModelPrice>();
  const patterns: [string, ModelPrice][] = [];
  for (const [model, price] of prices) {
    if (model.includes('*')) patterns.push([model, price]);
    else exact.set(model, price);
  }
  patterns.sort((a, b) => b[0].length - a[0].length);
  return { exact, patterns: patterns.map(([k, p]) => [k.split('*'), p] as const) };
}

export function lookupPrice(table: PriceTable | undefined, model: string): ModelPrice | undefined {
  if (!table) return undefined;
  const hit = table.exact.get(model);
  if (hit !== undefined) return hit;
  for (const [parts, price] of table.patterns) if (globMatch(parts, model)) return price;
  return undefined;
}

/**
 * What a call cost in USD: uncached input at the input price, cache reads at `cachedInput`, cache writes at
 * `cacheCreationInput`, output (reasoning included) at the output price; the audio part of each (ADR 0192) at
 * `audioInput`, `cachedAudioInput` and `audioOutput`. `inputTokens` already includes cached and audio tokens, and
 * `outputTokens` audio ones, so they are taken out of it, not billed twice; a part is never more than its total.
 */
export function callCost(price: ModelPrice, usage: LlmUsage): number {
  const input = usage.inputTokens ?? 0;
  const cached = Math.min(input, usage.cachedInputTokens ?? 0);
  const created = Math.min(input - cached, usage.cacheCreationInputTokens ?? 0);
  const uncached = input - cached - created;
  const cachedAudio = Math.min(cached, usage.cachedAudioInputTokens ?? 0);
  const uncachedAudio = Math.min(uncached, Math.max(0, (usage.audioInputTokens ?? 0) - cachedAudio));
  const output = usage.outputTokens ?? 0;
  const audioOut = Math.min(output, usage.audioOutputTokens ?? 0);
  const cachedPrice = price.cachedInput ?? price.input;
  const sum =
    (uncached - uncachedAudio) * price.input +
    uncachedAudio * (price.audioInput ?? price.input) +
    (cached - cachedAudio) * cachedPrice +
    cachedAudio * (price.cachedAudioInput ?? price.audioInput ?? cachedPrice) +
    created * (price.cacheCreationInput ?? price.input) +
    (output - audioOut) * price.output +
    audioOut * (price.audioOutput ?? price.output);
  return sum / 1_000_000;
}

const PRICE_FIELDS = new Set(['input', 'output', 'cachedInput', 'cacheCreationInput', 'audioInput', 'cachedAudioInput', 'audioOutput']);
const TOP_FIELDS = new Set(['providers', 'description', 'updated']);

/** A catalog file that does not parse or does not follow the format: the message starts with `file:line:col`. */
export class PriceCatalogError extends Error {}

/** A catalog's `providers` as plain data: provider, then model, then price. */
export type CatalogProviders = Readonly<Record<string, Readonly<Record<string, ModelPrice>>>>;

/** A catalog from plain data already known to follow the format (the built-in one: a unit test parses it too). */
export function priceCatalog(providers: CatalogProviders): PriceCatalog {
  return new Map(Object.entries(providers).map(([provider, models]) => [provider, priceTable(Object.entries(models))]));
}

/**
 * Parse a catalog file (JSON; YAML is accepted too): `{"providers": {"<provider>": {"<model>": {"input", "output",
 * "cachedInput"?, "cacheCreationInput"?, "audioInput"?,
 * "cachedAudioInput"?, "audioOutput"?}}}, "description"?, "updated"?}`. Throws a PriceCatalogError positioned in
 * the file. The positioned parser is loaded for this call only (`withYamlParser`): a catalog is read at a config
 * load and when its file changes, and nothing of the parser is kept in between.
 */
export function parsePriceCatalog(text: string, file: string): PriceCatalog {
  return withYamlParser((yaml) => parseCatalogDocument(yaml, text, file));
}

function parseCatalogDocument(yaml: typeof Yaml, text: string, file: string): PriceCatalog {
  const { isMap, isScalar } = yaml;
  const lines = new yaml.LineCounter();
  const doc = yaml.parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const at = (node: YamlNode | null | undefined): string => {
    const pos = lines.linePos(node?.range?.[0] ?? 0);
    return `${file}:${pos.line}:${pos.col}`;
  };
  const fail = (node: YamlNode | null | undefined, message: string): never => {
    throw new PriceCatalogError(`${at(node)}: ${message}`);
  };
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const pos = lines.linePos(e.pos[0]);
    throw new PriceCatalogError(`${file}:${pos.line}:${pos.col}: ${e.message.split('\n')[0]}`);
  }
  const root = doc.contents;
  if (!isMap(root)) return fail(root, 'a price catalog is an object with `providers`');
  let providers: YamlNode | undefined;
  for (const pair of root.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : '';
    if (!TOP_FIELDS.has(key)) fail(pair.key as YamlNode, `unknown key \`${key}\`; a catalog has \`providers\` (and optionally \`description\`, \`updated\`)`);
    if (key === 'providers') providers = pair.value as YamlNode;
  }
  if (providers === undefined) return fail(root, 'missing key `providers`');
  if (!isMap(providers)) return fail(providers, '`providers` must be an object: provider \u2192 model \u2192 price');
  const catalog = new Map<string, PriceTable>();
  for (const p of providers.items) {
    const provider = isScalar(p.key) ? String(p.key.value) : '';
    const models = p.value as YamlNode;
    if (!isMap(models)) fail(models ?? (p.key as YamlNode), `provider \`${provider}\` must map model names to prices`);
    const entries: [string, ModelPrice][] = [];
    for (const m of (models as unknown as { items: { key: unknown; value: unknown }[] }).items) {
      const model = isScalar(m.key) ? String(m.key.value) : '';
      if (!model) fail(m.key as YamlNode, 'a model name must be a non-empty string');
      entries.push([model, parsePrice(yaml, m.value as YamlNode, `${provider}.${model}`, fail)]);
    }
    catalog.set(provider, priceTable(entries));
  }
  return catalog;
}

function parsePrice({ isMap, isScalar }: typeof Yaml, node: YamlNode | undefined, name: string, fail: (node: YamlNode | null | undefined, message: string) => never): ModelPrice {
  if (!isMap(node)) return fail(node, `the price of \`${name}\` must be an object with \`input\` and \`output\` (USD per 1M tokens)`);
  const price: Record<string, number> = {};
  for (const pair of node.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : '';
    if (!PRICE_FIELDS.has(key)) fail(pair.key as YamlNode, `unknown price field \`${key}\` of \`${name}\`; use \`input\`, \`output\`, \`cachedInput\`, \`cacheCreationInput\`, \`audioInput\`, \`cachedAudioInput\`, \`audioOutput\``);
    const v = isScalar(pair.value) ? pair.value.value : undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) fail((pair.value as YamlNode) ?? (pair.key as YamlNode), `\`${name}.${key}\` must be a number \u2265 0 (USD per 1M tokens)`);
    price[key] = v as number;
  }
  if (price.input === undefined) fail(node, `\`${name}\` needs \`input\``);
  if (price.output === undefined) fail(node, `\`${name}\` needs \`output\``);
  return price as unknown as ModelPrice;
}
