import type { RpcMessage } from '../../jsonrpc.ts';
import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, INPUT_REQUIRED_METHODS, PROTOCOL_VERSION_META_KEY, REV_2026_07_28, withoutEnvelope } from './protocol.ts';
import type { ClientEnvelope } from './protocol.ts';

type Params = RpcMessage['params'];

/**
 * The params a request is sent to a target with, when the client speaks 2026-07-28 (`envelope` set): to a target
 * that speaks it too, with the client's envelope in `_meta` (the request's own keys win); to an `initialize`-revision
 * target, without the envelope keys and without the revision's retry fields. Other clients' params go as they are.
 */
export function paramsForTarget(method: string, params: Params, envelope: ClientEnvelope | undefined, targetSpeaks20260728: boolean): Params {
  if (targetSpeaks20260728) {
    const meta = (params?._meta as Record<string, unknown> | undefined) ?? {};
    const keys: Record<string, unknown> = { [PROTOCOL_VERSION_META_KEY]: REV_2026_07_28, [CLIENT_CAPABILITIES_META_KEY]: envelope?.clientCapabilities ?? {} };
    if (envelope?.clientInfo) keys[CLIENT_INFO_META_KEY] = envelope.clientInfo;
    return { ...params, _meta: { ...keys, ...meta, [PROTOCOL_VERSION_META_KEY]: REV_2026_07_28 } };
  }
  if (!envelope || !params) return params;
  let out = params;
  const meta = params._meta as Record<string, unknown> | undefined;
  if (meta && typeof meta === 'object') {
    const rest = withoutEnvelope(meta);
    out = { ...out };
    if (rest) out._meta = rest;
    else delete out._meta;
  }
  if (INPUT_REQUIRED_METHODS.has(method) && ('inputResponses' in out || 'requestState' in out)) {
    const { inputResponses: _i, requestState: _r, ...rest } = out;
    out = rest;
  }
  return out;
}
