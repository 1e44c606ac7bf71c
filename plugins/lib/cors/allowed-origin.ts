import { defineAttribute } from 'switchyard/sdk';

/**
 * Set by the `cors` policy on a request whose `Origin` its `allowOrigins` lists by name (an exact origin or a host
 * glob; not the `*` wildcard, which says nothing about who the page is). Backends that check `Origin` themselves
 * (the `mcp` backend's DNS-rebinding protection, ADR 0010 and 0018) accept such a request: the route's CORS
 * configuration already says that origin may call it.
 */
export const CORS_ALLOWED_ORIGIN = defineAttribute<string>('corsAllowedOrigin');
