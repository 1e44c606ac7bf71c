import { ConfigError, ErrorCode, didYouMean } from 'switchyard/sdk';
import type { CompileContext, ConfigIssue, LoadedConfig } from 'switchyard/sdk';
import type { DeclaredKeyConfig } from './config.ts';

/** `a`, `b` and `c` for a message: the first 20 names, then how many more. */
export function someNames(names: readonly string[]): string {
  return names.slice(0, 20).map((n) => `\`${n}\``).join(', ') + (names.length > 20 ? ` and ${names.length - 20} more` : '');
}

/**
 * Every route a declared key lists must be a route of this config with a `virtualKeys` policy (ADR 0196): a key
 * limited to any other name is refused with 403 on every route it reaches. Checked once all routes are compiled (a
 * key may name a route after the one that declares it); every wrong name is reported, at its place.
 */
export function checkDeclaredRoutes(keys: readonly DeclaredKeyConfig[], load: LoadedConfig, ctx: CompileContext): void {
  const all = new Set(load.routes.map((r) => r.name));
  const keyed = [...new Set(load.routes.filter((r) => r.policies.includes('virtualKeys')).map((r) => r.name))].sort();
  const takes = new Set(keyed);
  const issues: ConfigIssue[] = [];
  keys.forEach((k, i) =>
    k.routes?.forEach((route, j) => {
      if (takes.has(route)) return;
      const guess = didYouMean(route, keyed);
      const known = `${guess !== undefined ? `did you mean \`${guess}\`? ` : ''}routes that take keys: ${someNames(keyed)}`;
      const message = all.has(route)
        ? `route \`${route}\` has no \`virtualKeys\` policy (${known}): the key would be refused there; add the policy to the route or remove the route from the key`
        : `route \`${route}\` is not a route of this config (${known}): the key would be refused on every route it names; routes are named by \`name\` (\`route<N>\`, N its place in its listener, when unnamed)`;
      issues.push({ code: ErrorCode.configInvalid, path: [...ctx.path, 'keys', i, 'routes', j], message });
    }),
  );
  if (issues.length > 0) throw new ConfigError(issues);
}
