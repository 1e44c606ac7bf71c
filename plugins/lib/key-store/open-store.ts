import { resolve } from 'node:path';
import type { KeyStore } from './types.ts';

/** Which store, as the `virtualKeys.store` config says. */
export interface StoreSpec {
  sqlite?: { path: string; leases?: boolean };
  redis?: { url: string; prefix?: string; leases?: boolean };
  postgres?: { url: string; tablePrefix?: string };
}

/** Default embedded database file, in the working directory. */
export const DEFAULT_SQLITE_PATH = 'switchyard-keys.db';

/** A stable identity of a store spec (the resource-cache key: an unchanged store survives reloads). */
export function storeIdentity(spec: StoreSpec | undefined, cwd: string): string {
  if (spec?.redis) return `redis:${spec.redis.url}|${spec.redis.prefix ?? ''}${spec.redis.leases === false ? '|exact' : ''}`;
  if (spec?.postgres) return `postgres:${spec.postgres.url}|${spec.postgres.tablePrefix ?? ''}`;
  const path = spec?.sqlite?.path ?? DEFAULT_SQLITE_PATH;
  return `sqlite:${path === ':memory:' ? path : resolve(cwd, path)}${spec?.sqlite?.leases === false ? '|exact' : ''}`;
}

/** Open a store; each client module loads only when its store is configured. */
export async function openStore(spec: StoreSpec | undefined, cwd: string): Promise<KeyStore> {
  if (spec?.redis) {
    const { RedisKeyStore } = await import('./redis-store.ts');
    return RedisKeyStore.open(spec.redis.url, spec.redis.prefix ?? 'switchyard:vk:', undefined, spec.redis.leases === false ? false : {});
  }
  if (spec?.postgres) {
    const { PgKeyStore } = await import('./pg-store.ts');
    return PgKeyStore.open(spec.postgres.url, spec.postgres.tablePrefix ?? 'switchyard_vk_');
  }
  const { SqliteKeyStore } = await import('./sqlite-store.ts');
  const path = spec?.sqlite?.path ?? DEFAULT_SQLITE_PATH;
  // The gateway's store groups the reservations of one event-loop turn into one commit (ADR 0090),
  // and leases budgets far from their limits (ADR 0108) unless the config says `leases: false`.
  return SqliteKeyStore.open(path === ':memory:' ? path : resolve(cwd, path), undefined, { group: true, leases: spec?.sqlite?.leases === false ? undefined : {} });
}
