/**
 * The headers of an upstream answer the kernel forwards straight into the client's response (ADR 0051, 0071): a flat
 * `[name, value, name, value, ...]` list, names lower-case, in the order the upstream sent them (a name may repeat, not
 * necessarily next to its other values). `PolicyInstance.onResponseHeaders` edits it in place. The helpers below
 * change it as the same operation changes a reply's `HeaderMap`, so a policy's two hooks stay alike.
 */
export type ResponseHeaderList = string[];

/**
 * The value of `name` as a `HeaderMap` would hold it: undefined when absent, the string when it appears once, the
 * values in order when it repeats. `name` must be lower-case.
 */
export function headerListGet(list: readonly string[], name: string): string | string[] | undefined {
  let found: string | string[] | undefined;
  for (let i = 0; i < list.length; i += 2) {
    if (list[i] !== name) continue;
    const value = list[i + 1]!;
    if (found === undefined) found = value;
    else if (typeof found === 'string') found = [found, value];
    else found.push(value);
  }
  return found;
}

/** Whether `name` (lower-case) is in the list. */
export function headerListHas(list: readonly string[], name: string): boolean {
  for (let i = 0; i < list.length; i += 2) if (list[i] === name) return true;
  return false;
}

/**
 * `name` given `value`, replacing all its values (`headers[name] = value`): where it first appears, its other
 * values dropped; at the end when absent.
 */
export function headerListSet(list: string[], name: string, value: string): void {
  let at = -1;
  for (let i = 0; i < list.length; i += 2) {
    if (list[i] !== name) continue;
    if (at === -1) {
      at = i;
      list[i + 1] = value;
    } else {
      list.splice(i, 2);
      i -= 2;
    }
  }
  if (at === -1) list.push(name, value);
}

/**
 * A copy of a header object without its blanked names: a withheld credential header stays on the request as
 * `undefined` (deleting it would slow every later walk of the object), which consumers that count or copy names skip.
 */
export function presentHeaders<T extends string | string[] | number>(headers: Readonly<Record<string, T | undefined>>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * One more value of `name` in a header object: a second value makes the entry an array (as `headerListAdd`). An array
 * already there is replaced, never pushed to: a shallow copy of the object (failover's snapshot of the request headers
 * before a backend's hooks, ADR 0039; a hook's view of the request) must not see what is added to the original.
 */
export function headerMapAdd(headers: Record<string, string | string[] | number | undefined>, name: string, value: string): void {
  const existing = headers[name];
  if (existing === undefined) headers[name] = value;
  else if (Array.isArray(existing)) headers[name] = [...existing, value];
  else headers[name] = [String(existing), value];
}

/** One more value of `name`, after its last one (values of a name keep their order); at the end when absent. */
export function headerListAdd(list: string[], name: string, value: string): void {
  let last = -1;
  for (let i = 0; i < list.length; i += 2) if (list[i] === name) last = i;
  if (last === -1) list.push(name, value);
  else list.splice(last + 2, 0, name, value);
}

/** Every value of `name` removed (`delete headers[name]`). */
export function headerListRemove(list: string[], name: string): void {
  for (let i = 0; i < list.length; i += 2) {
    if (list[i] !== name) continue;
    list.splice(i, 2);
    i -= 2;
  }
}
