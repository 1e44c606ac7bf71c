import { defineAttribute } from 'switchyard/sdk';

/**
 * Set by the `cors` policy on a request whose `Origin` its `allowOrigins` accepts (the Origin value). Backends that
 * check `Origin` themselves (the `mcp` backend's DNS-rebinding protection, ADR 0010) accept such a request: the
 * route's CORS configuration already says that origin may call it.
 */
export const CORS_ALLOWED_ORIGIN = defineAttribute<string>('corsAllowedOrigin');
