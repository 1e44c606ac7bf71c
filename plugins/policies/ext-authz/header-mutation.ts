import { headerMapAdd } from 'switchyard/sdk';
import type { HeaderMap } from 'switchyard/sdk';
import { gatewayOwnedHeader, serviceHeader } from '../../lib/envoy-grpc/envoy-grpc.ts';
import type { HeaderValueOptionMessage } from '../../lib/envoy-grpc/envoy-grpc.ts';

// Envoy `HeaderValueOption.HeaderAppendAction`.
const APPEND_IF_EXISTS_OR_ADD = 0;
const ADD_IF_ABSENT = 1;
const OVERWRITE_IF_EXISTS_OR_ADD = 2;
const OVERWRITE_IF_EXISTS = 3;

/**
 * Apply one Envoy `HeaderValueOption` to a header map, as Envoy's ext_authz does: the deprecated `append` flag wins
 * when set (true appends, false overwrites), otherwise `append_action` decides.
 */
export function applyHeaderOption(headers: HeaderMap, option: HeaderValueOptionMessage): void {
  const h = option.header;
  if (!h || !h.key) return;
  const header = serviceHeader(h);
  if (header === undefined) return;
  const [name, value] = header;
  const action = option.append ? (option.append.value ? APPEND_IF_EXISTS_OR_ADD : OVERWRITE_IF_EXISTS_OR_ADD) : option.append_action;
  const existing = headers[name];
  switch (action) {
    case APPEND_IF_EXISTS_OR_ADD:
      headerMapAdd(headers, name, value);
      return;
    case ADD_IF_ABSENT:
      if (existing === undefined) headers[name] = value;
      return;
    case OVERWRITE_IF_EXISTS:
      if (existing !== undefined) headers[name] = value;
      return;
    default:
      headers[name] = value;
  }
}

/** Remove headers the service asked to drop (never the gateway-owned ones). */
export function removeHeaders(headers: HeaderMap, names: readonly string[]): void {
  for (const raw of names) {
    const name = raw.toLowerCase();
    if (!gatewayOwnedHeader(name)) delete headers[name];
  }
}
