import { Phase, PHASE_ORDER } from '../sdk/index.ts';
import type { Plugin } from '../sdk/index.ts';

const BODY_NEEDS: ReadonlySet<unknown> = new Set([undefined, 'none', 'buffer', 'replay']);

/**
 * What is wrong with a plugin's manifest, read as data without running plugin code, or undefined (ADR 0144). A
 * TypeScript plugin cannot get these wrong; a JavaScript one can, and the kernel would otherwise order hooks by
 * NaN (an unknown phase), offer the policy nowhere (`attach` given as a string) or fail later with a TypeError.
 */
export function manifestProblem(plugin: Plugin): string | undefined {
  if (typeof plugin.description !== 'string') return 'has no `description` (one line of text)';
  if (plugin.kind === 'slot') return undefined;
  if (typeof plugin.schema !== 'object' || plugin.schema === null || Array.isArray(plugin.schema)) return 'has no `schema` (a JSON Schema object)';
  if (typeof plugin.compile !== 'function') return 'has no `compile` function';
  const aliases: unknown = plugin.aliases;
  if (aliases !== undefined && !(Array.isArray(aliases) && aliases.every((a) => typeof a === 'string'))) return `has \`aliases\` ${JSON.stringify(aliases)}; a list of keys`;
  if (plugin.kind !== 'policy') return undefined;
  const attach: unknown = plugin.attach;
  if (!Array.isArray(attach) || attach.length === 0 || !attach.every((a) => typeof a === 'string')) {
    return `has \`attach\` ${JSON.stringify(attach)}; a list of slot names such as ['routePolicies']`;
  }
  if (!Object.hasOwn(Phase, plugin.phase)) return `has phase \`${String(plugin.phase)}\`; one of ${PHASE_ORDER.map((p) => `\`${p}\``).join(', ')}`;
  const order: unknown = plugin.order;
  if (order !== undefined && !(typeof order === 'number' && Number.isFinite(order))) return `has \`order\` ${JSON.stringify(order)}; a finite number`;
  if (!BODY_NEEDS.has(plugin.needs?.body)) return `has \`needs.body\` ${JSON.stringify(plugin.needs?.body)}; one of \`none\`, \`buffer\`, \`replay\``;
  const stream: unknown = plugin.requestStream;
  if (stream !== undefined && typeof stream !== 'boolean') return `has \`requestStream\` ${JSON.stringify(stream)}; \`false\` or left out`;
  return undefined;
}
