/**
 * `switchyard/slots/ai`: the extension points of the `ai` backend and the `ai` policy, for third-party LLM providers
 * and prompt guards. The slots are declared by their owners (the `ai` backend declares `llmProvider`, the `ai` policy
 * `guard`); a variant defined with the helpers below is type-checked against the slot's instance contract.
 * docs/plugin-authoring.md "A guard and a provider".
 */
import { defineSlot, defineVariant } from 'switchyard/sdk';
import type { SlotPlugin, VariantManifest, VariantPlugin } from 'switchyard/sdk';
import type { GuardInstance, LlmProviderInstance } from '../llm/contract.ts';

export type { GuardInstance, GuardMessage, GuardVerdict, LlmProviderInstance, LlmRouteType, LlmWireFormat } from '../llm/contract.ts';
export type { ErrorFamily, LlmFormat, PromptMessage, UsageSink } from '../llm/formats/format.ts';
export type { LlmEvent, StreamTranslator } from '../llm/events.ts';
export type { LlmUsage } from '../llm/usage.ts';

/** The provider of an `ai` backend (`ai.provider`: exactly one key). Variants compile to `LlmProviderInstance`. */
export const llmProviderSlot: SlotPlugin<LlmProviderInstance> = defineSlot<LlmProviderInstance>({
  name: 'llmProvider',
  type: 'oneOf',
  accepts: 'variant',
  noun: 'LLM provider',
  description: 'The provider of an `ai` backend.',
});

/** The type of one prompt guard (an item of `ai.promptGuard.request`/`.response`). Variants compile to `GuardInstance`. */
export const guardSlot: SlotPlugin<GuardInstance> = defineSlot<GuardInstance>({
  name: 'guard',
  type: 'oneOf',
  accepts: 'variant',
  noun: 'guard type',
  description: 'The type of a prompt guard.',
});

/** Define an LLM provider (a key of `ai.provider`); `compile` must return an `LlmProviderInstance`. */
export function defineLlmProvider<C>(manifest: VariantManifest<C, LlmProviderInstance>): VariantPlugin<C, LlmProviderInstance> {
  return defineVariant(llmProviderSlot, manifest);
}

/** Define a prompt guard type (a key of a `promptGuard` list item); `compile` must return a `GuardInstance`. */
export function defineGuard<C>(manifest: VariantManifest<C, GuardInstance>): VariantPlugin<C, GuardInstance> {
  return defineVariant(guardSlot, manifest);
}
