/** One module specifier found in a source file. */
export interface FoundImport {
  readonly specifier: string;
  /** 1-based line of the specifier. */
  readonly line: number;
  readonly kind: 'import' | 'export' | 'dynamic' | 'require';
}

interface Token {
  readonly type: 'word' | 'string' | 'punct' | 'template';
  readonly value: string;
  readonly line: number;
}

// After these keywords a `/` starts a regular expression, not a division.
const REGEX_AFTER_WORD = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']);

/**
 * A small JavaScript/TypeScript tokenizer: just enough to tell code from comments, strings, template literals and
 * regular expressions, so module specifiers are found where they are real (not in a comment or a string).
 */
function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  const n = src.length;
  const prevAllowsRegex = (): boolean => {
    const prev = tokens[tokens.length - 1];
    if (!prev) return true;
    if (prev.type === 'word') return REGEX_AFTER_WORD.has(prev.value);
    if (prev.type === 'string' || prev.type === 'template') return false;
    return !(prev.value === ')' || prev.value === ']' || prev.value === '}');
  };
  while (i < n) {
    const c = src[i]!;
    if (c === '\n') {
      line++;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r') {
      i++;
    } else if (c === '/' && src[i + 1] === '/') {
      while (i < n && src[i] !== '\n') i++;
    } else if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      const stop = end === -1 ? n : end + 2;
      for (let k = i; k < stop; k++) if (src[k] === '\n') line++;
      i = stop;
    } else if (c === '"' || c === "'") {
      const start = line;
      let value = '';
      i++;
      while (i < n && src[i] !== c) {
        if (src[i] === '\\') {
          value += src[i + 1] ?? '';
          if (src[i + 1] === '\n') line++;
          i += 2;
        } else {
          if (src[i] === '\n') line++;
          value += src[i];
          i++;
        }
      }
      i++;
      tokens.push({ type: 'string', value, line: start });
    } else if (c === '`') {
      // Template literal: skipped as one opaque token, including `${…}` parts (nested braces and strings).
      const start = line;
      i++;
      let depth = 0;
      while (i < n) {
        const d = src[i]!;
        if (d === '\n') line++;
        if (d === '\\') {
          i += 2;
          continue;
        }
        if (depth === 0 && d === '`') break;
        if (d === '$' && src[i + 1] === '{') {
          depth++;
          i += 2;
          continue;
        }
        if (depth > 0 && d === '{') depth++;
        if (depth > 0 && d === '}') depth--;
        i++;
      }
      i++;
      tokens.push({ type: 'template', value: '', line: start });
    } else if (c === '/' && prevAllowsRegex()) {
      i++;
      let inClass = false;
      while (i < n && src[i] !== '\n') {
        const d = src[i]!;
        if (d === '\\') {
          i += 2;
          continue;
        }
        if (d === '[') inClass = true;
        else if (d === ']') inClass = false;
        else if (d === '/' && !inClass) break;
        i++;
      }
      i++;
      while (i < n && /[a-z]/i.test(src[i]!)) i++;
      tokens.push({ type: 'punct', value: 'regex', line });
    } else if (/[A-Za-z_$]/.test(c)) {
      const start = i;
      while (i < n && /[\w$]/.test(src[i]!)) i++;
      tokens.push({ type: 'word', value: src.slice(start, i), line });
    } else if (/[0-9]/.test(c)) {
      while (i < n && /[\w.]/.test(src[i]!)) i++;
      tokens.push({ type: 'word', value: '0', line });
    } else {
      tokens.push({ type: 'punct', value: c, line });
      i++;
    }
  }
  return tokens;
}

/**
 * Every static module specifier in a source file: `import … from`, side-effect `import '…'`, `export … from`,
 * `import('…')` with a string literal, `require('…')` and `require.resolve('…')`. Dynamic imports of computed
 * values are not reported (they cannot be checked statically).
 */
export function scanImports(src: string): FoundImport[] {
  const t = tokenize(src);
  const found: FoundImport[] = [];
  const at = (k: number): Token | undefined => t[k];
  for (let k = 0; k < t.length; k++) {
    const tok = t[k]!;
    if (tok.type !== 'word') continue;
    const prev = at(k - 1);
    // Property accesses such as `foo.import` or `x.require` are not module references.
    if (prev?.type === 'punct' && prev.value === '.') continue;
    if (tok.value === 'import') {
      const next = at(k + 1);
      if (!next) continue;
      if (next.type === 'string') {
        found.push({ specifier: next.value, line: next.line, kind: 'import' });
      } else if (next.type === 'punct' && next.value === '(') {
        const arg = at(k + 2);
        if (arg?.type === 'string') found.push({ specifier: arg.value, line: arg.line, kind: 'dynamic' });
      } else if (next.type === 'punct' && next.value === '.') {
        continue; // import.meta
      } else {
        const spec = findFrom(t, k + 1);
        if (spec) found.push({ specifier: spec.value, line: spec.line, kind: 'import' });
      }
    } else if (tok.value === 'export') {
      let j = k + 1;
      if (at(j)?.type === 'word' && at(j)!.value === 'type') j++;
      const next = at(j);
      if (next?.type === 'punct' && (next.value === '*' || next.value === '{')) {
        const spec = findFrom(t, j);
        if (spec) found.push({ specifier: spec.value, line: spec.line, kind: 'export' });
      }
    } else if (tok.value === 'require') {
      let j = k + 1;
      if (at(j)?.value === '.' && at(j + 1)?.value === 'resolve') j += 2;
      if (at(j)?.value === '(' && at(j + 1)?.type === 'string' && at(j + 2)?.value === ')') {
        found.push({ specifier: at(j + 1)!.value, line: at(j + 1)!.line, kind: 'require' });
      }
    }
  }
  return found;
}

/** From an import/export clause start, the string after `from`, stopping at the end of the statement. */
function findFrom(t: Token[], start: number): Token | undefined {
  let depth = 0;
  for (let j = start; j < t.length && j < start + 500; j++) {
    const tok = t[j]!;
    if (tok.type === 'punct') {
      if (tok.value === '{') depth++;
      else if (tok.value === '}') depth--;
      else if (tok.value === ';' && depth === 0) return undefined;
      else if (tok.value === '(' || tok.value === '=') return undefined; // not an import clause
    } else if (tok.type === 'word' && tok.value === 'from' && depth === 0) {
      const spec = t[j + 1];
      return spec?.type === 'string' ? spec : undefined;
    }
  }
  return undefined;
}
