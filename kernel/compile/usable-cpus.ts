import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Reads a small file's text; undefined when it cannot. */
export type ReadText = (path: string) => string | undefined;

export const readText: ReadText = (path) => {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return undefined;
  }
};

/**
 * CPUs this process may use (`config.workers: auto`): those it may run on (`os.availableParallelism()`, the
 * affinity mask), capped by the CPU quota of its cgroup or an ancestor's, rounded up. A container's `--cpus` or a
 * Kubernetes `limits.cpu` is such a quota: without the cap a pod limited to 2 CPUs on a 64-core node ran 64
 * workers (about 50 MiB each) and was throttled, or killed for memory.
 */
export function usableCpus(read: ReadText = readText, cpus: number = availableParallelism()): number {
  const quota = cpuQuota(read);
  return Math.max(1, quota === undefined ? cpus : Math.min(cpus, Math.ceil(quota)));
}

/** The smallest CPU quota (in CPUs) on the way from this process's cgroups to their roots, cgroup v2 and v1. */
function cpuQuota(read: ReadText): number | undefined {
  const groups = read('/proc/self/cgroup');
  if (groups === undefined) return undefined;
  let lowest: number | undefined;
  const take = (q: number | undefined): void => {
    if (q !== undefined && q > 0 && (lowest === undefined || q < lowest)) lowest = q;
  };
  for (const line of groups.split('\n')) {
    // `hierarchy-id:controllers:path`; v2 is `0::path`.
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    const path = line.slice(second + 1).trim();
    if (controllers === '') {
      for (const dir of ancestors('/sys/fs/cgroup', path)) take(v2Quota(read(`${dir}/cpu.max`)));
    } else if (controllers.split(',').includes('cpu')) {
      // Mounted by its controller list (`cpu,cpuacct`) or by `cpu`; a container sees its own cgroup at the root.
      for (const mount of new Set([`/sys/fs/cgroup/${controllers}`, '/sys/fs/cgroup/cpu'])) {
        for (const dir of ancestors(mount, path)) take(v1Quota(read(`${dir}/cpu.cfs_quota_us`), read(`${dir}/cpu.cfs_period_us`)));
      }
    }
  }
  return lowest;
}

/** `root/path`, then each of its parents up to `root`. */
function ancestors(root: string, path: string): string[] {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.' && p !== '..');
  const out: string[] = [];
  for (let n = parts.length; n >= 0; n--) out.push([root, ...parts.slice(0, n)].join('/'));
  return out;
}

/** `cpu.max`: `max 100000` (no quota) or `<quota> <period>` in microseconds. */
function v2Quota(text: string | undefined): number | undefined {
  const [quota, period] = (text ?? '').trim().split(/\s+/);
  const q = Number(quota);
  const p = Number(period);
  return quota !== 'max' && q > 0 && p > 0 ? q / p : undefined;
}

/** `cpu.cfs_quota_us` (-1: no quota) over `cpu.cfs_period_us`. */
function v1Quota(quota: string | undefined, period: string | undefined): number | undefined {
  const q = Number(quota?.trim());
  const p = Number(period?.trim());
  return q > 0 && p > 0 ? q / p : undefined;
}
