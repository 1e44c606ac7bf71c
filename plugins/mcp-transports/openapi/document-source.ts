import { createHash } from 'node:crypto';
import type { Logger } from 'switchyard/sdk';
import { cacheTtlMs } from '../../lib/http-cache/max-age.ts';
import { WatchedFile } from '../../lib/watched-file/watched-file.ts';
import { parseDocument, serverBasePath } from './document.ts';
import type { FetchedDocument, OpenApiDocument } from './document.ts';
import { convertDocument } from './tools.ts';
import type { OpenApiTool } from './tools.ts';

/**
 * When a `schema.url` document is fetched again (BEHAVIOUR.md "Config lifecycle", ADR 0137): after its
 * `Cache-Control: max-age`, else 24 h, at least `minMs` apart, and `retryMs` after a failure. Mutable for tests only
 * (a test cannot wait a minute); no config field sets it.
 */
export const REFRESH_TIMING = { defaultMs: 24 * 3_600_000, minMs: 60_000, maxMs: 24 * 3_600_000, retryMs: 15_000 };

/** A document that converted, with what the conversion left out. */
export interface LoadedDocument {
  readonly doc: OpenApiDocument;
  readonly tools: readonly OpenApiTool[];
  readonly warnings: readonly string[];
  /** The path of the document's first server (relative to where it was fetched from), and how many it lists. */
  readonly server: { readonly path: string; readonly count: number };
}

/** Conversion warnings logged one by one before they are summarised. */
export const MAX_WARNINGS = 10;

const digestOf = (text: string): string => createHash('sha256').update(text).digest('base64');

/**
 * The OpenAPI document of a file or URL, shared by every target naming it and kept across reloads (the plugin
 * resource cache). `current` is the last document that parsed and converted; a new text replaces it only when it
 * differs and converts, then every `onChange` listener runs (the live sessions of every target using it).
 */
export abstract class DocumentSource {
  current: LoadedDocument | undefined;
  readonly label: string;
  protected readonly logger: Logger;
  private digest = '';
  /** The last text that did not convert and why, so the same bad text is not converted again each time. */
  private rejected: { digest: string; reason: string } | undefined;
  private readonly listeners = new Set<() => void>();

  /** The URL the document is fetched from (relative server URLs are relative to it); undefined for a file. */
  protected readonly location: string | undefined;

  constructor(label: string, logger: Logger, location?: string) {
    this.label = label;
    this.logger = logger;
    this.location = location;
  }

  /** Make sure a document is held (the config load waits for it); rejects with a message naming the document. */
  abstract load(): Promise<void>;

  /** Stop refreshing (the resource cache calls this once no config uses the document). */
  abstract dispose(): void;

  /** Run `listener` after each change of `current`; returns the way to stop. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Take a new text: parse and convert it unless it is the one held. Throws (keeping `current`) when it does not convert. */
  protected take(text: string): void {
    const digest = digestOf(text);
    if (digest === this.digest) return;
    if (this.rejected?.digest === digest) throw new Error(this.rejected.reason);
    let loaded: LoadedDocument;
    try {
      const doc = parseDocument(text, this.label);
      let converted: ReturnType<typeof convertDocument>;
      try {
        converted = convertDocument(doc, this.location);
      } catch (err) {
        throw new Error(`the OpenAPI document ${this.label} cannot be converted to tools: ${(err as Error).message}`);
      }
      loaded = { doc, tools: converted.tools, warnings: converted.warnings, server: serverBasePath(doc, this.location) };
    } catch (err) {
      this.rejected = { digest, reason: (err as Error).message };
      throw err;
    }
    const first = this.current === undefined;
    this.current = loaded;
    this.digest = digest;
    this.rejected = undefined;
    if (first) return;
    this.logger.info('OpenAPI document changed; new sessions get its tools, live ones are told', { tools: loaded.tools.length });
    // What the conversion left out, as a config load would say it (the first few, then a count).
    for (const warning of loaded.warnings.slice(0, MAX_WARNINGS)) this.logger.warn(`OpenAPI document ${this.label}: ${warning}`);
    if (loaded.warnings.length > MAX_WARNINGS) this.logger.warn(`OpenAPI document ${this.label}: ${loaded.warnings.length - MAX_WARNINGS} more warnings not shown`);
    for (const listener of this.listeners) listener();
  }
}

/**
 * A `schema.url` document: fetched at the first config load (a failure fails that load), then again in the
 * background (see REFRESH_TIMING), one fetch at a time, on an unref'd timer. A reload reuses the held document.
 * A failed fetch, or a document that no longer converts, keeps the last good one; each streak of failures with the
 * same reason is logged once.
 */
export class RemoteDocument extends DocumentSource {
  /** When the held fetch result was made (ms epoch), for the fetches shared by the workers. */
  fetchedAt = 0;
  private fetcher: () => Promise<FetchedDocument>;
  private timer: NodeJS.Timeout | undefined;
  private inflight: Promise<void> | undefined;
  private failing: string | undefined;
  private disposed = false;

  constructor(label: string, logger: Logger, fetcher: () => Promise<FetchedDocument>, url: string) {
    super(label, logger, url);
    this.fetcher = fetcher;
  }

  /** Fetch with this from now on (each config load hands over its own, bound to its connection pools). */
  setFetcher(fetcher: () => Promise<FetchedDocument>): void {
    this.fetcher = fetcher;
  }

  async load(): Promise<void> {
    if (this.current) return;
    await this.refresh();
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private refresh(): Promise<void> {
    this.inflight ??= this.fetchOnce().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async fetchOnce(): Promise<void> {
    let fetched: FetchedDocument;
    try {
      fetched = await this.fetcher();
      this.take(fetched.text);
    } catch (err) {
      if (!this.current) throw err;
      const reason = (err as Error).message;
      if (reason !== this.failing) this.logger.warn('OpenAPI document refresh failed; keeping the tools already loaded', { error: reason, retryInMs: REFRESH_TIMING.retryMs });
      this.failing = reason;
      this.schedule(REFRESH_TIMING.retryMs);
      return;
    }
    if (this.failing !== undefined) this.logger.info('OpenAPI document fetched again after failures');
    this.failing = undefined;
    this.schedule(cacheTtlMs(fetched.cacheControl, REFRESH_TIMING));
  }

  private schedule(ms: number): void {
    if (this.disposed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.disposed) void this.refresh().catch(() => undefined);
    }, ms);
    this.timer.unref();
  }
}

/**
 * A `schema.file` document: read at each config load (a failure fails that load), and again when the file changes
 * on disk (polled: plugins/lib/watched-file). A change that cannot be read or converted is logged and the last good
 * document kept.
 */
export class FileDocument extends DocumentSource {
  private readonly file: WatchedFile;
  private reader: () => Promise<string>;

  constructor(path: string, label: string, logger: Logger, reader: () => Promise<string>) {
    super(label, logger);
    this.reader = reader;
    this.file = new WatchedFile(path, {
      removed: () => logger.warn('OpenAPI document file removed; keeping the tools already loaded'),
      changed: () =>
        void this.load().catch((err: unknown) => logger.warn('OpenAPI document change ignored; keeping the tools already loaded', { error: (err as Error).message })),
    });
  }

  /** Read with this from now on (each config load hands over its own). */
  setReader(reader: () => Promise<string>): void {
    this.reader = reader;
  }

  load(): Promise<void> {
    return this.file.serialize(async () => this.take(await this.reader()));
  }

  watch(): void {
    this.file.watch();
  }

  dispose(): void {
    this.file.close();
  }
}
