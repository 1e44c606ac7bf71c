import type { JsonSchema } from 'switchyard/sdk';
import { audiencesSchema, issuerSchema, jwksSchema, jwtValidationOptionsSchema, providerSchema } from '../../lib/jwt/schema.ts';

/** Schema of `jwtAuth`: built from the shared JWT library's fragments, so `mcpAuthentication` words them the same. */
export const jwtAuthSchema: JsonSchema = {
  type: 'object',
  description:
    'Validate bearer JWTs. Single-provider form (`issuer`, `audiences`, `jwks`, `jwtValidationOptions`) or `providers[]`, where the token\'s `iss` picks the provider.',
  properties: {
    issuer: issuerSchema,
    audiences: audiencesSchema,
    jwks: jwksSchema,
    jwtValidationOptions: jwtValidationOptionsSchema,
    providers: {
      type: 'array',
      minItems: 1,
      description: 'Several trusted issuers; a token is checked against the provider whose `issuer` equals its `iss` (none: 401).',
      items: providerSchema,
    },
    mode: {
      enum: ['strict', 'optional', 'permissive'],
      description:
        '`strict`: a valid token is required. `optional` (default): a missing token passes, an invalid one is rejected. `permissive`: never rejects; invalid tokens are ignored (no claims).',
    },
  },
  additionalProperties: false,
  exactlyOneOf: ['issuer', 'providers'],
};
