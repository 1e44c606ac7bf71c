import { defineGuard } from '../../lib/slots/ai.ts';
import type { RegexGuardConfig } from './regex.ts';
import schema from './schema.json' with { type: 'json' };

/** `regex`: mask or reject prompt and response text matching builtin PII detectors or custom patterns. */
export default defineGuard<RegexGuardConfig>({
  key: 'regex',
  description: 'Mask (default) or reject text that matches builtin PII detectors (SSN, credit card, phone, e-mail, Canadian SIN) or custom regular expressions.',
  schema,
  async compile(config, ctx) {
    const { compileRegexGuard } = await import('./regex.ts');
    return compileRegexGuard(config, ctx);
  },
});
