import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveWorkerCount } from './static-config.ts';
import { usableCpus } from './usable-cpus.ts';

/** A reader of the given files only. */
const files = (map: Record<string, string>) => (path: string) => map[path];

describe('usableCpus (config.workers: auto)', () => {
  it('caps the CPUs it may run on by a cgroup v2 quota, rounded up', () => {
    assert.equal(usableCpus(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '200000 100000\n' }), 64), 2);
    assert.equal(usableCpus(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '150000 100000\n' }), 64), 2);
    assert.equal(usableCpus(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '50000 100000\n' }), 64), 1);
    assert.equal(usableCpus(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': 'max 100000\n' }), 64), 64);
    // A quota larger than the CPUs it may run on does not raise the count.
    assert.equal(usableCpus(files({ '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/cpu.max': '800000 100000\n' }), 4), 4);
  });

  it("finds the quota on the process's own cgroup or an ancestor (a Kubernetes pod's), the smallest", () => {
    const read = files({
      '/proc/self/cgroup': '0::/kubepods/pod1/ctr\n',
      '/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max': 'max 100000',
      '/sys/fs/cgroup/kubepods/pod1/cpu.max': '300000 100000',
      '/sys/fs/cgroup/kubepods/cpu.max': '1600000 100000',
    });
    assert.equal(usableCpus(read, 32), 3);
  });

  it('reads cgroup v1 quotas (cpu.cfs_quota_us over cpu.cfs_period_us; -1 is none)', () => {
    const v1 = (quota: string) =>
      files({
        '/proc/self/cgroup': '4:memory:/x\n3:cpu,cpuacct:/docker/abc\n',
        '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': quota,
        '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
      });
    assert.equal(usableCpus(v1('250000\n'), 16), 3);
    assert.equal(usableCpus(v1('-1\n'), 16), 16);
  });

  it('uses the CPUs it may run on where no cgroup says more (not Linux, no quota)', () => {
    assert.equal(usableCpus(files({}), 8), 8);
    assert.equal(usableCpus(files({ '/proc/self/cgroup': 'garbage' }), 8), 8);
    assert.equal(usableCpus(files({}), 0), 1);
  });

  it('is what `workers: auto` resolves to (at most 64)', () => {
    assert.equal(resolveWorkerCount({ workers: 'auto' }), Math.min(64, usableCpus()));
  });
});
