// The output a streamed answer has carried so far, in characters, read from each event's raw JSON text without
// parsing it (a passed-through stream parses only the events that carry usage, ADR 0060). What a stream cut before
// its usage is charged is estimated from it (ADR 0150).

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * The characters of the string values of members named in `keys` (`"text": "..."`, at any depth), an escape counted
 * as one character. A key's name never matches inside a string value, where its quotes would be escaped. Linear in
 * `data`; a value that is not a string (an object, a number) is not counted.
 */
export function outputChars(data: string, keys: readonly string[]): number {
  let n = 0;
  for (const key of keys) {
    const needle = `"${key}"`;
    let at = data.indexOf(needle);
    while (at !== -1) {
      let i = at + needle.length;
      while (i < data.length && isSpace(data.charCodeAt(i))) i++;
      if (data.charCodeAt(i) === COLON) {
        i++;
        while (i < data.length && isSpace(data.charCodeAt(i))) i++;
        if (data.charCodeAt(i) === QUOTE) {
          i++;
          for (; i < data.length; i++) {
            const c = data.charCodeAt(i);
            if (c === QUOTE) break;
            if (c === BACKSLASH) i += data.charCodeAt(i + 1) === 0x75 ? 5 : 1;
            n++;
          }
        }
      }
      at = data.indexOf(needle, i);
    }
  }
  return n;
}
