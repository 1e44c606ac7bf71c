/**
 * `switchyard/slots/backend-auth`: how the gateway authenticates to an upstream. The slot is declared by the
 * `backendAuth` policy (and by the plugins that compile a default credential through it: the `ai` backend, the
 * `cloudBackend` backend); its variants are `passthrough`, `key`, `gcp`, `aws`, `azure`, or a third party's.
 */
import { defineSlot, defineVariant } from 'switchyard/sdk';
import type { SlotPlugin, VariantManifest, VariantPlugin } from 'switchyard/sdk';
import type { BackendAuthInstance } from '../backend-auth/contract.ts';

export type { BackendAuthInstance } from '../backend-auth/contract.ts';

/** The variant of a `backendAuth` policy (exactly one key). Variants compile to `BackendAuthInstance`. */
export const backendAuthSlot: SlotPlugin<BackendAuthInstance> = defineSlot<BackendAuthInstance>({
  name: 'backendAuth',
  type: 'oneOf',
  accepts: 'variant',
  noun: 'backendAuth variant',
  description: 'How the gateway authenticates upstream.',
});

/** Define a `backendAuth` variant; `compile` must return a `BackendAuthInstance`. */
export function defineBackendAuth<C>(manifest: VariantManifest<C, BackendAuthInstance>): VariantPlugin<C, BackendAuthInstance> {
  return defineVariant(backendAuthSlot, manifest);
}
