/**
 * The `Authorization` value for a configured key (BEHAVIOUR.md DECIDED 8): a value containing a space already
 * names its scheme (`Bearer abc`, `Basic ...`) and is sent verbatim; a bare token gets `Bearer `.
 * Returns an error message (never containing the key) when the value cannot be a header value.
 */
export function authorizationValue(raw: string): string | { error: string } {
  const value = raw.trim();
  if (value.length === 0) return { error: 'is empty' };
  // Header values may not hold control characters; a stray CR/LF would also split the request.
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) return { error: 'contains a line break or another control character' };
  if (/[^\u0000-\u00ff]/.test(value)) return { error: 'contains characters that cannot be sent in an HTTP header' };
  return value.includes(' ') ? value : `Bearer ${value}`;
}
