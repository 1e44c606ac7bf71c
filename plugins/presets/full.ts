import backend from '../backends/backend/plugin.ts';
import host from '../backends/host/plugin.ts';
import directResponse from '../policies/direct-response/plugin.ts';
import requestHeaderModifier from '../policies/request-header-modifier/plugin.ts';
import responseHeaderModifier from '../policies/response-header-modifier/plugin.ts';

/** Every first-party plugin. */
export const fullPreset = [host, backend, requestHeaderModifier, responseHeaderModifier, directResponse] as const;
export default fullPreset;
