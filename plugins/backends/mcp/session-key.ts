import { ConfigError, defineConfigSection, ErrorCode } from 'switchyard/sdk';
// Not `import ... from 'node:crypto'`: an ES import builds crypto's namespace, which reads its lazy `webcrypto` getter and
// so loads Node's WebCrypto for every gateway (docs/perf.md "Memory, session 10b").
const { randomBytes } = process.getBuiltinModule('node:crypto');

/**
 * The session-sealing key used when neither `config.session.key` nor `SESSION_KEY` is set: random, but one per
 * process, so sessions survive config reloads (a key drawn per load would orphan every session on reload).
 */
const PROCESS_SESSION_KEY = randomBytes(32);

const HEX_KEY = /^[0-9a-fA-F]{64}$/;

/**
 * `config.session`: the 32-byte AES-256-GCM key sealing self-describing MCP session ids (`Mcp-Session-Id`), so any
 * replica configured with the same key can resume a session it never saw. `SESSION_KEY` overrides the file's key;
 * a random key per process when neither is set. Never log it.
 */
export const sessionSection = defineConfigSection<Buffer>({
  name: 'session',
  schema: {
    type: 'object',
    description: 'Sealing of self-describing session ids (MCP `Mcp-Session-Id`), so any replica holding the key can resume a session.',
    properties: {
      key: {
        type: 'string',
        pattern: '^[0-9a-fA-F]{64}$',
        'x-hint': '64 hexadecimal characters (a 256-bit key)',
        'x-secret': true,
        description:
          'AES-256-GCM key, 64 hex characters; the `SESSION_KEY` environment variable overrides it. Give every replica the same key. Default: a random key per process (sessions do not survive a restart).',
      },
    },
    additionalProperties: false,
  },
  resolve(raw, env) {
    const fromEnv = env.SESSION_KEY;
    if (fromEnv !== undefined && fromEnv !== '') {
      if (!HEX_KEY.test(fromEnv)) {
        throw new ConfigError({
          code: ErrorCode.configEnv,
          path: ['config', 'session', 'key'],
          message: 'the `SESSION_KEY` environment variable must be 64 hexadecimal characters (a 256-bit key)',
        });
      }
      return Buffer.from(fromEnv, 'hex');
    }
    const configured = (raw as { key?: string } | undefined)?.key;
    return configured ? Buffer.from(configured, 'hex') : PROCESS_SESSION_KEY;
  },
});
