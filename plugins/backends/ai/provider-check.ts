import type { LlmProviderInstance } from '../../lib/llm/contract.ts';

/** Members every provider instance has (the slot's contract), as functions. */
const METHODS = ['wireFormat', 'path', 'prepareHeaders'] as const;

/**
 * What a provider's `compile` returned that the backend cannot use, or undefined (ADR 0144). A TypeScript provider
 * cannot get it wrong; a JavaScript one otherwise failed the load with a TypeError from inside the backend.
 */
export function providerProblem(provider: LlmProviderInstance): string | undefined {
  const p = provider as unknown as Partial<Record<string, unknown>>;
  if (typeof p.kind !== 'string' || p.kind === '') return 'an instance without `kind` (its name in logs)';
  if (typeof p.origin !== 'string' || !/^https?:\/\//.test(p.origin)) return 'an instance without `origin` (an `http://` or `https://` origin)';
  const missing = METHODS.find((m) => typeof p[m] !== 'function');
  return missing === undefined ? undefined : `an instance without \`${missing}()\``;
}
