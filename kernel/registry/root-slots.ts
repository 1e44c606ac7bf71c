import type { SlotManifest } from '../sdk/index.ts';

/** Slots the kernel itself declares. Plugins may declare more with `defineSlot`. */
export const ROOT_SLOTS: readonly SlotManifest[] = [
  { name: 'routePolicies', type: 'map', accepts: 'policy', description: 'Policies of a route (`routes[].policies`).' },
  {
    name: 'backendPolicies',
    type: 'map',
    accepts: 'policy',
    description: 'Policies of a backend (`backends[].policies`, `routes[].backends[].policies`).',
  },
  {
    name: 'mcpTargetPolicies',
    type: 'map',
    accepts: 'policy',
    description: 'Policies of one MCP target (`mcp.targets[].policies`), merged over the route and backend ones.',
  },
  { name: 'backend', type: 'oneOf', accepts: 'backend', description: 'The kind of a backend: exactly one key.' },
  { name: 'mcpTransport', type: 'oneOf', accepts: 'mcpTransport', description: 'The transport of an MCP target.' },
  { name: 'llmProvider', type: 'oneOf', accepts: 'llmProvider', description: 'The provider of an `ai` backend.' },
  { name: 'guard', type: 'oneOf', accepts: 'guard', description: 'The type of a prompt guard.' },
  { name: 'backendAuth', type: 'oneOf', accepts: 'backendAuth', description: 'How the gateway authenticates upstream.' },
];
