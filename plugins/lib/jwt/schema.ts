import type { JsonSchema } from 'switchyard/sdk';

/** JSON Schema fragments shared by `jwtAuth` and `mcpAuthentication` (one definition, one wording). */

export const issuerSchema: JsonSchema = {
  type: 'string',
  minLength: 1,
  description: 'Expected `iss` claim; compared exactly (no trailing-slash or case normalization).',
};

export const audiencesSchema: JsonSchema = {
  type: 'array',
  description: 'Accepted `aud` values: the token must carry at least one of them. Empty or absent: `aud` is not checked.',
  items: { type: 'string', minLength: 1 },
};

export const jwksSchema: JsonSchema = {
  type: 'object',
  description: 'Where the signing keys come from: exactly one of `url` or `file`. Every key needs a `kid`; RSA, EC (P-256, P-384) and Ed25519 keys are used, symmetric keys are refused.',
  properties: {
    url: {
      type: 'string',
      minLength: 1,
      pattern: '^[hH][tT][tT][pP][sS]?://',
      'x-hint': 'an `http://` or `https://` URL',
      description:
        'HTTP(S) URL of the JWKS. Fetched at load (an unreachable URL does not stop the load: it is logged, fetched again with backoff, and tokens of this issuer get 503 until the keys arrive), kept across reloads, refreshed after its `Cache-Control: max-age` (15 min by default) and refetched on an unknown `kid` (at most once per 30 s).',
    },
    file: {
      type: 'string',
      minLength: 1,
      description: 'Path of a JWKS JSON file, relative to the directory the gateway runs from (not the config file). Read at every config load.',
    },
  },
  additionalProperties: false,
  exactlyOneOf: ['url', 'file'],
};

export const jwtValidationOptionsSchema: JsonSchema = {
  type: 'object',
  description: 'Extra validation rules.',
  properties: {
    requiredClaims: {
      type: 'array',
      description:
        'Claims that must be present. Recognized: `exp`, `nbf`, `aud`, `iss`, `sub`; other names are ignored. Default `[exp]`; `[]` requires none. `exp` and `nbf` are always checked when present, listed or not.',
      items: { type: 'string', minLength: 1 },
    },
  },
  additionalProperties: false,
};

/** Properties of one provider (`issuer`, `audiences`, `jwks`, `jwtValidationOptions`). */
export const providerProperties: Readonly<Record<string, JsonSchema>> = {
  issuer: issuerSchema,
  audiences: audiencesSchema,
  jwks: jwksSchema,
  jwtValidationOptions: jwtValidationOptionsSchema,
};

/** One provider object (the items of `jwtAuth.providers[]`). */
export const providerSchema: JsonSchema = {
  type: 'object',
  description: 'A token issuer the gateway trusts.',
  properties: providerProperties,
  required: ['issuer', 'jwks'],
  additionalProperties: false,
};
