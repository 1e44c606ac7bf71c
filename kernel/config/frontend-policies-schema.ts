import type { JsonSchema } from '../sdk/index.ts';

// `frontendPolicies` (ADR 0158): the reference's settings of the client side of every listener. Switchyard takes its
// `http` block's HTTP/2 settings; the reference's other keys (`tls`, `tcp`, `accessLog`, the `http1*` settings,
// `maxBufferSize`, ...) are unknown keys here: each has a Switchyard counterpart elsewhere or is not done.

const u31 = (minimum: number, what: string): JsonSchema => ({ type: 'integer', minimum, maximum: 2_147_483_647, description: what });

export const FRONTEND_POLICIES_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'Settings of the client side of every listener (the reference\'s `frontendPolicies`): `http` only. Apply to connections opened after a reload.',
  properties: {
    http: {
      type: 'object',
      description: 'HTTP/2 settings of client connections (HTTPS listeners by ALPN, cleartext ones by prior knowledge).',
      properties: {
        http2WindowSize: u31(1, "Each stream's receive window in bytes (SETTINGS_INITIAL_WINDOW_SIZE): how much of a request body a client may send before the gateway reads it. Default 65535 (node:http2's)."),
        http2ConnectionWindowSize: u31(65_535, "The connection's receive window in bytes, shared by its streams. Default 65535 (node:http2's)."),
        http2FrameSize: { type: 'integer', minimum: 16_384, maximum: 16_777_215, description: 'The largest frame payload a client may send, in bytes (SETTINGS_MAX_FRAME_SIZE, RFC 9113 6.5.2). Default 16384.' },
        http2MaxHeaderSize: {
          type: 'integer',
          minimum: 1,
          maximum: 1_048_576,
          description: "The largest request header list in bytes (SETTINGS_MAX_HEADER_LIST_SIZE: names, values and 32 bytes per field); a larger one is answered 431. Default 16384 (node:http's head limit of HTTP/1.1 requests), at most 1 MiB.",
        },
        http2KeepaliveInterval: { $ref: '#/$defs/duration', description: 'While a connection has streams open, send a PING this often. Default: none.' },
        http2KeepaliveTimeout: { $ref: '#/$defs/duration', description: 'Close a connection whose PING is not acknowledged within this time. Default `20s`; applies with `http2KeepaliveInterval`.' },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
};
