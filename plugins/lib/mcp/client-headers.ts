/**
 * Client headers never passed on to an MCP target's HTTP requests, nor onto the calls an `openapi` target makes:
 * hop-by-hop and framing headers (the gateway frames its own requests), `Expect` (the gateway already answered the
 * client's `100-continue`; undici refuses the header), and the MCP headers the gateway sets per target. One list
 * for the `mcp` backend and the `openapi` transport: two copies had drifted apart, and `Expect` reached undici.
 */
export const NOT_FORWARDED: ReadonlySet<string> = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'content-length',
  'content-type',
  'content-encoding',
  'accept',
  'accept-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'last-event-id',
]);
