/**
 * Names (keys and aliases) of every first-party plugin, without importing them: a trimmed distribution uses
 * this to say "`x` is not installed in this distribution" instead of "unknown key". A test keeps it equal to
 * the full preset.
 */
export const FIRST_PARTY_KEYS: readonly string[] = [
  'host',
  'backend',
  'cors',
  'jwtAuth',
  'basicAuth',
  'apiKey',
  'extAuthz',
  'authorization',
  'localRateLimit',
  'remoteRateLimit',
  'transformations',
  'requestHeaderModifier',
  'responseHeaderModifier',
  'urlRewrite',
  'requestRedirect',
  'directResponse',
  'requestMirror',
  'timeout',
  'retry',
  'backendTLS',
  'backendAuth',
  'passthrough',
  'key',
  'gcp',
  'cloudAuthA',
  'aws',
  'cloudAuthB',
  'azure',
  'cloudAuthC',
  'openapi',
];
