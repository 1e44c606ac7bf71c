/**
 * A URL as messages show it: scheme, host and path, without a user, password, query or fragment, which may carry
 * credentials (`?api_key=...`). For errors that reach clients and for log lines.
 */
export function shownUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}
