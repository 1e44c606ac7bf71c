import type { CompileContext, ConfigPath } from 'switchyard/sdk';

/**
 * `ai.name` is unique in one config: a second `ai` backend with a name already taken is a config error naming both
 * places. The names seen so far live in the load's shared state (`ctx.loadState`). A named backend is compiled more
 * than once (on its own, then per route that references it), always at the same path: the same path claiming again
 * is fine.
 */

/** Render a config path as users write it: `binds[0].listeners[0].routes[2].backends[0].ai`. */
function formatPath(path: ConfigPath): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${seg}` : seg;
  return out || '(root)';
}

export function claimAiBackendName(ctx: CompileContext, name: string): void {
  const names = ctx.loadState('ai.backendNames', () => new Map<string, string>());
  const here = formatPath(ctx.path);
  const first = names.get(name);
  if (first === undefined) names.set(name, here);
  else if (first !== here) ctx.fail(`ai backend name \`${name}\` is used twice: at ${first} and at ${here}; give each ai backend its own name`, ['name']);
}
