import type { SlotManifest } from '../sdk/index.ts';

/**
 * Slots the kernel itself declares: the places of its own config tree. Every other slot (an MCP target's
 * transport and policies, an `ai` backend's provider, a prompt guard) is declared by the plugin that owns it.
 */
export const ROOT_SLOTS: readonly SlotManifest[] = [
  { name: 'routePolicies', type: 'map', accepts: 'policy', noun: 'policy', description: 'Policies of a route (`routes[].policies`).' },
  {
    name: 'backendPolicies',
    type: 'map',
    accepts: 'policy',
    noun: 'backend policy',
    description: 'Policies of a backend (`backends[].policies`, `routes[].backends[].policies`).',
  },
  { name: 'backend', type: 'oneOf', accepts: 'backend', noun: 'backend kind', description: 'The kind of a backend: exactly one key.' },
];
