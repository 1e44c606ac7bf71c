import { defineAttribute } from './attributes.ts';
import type { AttributeKey } from './attributes.ts';

/**
 * Who a request authenticated as: set by authentication policies (`jwtAuth` and `mcpAuthentication`: issuer and
 * subject; `apiKey`: the key's digest; `basicAuth`: the user; `virtualKeys`: the key id), read by backends that keep
 * state for a caller across requests, so that another caller cannot use it (an MCP session, ADR 0120). A string
 * unique per caller within the gateway, `<policy>:<id>`; a third-party authentication policy sets it the same way.
 * Not a CEL variable: policies publish their own (`jwt`, `apiKey`, ...).
 */
export const principal: AttributeKey<string> = defineAttribute<string>('switchyard.principal');
