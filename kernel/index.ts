/**
 * Programmatic entry: embed a gateway in a Node process (tests, custom distributions).
 * Plugins use `switchyard/sdk` instead.
 */
export { createGateway } from './boot/container.ts';
export { Gateway } from './boot/gateway.ts';
export type { ConfigInput, GatewayOptions } from './boot/gateway.ts';
export { main } from './boot/cli.ts';
export type { Distribution } from './boot/cli.ts';
export { ConfigLoadError } from './config/format-issues.ts';
export type { PositionedIssue } from './config/format-issues.ts';
export { LogSink } from './telemetry/logger.ts';
export { assembleSchema } from './config/assemble-schema.ts';
export { PluginRegistry, PluginRegistryError } from './registry/registry.ts';
