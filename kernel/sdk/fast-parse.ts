import { loadYaml } from './js-yaml-lib.ts';

/**
 * Text that needs the positioned `yaml` parse even when it is valid (docs/perf.md "Loading 100,000 routes"): `${VAR}` (expanded per
 * scalar, its values become secrets), a tag, anchor or alias (`!x`, `&a`, `*a`, but not CEL's `!=`, `&&` or
 * `a * b`), a merge key (`<<`), a directive (`%YAML 1.1` changes the schema) or a complex key (`? `). Quoted text
 * that only looks like one of these takes the positioned parse too, which is always correct, only slower.
 */
function needsDocument(text: string): boolean {
  if (text.includes('${') || text.includes('<<')) return true;
  // One scan for the rare characters (a regex that tests the context at every position costs as much as the parse).
  const rare = /[!&*?%]/g;
  for (let m = rare.exec(text); m; m = rare.exec(text)) {
    const at = m.index;
    const before = at === 0 ? '\n' : text[at - 1]!;
    const after = text[at + 1] ?? '\n';
    // `:` too: in a flow mapping a value may follow a quoted key's colon directly (`{"a":*x}`).
    if (!/[\s[{,:]/.test(before)) continue;
    const c = m[0];
    if (c === '%' ? before === '\n' : c === '!' ? after !== '=' : c === '?' ? /\s/.test(after) : !/[\s,[\]{}&*=]/.test(after)) return true;
  }
  return false;
}

/**
 * The config as plain data, parsed without node positions by js-yaml's YAML 1.2 core schema (the schema the
 * `yaml` library applies, and about 6× faster for a large file), or undefined when the text needs the positioned
 * parse: a construct above, or anything js-yaml refuses (syntax errors, several documents, an empty file, nesting
 * deeper than 100). A config that then fails validation is parsed again with positions, so every error message
 * is the one the positioned parse gives (load-config.ts).
 */
export function parseWithoutPositions(text: string): unknown {
  if (needsDocument(text)) return undefined;
  try {
    return loadYaml(text);
  } catch {
    return undefined;
  }
}

/**
 * YAML data that is not a config (an OpenAPI document) without positions, by js-yaml as above, or undefined for the
 * bounded `yaml` parse. Nothing in data is expanded, so `${` is text; and js-yaml itself says when the text needs the
 * other parse: it refuses every alias here (it has no bound of its own on them: an alias bomb), an unknown tag, a
 * complex key, a repeated key. Only a directive is looked for first (`%YAML 1.1` reads `yes` as true in `yaml`).
 * `*word` and `&word` inside a description (Markdown emphasis) no longer cost the slow parse (ADR 0182).
 */
export function parseDataWithoutPositions(text: string): unknown {
  if (/^%/m.test(text)) return undefined;
  try {
    return loadYaml(text, { maxAliases: 0 });
  } catch {
    return undefined;
  }
}
