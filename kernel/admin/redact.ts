/** Config keys whose values are secrets: never shown by `/config_dump` or logged. */
const SECRET_KEYS = new Set([
  'key',
  'secretAccessKey',
  'accessKeyId',
  'sessionToken',
  'clientSecret',
  'client_secret',
  'password',
  'token',
  'secret',
  'authorization',
]);

const REDACTED = '<redacted>';

/** A deep copy of `value` with secret fields replaced (`backendAuth.key`, `apiKey.keys[].key`, cloud credentials). */
export function redactSecrets(value: unknown, parentKey?: string): unknown {
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, parentKey));
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (SECRET_KEYS.has(k) && (typeof v === 'string' || typeof v === 'number')) {
      // A listener or backendTLS `key` is a file path, not a secret; keep paths readable.
      out[k] = k === 'key' && (parentKey === 'tls' || parentKey === 'backendTLS') ? v : REDACTED;
    } else out[k] = redactSecrets(v, k);
  }
  return out;
}
