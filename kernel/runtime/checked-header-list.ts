// Whether a final answer header list may be written as a checked head (ProxyResponse.writeCheckedHead, ADR 0082)
// although policies edited it: the lean client's parser checked the upstream's names and values, but a response hook
// or a queued header may have added any string, so the list is checked here as node:http's `writeHead` would check it.

/** A header name node:http accepts (its `checkIsHttpToken`), in lower case: the case `writeCheckedHead` writes. */
const LOWER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
/** A character node:http refuses in a header value (its `checkInvalidHeaderChar`). */
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;
const DIGITS = /^\d+$/;

/**
 * True when every name of the flat `[name, value, ...]` list is a lower-case token and every value a string node:http
 * would write unchanged (a Content-Length only digits, since the checked head takes it as the framing length).
 * Anything else (an upper-case name a hook added, a number, a control character) is left to `writeHead`, which writes
 * it as given or answers 500 as before.
 */
export function isCheckedHeaderList(list: readonly unknown[]): list is readonly string[] {
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i];
    const value = list[i + 1];
    if (typeof name !== 'string' || typeof value !== 'string' || !LOWER_TOKEN.test(name) || INVALID_VALUE_CHAR.test(value)) return false;
    if (name === 'content-length' && !DIGITS.test(value)) return false;
  }
  return true;
}
