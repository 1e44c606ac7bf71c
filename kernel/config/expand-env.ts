import { ErrorCode } from '../sdk/index.ts';
import type { ConfigSource, SourcedIssue } from './config-source.ts';
import type { SecretMarks } from './secret-marks.ts';
import { yamlLib } from '../sdk/yaml-lib.ts';

const REFERENCE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-((?:[^}\\]|\\.)*))?\}/g;

/**
 * Expand `${VAR}` and `${VAR:-default}` inside scalar values (`$${` writes a literal `${`). Expanding per
 * scalar rather than on the raw text keeps every line and column true. An unquoted scalar is re-read as
 * YAML after expansion, so `port: ${PORT}` becomes a number, as it would with textual expansion. `marks`, when
 * given, learns every expanded scalar: its path, its text with the references as written minus their defaults
 * (what `/config_dump` shows instead of the value), and the substituted values (ADR 0017).
 */
export function expandEnv(source: ConfigSource, env: NodeJS.ProcessEnv, marks?: SecretMarks): SourcedIssue[] {
  const { parse, visit, Scalar } = yamlLib();
  const issues: SourcedIssue[] = [];
  visit(source.doc, {
    Scalar(_key, node, ancestors) {
      if (typeof node.value !== 'string' || !node.value.includes('${')) return;
      const missing: string[] = [];
      const substituted: string[] = [];
      let references = 0;
      const expanded = node.value.replace(REFERENCE, (whole, name: string | undefined, fallback: string | undefined) => {
        if (whole === '$${') return '${';
        references++;
        const value = env[name!];
        if (value !== undefined && value !== '') {
          substituted.push(value);
          return value;
        }
        if (fallback !== undefined) return fallback.replace(/\\(.)/g, '$1');
        if (value === '') return '';
        missing.push(name!);
        return whole;
      });
      if (missing.length > 0) {
        issues.push({
          code: ErrorCode.configEnv,
          path: configPath(ancestors, node),
          offset: node.range?.[0] ?? 0,
          message: `environment variable ${missing.map((m) => `\`${m}\``).join(', ')} is not set (write \`\${${missing[0]}:-default}\` to give a default)`,
        });
        return;
      }
      if (marks && references > 0) {
        const template = node.value.replace(REFERENCE, (whole, name: string | undefined) => (whole === '$${' ? whole : `\${${name!}}`));
        marks.markEnv(configPath(ancestors, node), template, substituted, expanded);
      }
      if (node.type === Scalar.PLAIN) {
        // A plain scalar takes the type YAML gives it (a port is a number), but only a scalar type: read as YAML, a
        // value such as `tok #frag` would lose its end as a comment, and `a: b` become a map.
        let typed: unknown;
        try {
          typed = parse(expanded);
        } catch {
          typed = expanded;
        }
        node.value = typeof typed === 'number' || typeof typed === 'boolean' || typed === null ? typed : expanded;
      } else {
        node.value = expanded;
      }
    },
  });
  return issues;
}

/** The config path (`binds[0].port`) of a node from its ancestors, so env errors name where they are. */
function configPath(ancestors: readonly unknown[], node: unknown): (string | number)[] {
  const { isPair, isScalar, isSeq } = yamlLib();
  const path: (string | number)[] = [];
  const chain = [...ancestors, node];
  for (let i = 0; i < chain.length - 1; i++) {
    const parent = chain[i];
    const child = chain[i + 1];
    if (isPair(parent)) path.push(isScalar(parent.key) ? String(parent.key.value) : String(parent.key));
    else if (isSeq(parent)) path.push(parent.items.indexOf(child as never));
  }
  return path;
}
