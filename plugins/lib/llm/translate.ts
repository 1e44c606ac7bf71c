// Which translation a (client format, wire format) pair needs: the format modules (plugins/lib/llm/formats) composed
// through the canonical form. Kept as the entry point the `ai` backend and the tests import.
import type { LlmRouteType, LlmWireFormat } from './contract.ts';
import { formatOf } from './formats/index.ts';
import type { ErrorFamily } from './formats/format.ts';

export { translation, translationBetween } from './formats/index.ts';
export type { Translation } from './formats/index.ts';

/** The API family whose error shape a format uses. */
export function errorFamily(format: LlmRouteType | LlmWireFormat): ErrorFamily {
  return formatOf(format)?.family ?? 'other';
}
