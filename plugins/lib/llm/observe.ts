// Usage and model read from provider answers, in the provider's (wire) format.
import type { LlmWireFormat } from './contract.ts';
import type { LlmEvent } from './events.ts';
import { isObj } from './json.ts';
import type { Obj } from './json.ts';
import type { LlmCall } from './telemetry.ts';
import { usageFromCompletions, usageFromConverse, usageFromGemini, usageFromMessages, usageFromResponses } from './usage.ts';

/** Read the model and usage of a complete (non-streamed) response. */
export function observeResponse(format: LlmWireFormat, body: Obj, call: LlmCall): void {
  switch (format) {
    case 'completions':
    case 'embeddings':
      call.setResponseModel(body.model);
      call.addUsage(usageFromCompletions(body.usage));
      break;
    case 'messages':
      call.setResponseModel(body.model);
      call.addUsage(usageFromMessages(body.usage));
      break;
    case 'responses':
      call.setResponseModel(body.model);
      call.addUsage(usageFromResponses(body.usage));
      break;
    case 'converse':
      call.addUsage(usageFromConverse(body.usage));
      break;
    case 'geminiNative':
      call.setResponseModel(body.modelVersion);
      call.addUsage(usageFromGemini(body.usageMetadata));
      break;
    default:
      break;
  }
}

/** Read the model and usage carried by one stream event. */
export function observeEvent(format: LlmWireFormat, e: LlmEvent, call: LlmCall): void {
  if (e.done) return;
  const d = e.data;
  switch (format) {
    case 'completions':
      if (call.responseModel === undefined) call.setResponseModel(d.model);
      if (isObj(d.usage)) call.addUsage(usageFromCompletions(d.usage));
      break;
    case 'messages': {
      const type = e.type ?? d.type;
      if (type === 'message_start' && isObj(d.message)) {
        call.setResponseModel(d.message.model);
        call.addUsage(usageFromMessages(d.message.usage));
      } else if (type === 'message_delta' && isObj(d.usage)) {
        // Later counts are cumulative; input and cache counts appear only when they apply.
        const u = usageFromMessages(d.usage);
        if (u && d.usage.input_tokens === undefined) delete u.inputTokens;
        call.addUsage(u);
      }
      break;
    }
    case 'responses': {
      const type = e.type ?? d.type;
      if ((type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') && isObj(d.response)) {
        call.setResponseModel(d.response.model);
        call.addUsage(usageFromResponses(d.response.usage));
      } else if (type === 'response.created' && isObj(d.response)) call.setResponseModel(d.response.model);
      break;
    }
    case 'converse':
      if (e.type === 'metadata') call.addUsage(usageFromConverse(d.usage));
      break;
    case 'geminiNative':
      // Every chunk may restate the counts so far; later ones win.
      if (call.responseModel === undefined) call.setResponseModel(d.modelVersion);
      if (isObj(d.usageMetadata)) call.addUsage(usageFromGemini(d.usageMetadata));
      break;
    default:
      break;
  }
}
