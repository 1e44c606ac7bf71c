/**
 * `switchyard/sdk`: the public plugin API. First-party plugins use nothing else from the kernel.
 * @packageDocumentation
 */
export * from './plugin.ts';
export * from './compile-context.ts';
export * from './policy-instance.ts';
export * from './backend-instance.ts';
export * from './facets.ts';
export * from './config-section.ts';
export * from './phases.ts';
export * from './errors.ts';
export { notChecked } from './check-only.ts';
export * from './reply.ts';
export { RawHeadersReply, replyHeader } from './raw-headers-reply.ts';
export * from './header-list.ts';
export * from './attributes.ts';
export * from './duration.ts';
export * from './llm-tokens.ts';
export { principal } from './principal.ts';
export { FILE_SIZE_LIMITS, FileReadError, parseJsonFileText, readLocalFile, readLocalFileBytes, readSharedFile } from './read-file.ts';
export { certHasAltName, parseAcceptedAltName, parseCertAltNames } from './tls-names.ts';
export { ipFamily } from './ip-family.ts';
export type { AltName } from './tls-names.ts';
export { parseYamlData, withYamlParser } from './yaml-lib.ts';
export { CEL_NOT_SET_BEFORE_BACKEND, CEL_NOT_SET_HERE, celLlmBeforeCall, celValueToString, EXPRESSION_STOPPED } from './expr.ts';
export { didYouMean } from './did-you-mean.ts';
export type { CompiledExpression, ExpressionCompiler } from './expr.ts';
export type * from './exchange.ts';
export type * from './logger.ts';
export type * from './upstream.ts';
export type * from './spans.ts';
export { SHARED_CELL_VALUES } from './shared.ts';
export type { SharedCell, SharedEvents, SharedFetches, SharedTopic } from './shared.ts';
export { ProcessBudgetFull, isProcessBudgetFull } from './processes.ts';
export type { ChildInput, ChildOutput, ChildPipe, GatewayChild, GatewayProcesses, ProcessSpec } from './processes.ts';
export { compileUserRegex, userRegexProblem } from './regex.ts';
export { settleWithin } from './settle-within.ts';
export type { UserRegexOptions } from './regex.ts';
export { BodyTooLargeError, bodyBytes, DISCARD_LIMIT, destroyBody, discardBody, pipeWithTeardown, readCapped, readCappedText, readUpTo, tap, tapCapped } from './streams.ts';
export type { ReadCappedOptions, TapObserver } from './streams.ts';
export { SseOverflowError, SseParser, completeUtf8, parseSseEvents } from './sse.ts';
export type { SseEvent, SseParserOptions } from './sse.ts';
export { SSE_HEADERS, SseWriter, formatSseComment, formatSseEvent } from './sse-writer.ts';
export type { SseEventInit, SseWriterOptions } from './sse-writer.ts';
export { parseUpstreamAddress, serviceAuthority } from './upstream-address.ts';
export type { AddressProblem, AddressRules, ServiceRef, ServiceRefProblem, UpstreamAddress } from './upstream-address.ts';
export { SERVICE_REF_SCHEMA, UPSTREAM_ADDRESS_SCHEMA, connectUpstream } from './connect.ts';
export type { ConnectOptions, Connection, UpstreamAddressConfig } from './connect.ts';
