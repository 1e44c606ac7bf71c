import type { Plugin } from '../sdk/index.ts';
import { gatewayCelNames } from '../expr/cel-expressions.ts';

/** A CEL identifier, and the words CEL reserves (the CEL spec's lexis): a variable named otherwise cannot be read. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const CEL_RESERVED: ReadonlySet<string> = new Set(['true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while']);

/**
 * Who publishes each CEL variable (ADR 0154). A plugin's `celVariables` are attributes it sets per request; one named
 * like a variable of the gateway (`request`, `source`, ...) or like another package's would be shadowed or would
 * shadow it without a word, so it is refused at registration. Plugins of one package may share a name (the
 * distribution's `jwtAuth` and `mcpAuthentication` both publish `jwt`).
 */
export class CelVariableOwners<S extends { readonly name: string }> {
  private readonly reserved = gatewayCelNames();
  private readonly owners = new Map<string, { key: string; source: S }>();

  /**
   * Record the variables `plugin` of `source` declares; what is wrong with them (to follow "plugin `x` from ..."),
   * naming an earlier publisher with `describe`, or undefined.
   */
  claim(plugin: Plugin, source: S, describe: (source: S) => string): string | undefined {
    if (plugin.kind === 'slot') return undefined;
    for (const variable of plugin.celVariables ?? []) {
      const name: unknown = typeof variable === 'string' ? variable : (variable as { name?: unknown } | null)?.name;
      if (typeof name !== 'string') return `has \`celVariables\` entry ${JSON.stringify(variable)}; a name, or { name, description }`;
      if (!IDENTIFIER.test(name) || CEL_RESERVED.has(name)) return `declares the CEL variable \`${name}\`, which no expression can name (a CEL identifier that is not a reserved word)`;
      if (this.reserved.has(name)) return `declares the CEL variable \`${name}\`, which the gateway itself provides`;
      const owner = this.owners.get(name);
      if (owner === undefined) this.owners.set(name, { key: plugin.key, source });
      else if (owner.source.name !== source.name) return `declares the CEL variable \`${name}\`, which plugin \`${owner.key}\` from ${describe(owner.source)} publishes`;
    }
    return undefined;
  }
}
