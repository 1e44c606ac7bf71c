// The tool definitions of an LLM request as prompt guards see them (ADR 0181). The model reads a tool's name, its
// description and its parameter schema (property names, descriptions, enum values, titles) as part of its prompt, so
// text hidden there (a prompt injection in a description) is prompt text. Every client API spells a definition a
// little differently; the holders below are all of them:
//   Chat Completions  tools[].function {name, description, parameters}, tools[].custom {name, description},
//                     the older functions[] {name, description, parameters}
//   Responses         tools[] {name, description, parameters} (function, custom), {server_description} (mcp)
//   Anthropic         tools[] {name, description, input_schema}
//   Gemini            tools[].functionDeclarations[] / function_declarations[] {name, description, parameters,
//                     parametersJsonSchema / parameters_json_schema}
// Bedrock Converse is a provider's wire format only: its toolSpec is translated from one of these, already guarded.
import { isObj } from '../llm/json.ts';
import { jsonSlot, slot } from '../llm/formats/slots.ts';
import type { TextSlot } from '../llm/formats/slots.ts';

type Obj = Record<string, unknown>;

const TEXT_FIELDS = ['name', 'description', 'server_description'] as const;
const SCHEMA_FIELDS = ['parameters', 'input_schema', 'parametersJsonSchema', 'parameters_json_schema'] as const;

/** Role of the slots: the application's own instructions to the model, as a system prompt is. */
const ROLE = 'system';

/**
 * One declaration's texts: its name and descriptions (one slot each), its parameter schema as one JSON text (a
 * masking guard must answer a JSON object; the `regex` guard masks inside it). One message per schema, not per
 * description, keeps a large schema one text for a moderation or guardrail service (as ADR 0159 did for function
 * responses).
 */
function declarationSlots(d: Obj, out: TextSlot[]): void {
  for (const key of TEXT_FIELDS) if (typeof d[key] === 'string' && d[key] !== '') out.push(slot(ROLE, d, key));
  for (const key of SCHEMA_FIELDS) if (isObj(d[key]) && Object.keys(d[key]).length > 0) out.push(jsonSlot(ROLE, d, key));
}

/** The tool definitions of a request body in any client API's shape, in document order. */
export function toolDefinitionSlots(body: Obj, out: TextSlot[]): void {
  for (const list of [body.tools, body.functions]) {
    if (!Array.isArray(list)) continue;
    for (const tool of list) {
      if (!isObj(tool)) continue;
      declarationSlots(tool, out);
      if (isObj(tool.function)) declarationSlots(tool.function, out);
      if (isObj(tool.custom)) declarationSlots(tool.custom, out);
      for (const decls of [tool.functionDeclarations, tool.function_declarations]) {
        if (Array.isArray(decls)) for (const d of decls) if (isObj(d)) declarationSlots(d, out);
      }
    }
  }
}
