import { readText } from './usable-cpus.ts';
import type { ReadText } from './usable-cpus.ts';

/**
 * The process's open-file limit (RLIMIT_NOFILE) as it runs: the soft limit in /proc/self/limits, which Node raises to
 * the hard one when it starts. Undefined where it cannot be read (not Linux) or is unlimited.
 */
export function openFileLimit(read: ReadText = readText): number | undefined {
  const line = read('/proc/self/limits')
    ?.split('\n')
    .find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  const n = Number(soft);
  return soft !== undefined && /^\d+$/.test(soft) && n > 0 ? n : undefined;
}

/**
 * `config.maxConnectionsPerBind` when it is not set (ADR 0143): half the open-file limit, shared by the workers (threads
 * of one process, one descriptor table). Each client connection may hold an upstream connection, so one bind's
 * clients (a flood of sockets that never finish a TLS handshake or a request head, say) can never take the
 * descriptors their own requests, the other binds, logs and files need. 0 (no cap) when the limit is unknown.
 */
export function defaultMaxConnections(workers: number, read: ReadText = readText): number {
  const limit = openFileLimit(read);
  return limit === undefined ? 0 : Math.max(1, Math.floor(limit / 2 / Math.max(1, workers)));
}
