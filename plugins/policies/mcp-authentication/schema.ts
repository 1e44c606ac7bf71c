import type { JsonSchema } from 'switchyard/sdk';
import { audiencesSchema, issuerSchema, jwksSchema, jwtValidationOptionsSchema } from '../../lib/jwt/schema.ts';

const URL_PATTERN = '^[hH][tT][tT][pP][sS]?://';

const adapter = (description: string): JsonSchema => ({ type: 'object', description, properties: {}, additionalProperties: false });

/** `provider`: one compatibility adapter, under its real name or the neutral word of NAMES.md. */
const providerSchema: JsonSchema = {
  type: 'object',
  description:
    'A compatibility adapter for the authorization-server metadata the gateway serves: exactly one of `auth0` (also spelled `identityProviderA`) or `keycloak` (`identityProviderB`), set to `{}`. With an adapter, the protected-resource metadata names the gateway itself as the authorization server.',
  properties: {
    auth0: adapter('Auth0: `authorization_endpoint` gets `?audience=<first of audiences>`, so Auth0 issues a JWT for this resource.'),
    identityProviderA: adapter('Neutral spelling of `auth0`.'),
    keycloak: adapter(
      'Keycloak: the metadata is read from `<issuer>/.well-known/openid-configuration`, and `registration_endpoint` points at the gateway (`<metadata URL>/client-registration`), which relays registrations to Keycloak\'s own endpoint with CORS headers.',
    ),
    identityProviderB: adapter('Neutral spelling of `keycloak`.'),
  },
  additionalProperties: false,
  exactlyOneOf: ['auth0', 'identityProviderA', 'keycloak', 'identityProviderB'],
};

const resourceMetadataSchema: JsonSchema = {
  type: 'object',
  description:
    'RFC 9728 protected-resource metadata. When set, the gateway answers `GET /.well-known/oauth-protected-resource[/<path>]` and `GET /.well-known/oauth-authorization-server[/<path>]` itself (no token needed; the route\'s `matches` must cover these paths).',
  properties: {
    resource: {
      type: 'string',
      minLength: 1,
      pattern: URL_PATTERN,
      'x-hint': 'an absolute `http://` or `https://` URL',
      description:
        'Canonical URI of the protected resource (the MCP endpoint, such as `https://gw.example.com/mcp`); clients request tokens for it (RFC 8707), so it is usually one of `audiences`. Its scheme and authority also prefix the `resource_metadata` URL of 401 challenges.',
    },
    scopesSupported: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'Scopes clients may request (`scopes_supported`).' },
    bearerMethodsSupported: {
      type: 'array',
      items: { enum: ['header', 'body', 'query'], description: 'A way to send the token.' },
      description: 'Advertised ways to send the token (`bearer_methods_supported`). The gateway itself reads the token from the `Authorization` header only.',
    },
    resourceDocumentation: { type: 'string', minLength: 1, pattern: URL_PATTERN, 'x-hint': 'an `http(s)://` URL', description: 'URL of human-readable documentation (`resource_documentation`).' },
    resourcePolicyUri: { type: 'string', minLength: 1, pattern: URL_PATTERN, 'x-hint': 'an `http(s)://` URL', description: 'URL of the resource\'s data-use policy (`resource_policy_uri`).' },
  },
  required: ['resource'],
  additionalProperties: false,
};

/** Schema of `mcpAuthentication` (SPEC 5.1, BEHAVIOUR.md §4.2, DECIDED 4-6). */
export const mcpAuthenticationSchema: JsonSchema = {
  type: 'object',
  description:
    'Validate bearer JWTs of MCP clients against an OAuth 2.0 / OIDC authorization server, and serve the RFC 9728 / RFC 8414 discovery documents. A rejected request gets 401 with `WWW-Authenticate: Bearer resource_metadata="<resource origin>/.well-known/oauth-protected-resource<request path>"` (followed by `, error="invalid_token"` when a token was sent and refused, RFC 6750) and the gateway\'s JSON error body `{"error":{"type":"unauthorized","message":"authentication failure: \u2026"}}` (DECIDED 4). An accepted token\'s claims are `jwt.<claim>` in CEL, and the `Authorization` header is not forwarded (use `backendAuth.passthrough`).',
  properties: {
    issuer: issuerSchema,
    audiences: { ...audiencesSchema, minItems: 1, description: 'Accepted `aud` values: the token must carry at least one of them (usually the `resourceMetadata.resource` URL).' },
    jwks: jwksSchema,
    mode: {
      enum: ['strict', 'optional'],
      description:
        '`strict`: a valid token is required. `optional` (the default when omitted; a warning at load suggests `strict`): a request without a token passes unauthenticated. An invalid token is rejected in both modes.',
    },
    provider: providerSchema,
    resourceMetadata: resourceMetadataSchema,
    jwtValidationOptions: jwtValidationOptionsSchema,
  },
  required: ['issuer', 'audiences', 'jwks'],
  additionalProperties: false,
};
