/**
 * Spans of a plugin's own operations (an MCP method, an LLM call), in the request's trace (docs/observability.md
 * "Traces"). `ctx.spans.start` returns undefined when the gateway does not trace, so instrumented code costs one call
 * and a check.
 */

import type { Exchange } from './exchange.ts';

/** Attribute values a span takes; `undefined` entries are skipped. */
export type SpanAttributes = Record<string, string | number | boolean | readonly string[] | undefined>;

/** A span a plugin started. */
export interface PluginSpan {
  /** False when the request is not sampled: skip building attributes then. */
  readonly recording: boolean;
  setAttributes(attributes: SpanAttributes): void;
  /**
   * Name the span anew before it ends: for a name known only once the upstream answered (the model an LLM provider
   * served), which a client could otherwise make up (ADR 0130).
   */
  rename(name: string): void;
  /** End the span; with `error`, its status is ERROR and `error.type` is the error's code or name (or `error` itself when a string). */
  end(error?: unknown): void;
  /** Write this span's W3C context (`traceparent`, `tracestate`, `baggage`) into `carrier` (headers, MCP `params._meta`). */
  inject(carrier: Record<string, unknown>): void;
  /** Run `fn` with this span active: spans and upstream calls made inside it are its children. */
  run<T>(fn: () => T): T;
  /**
   * Make this span the parent of `ex`'s upstream attempts from now on, wherever they are made: a policy's span
   * around the forwarded call (the `a2a` method span), which `run` cannot reach as the backend forwards later.
   */
  enclose(ex: Exchange): void;
}

/** `CompileContext.spans`. */
export interface PluginSpans {
  /** True when the gateway traces (`config.tracing`): check it before building a span's attributes. */
  readonly enabled: boolean;
  /**
   * True when the operator allows message content on spans (`config.tracing.captureMessageContent`, default false):
   * only then may a plugin record prompts, completions or other user content (`gen_ai.input.messages`, ...).
   */
  readonly captureMessageContent: boolean;
  /**
   * Start a span, child of the span active now (the request's, or one a plugin made active with `run`). Undefined
   * when tracing is off. `kind`: `server` for an operation the gateway serves, `client` for a call it makes.
   */
  start(name: string, kind: 'internal' | 'server' | 'client', attributes?: SpanAttributes): PluginSpan | undefined;
}
