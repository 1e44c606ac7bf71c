import { defineGuard } from '../../lib/slots/ai.ts';
import type { RegexGuardConfig } from './regex.ts';

/** `regex`: mask or reject prompt and response text matching builtin PII detectors or custom patterns. */
export default defineGuard<RegexGuardConfig>({
  key: 'regex',
  description: 'Mask (default) or reject text that matches builtin PII detectors (SSN, credit card, phone, e-mail, Canadian SIN) or custom regular expressions.',
  schema: {
    type: 'object',
    description: 'Regular-expression guard: `rules` are applied in order to every message text.',
    properties: {
      action: {
        enum: ['mask', 'reject'],
        description: '`mask` (default): replace matches with `<ENTITY>` (builtins: `<SSN>`, `<CREDIT_CARD>`, `<PHONE_NUMBER>`, `<EMAIL_ADDRESS>`, `<CA_SIN>`) or `<masked>` (patterns) and continue. `reject`: answer with the entry\'s `rejection` on the first match.',
      },
      rules: {
        type: 'array',
        description: 'Rules, applied in order (a later rule sees the text as earlier ones masked it).',
        items: {
          type: 'object',
          description: 'One rule: exactly one of `builtin` or `pattern`.',
          properties: {
            builtin: {
              enum: ['ssn', 'creditCard', 'phoneNumber', 'email', 'caSin'],
              description: 'A builtin detector: `ssn` (US social security number), `creditCard` (Luhn-checked card numbers), `phoneNumber` (US, CA, GB, DE, IL, IN, BR and `+` international numbers), `email`, `caSin` (Canadian social insurance number).',
            },
            pattern: {
              type: 'string',
              minLength: 1,
              description: 'A regular expression (JavaScript syntax; a leading `(?i)`/`(?s)`/`(?m)` is accepted) searched anywhere in the text.',
            },
          },
          additionalProperties: false,
          exactlyOneOf: ['builtin', 'pattern'],
        },
      },
    },
    required: ['rules'],
    additionalProperties: false,
  },
  async compile(config, ctx) {
    const { compileRegexGuard } = await import('./regex.ts');
    return compileRegexGuard(config, ctx);
  },
});
