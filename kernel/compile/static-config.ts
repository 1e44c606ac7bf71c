import { parseDuration } from '../sdk/index.ts';
import type { StaticConfig } from './snapshot.ts';

interface RawStatic {
  adminAddr?: string;
  statsAddr?: string;
  readinessAddr?: string;
  logging?: { level?: StaticConfig['logging']['level']; format?: StaticConfig['logging']['format']; accessLog?: boolean };
  plugins?: string[];
  drainTimeout?: string;
}

/** The `config:` block with defaults (BEHAVIOUR.md DECIDED 16). Environment variables override the addresses. */
export function resolveStaticConfig(raw: RawStatic | undefined, env: NodeJS.ProcessEnv = process.env): StaticConfig {
  const r = raw ?? {};
  return {
    adminAddr: env.ADMIN_ADDR ?? r.adminAddr ?? '127.0.0.1:15000',
    statsAddr: env.STATS_ADDR ?? r.statsAddr ?? '0.0.0.0:15020',
    readinessAddr: env.READINESS_ADDR ?? r.readinessAddr ?? '0.0.0.0:15021',
    logging: { level: r.logging?.level ?? 'info', format: r.logging?.format ?? 'text', accessLog: r.logging?.accessLog ?? true },
    plugins: r.plugins ?? [],
    drainTimeoutMs: r.drainTimeout ? (parseDuration(r.drainTimeout) ?? 10_000) : 10_000,
  };
}
