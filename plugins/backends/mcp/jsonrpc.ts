import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';

export type RpcId = string | number;

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** A JSON-RPC 2.0 message as it travels: request, notification or response. Fields are read, rarely rebuilt. */
export interface RpcMessage {
  jsonrpc: '2.0';
  id?: RpcId | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: RpcErrorObject;
}

export const RpcCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;

export const isRequest = (m: RpcMessage): boolean => m.method !== undefined && m.id !== undefined && m.id !== null;
export const isNotification = (m: RpcMessage): boolean => m.method !== undefined && (m.id === undefined || m.id === null);
export const isResponse = (m: RpcMessage): boolean => m.method === undefined;

export function errorMessage(id: RpcId | null | undefined, code: number, message: string, data?: unknown): RpcMessage {
  const error: RpcErrorObject = { code, message };
  if (data !== undefined) error.data = data;
  return { jsonrpc: '2.0', id: id ?? null, error };
}

export function resultMessage(id: RpcId | null | undefined, result: Record<string, unknown>): RpcMessage {
  return { jsonrpc: '2.0', id: id ?? null, result };
}

/**
 * A failure the gateway answers itself: a JSON-RPC error, and the HTTP status used when it is known before the
 * response stream started (BEHAVIOUR.md §4.4: 400 for unknown or refused items, 500 for relay failures).
 */
export class RpcFailure extends Error {
  readonly code: number;
  readonly httpStatus: number;
  readonly data: unknown;

  constructor(code: number, message: string, httpStatus: number, data?: unknown) {
    super(message);
    this.name = 'RpcFailure';
    this.code = code;
    this.httpStatus = httpStatus;
    this.data = data;
  }
}

/** True when `value` is one valid JSON-RPC message (the SDK's schema, so unknown methods pass). */
export function isValidMessage(value: unknown): value is RpcMessage {
  return JSONRPCMessageSchema.safeParse(value).success;
}
