// The container image's recipe, checked without a container engine: the stages name files that exist and are not
// excluded from the build context, the runtime stage carries no sources or dev tooling, runs as a non-root user,
// exposes the ports its config listens on, health-checks readiness and stops on SIGTERM. The image's command line
// itself is run against the packed package by test/install/.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { NODE_ENV_DEFAULTS, NODE_FLAGS } from '../../bin/node-flags.js';
import { parseDockerfile } from './dockerfile.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const stages = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const final = stages.at(-1)!;
const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

function instructions(keyword: string): string[] {
  return final.instructions.filter((i) => i.keyword === keyword).map((i) => i.text);
}

describe('Dockerfile', () => {
  it('is multi-stage on a slim Node 24 runtime', () => {
    assert.ok(stages.length >= 2, 'a build stage and a runtime stage');
    for (const stage of stages) assert.match(stage.base, /^node:24[-.\w]*slim$/, `${stage.base} is a slim Node 24 image`);
  });

  it('copies only files that exist and that .dockerignore lets into the build context', () => {
    const names = new Set(stages.map((s) => s.name).filter(Boolean));
    for (const stage of stages) {
      for (const copy of stage.instructions.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD')) {
        if (copy.flags.from) {
          assert.ok(names.has(copy.flags.from), `COPY --from=${copy.flags.from} names a stage`);
          continue;
        }
        for (const source of copy.args.slice(0, -1)) {
          if (source === '.') continue;
          assert.ok(existsSync(join(ROOT, source)), `${source} exists`);
          assert.ok(!ignored.some((pattern) => source === pattern || source.startsWith(`${pattern}/`)), `${source} is not in .dockerignore`);
        }
      }
    }
  });

  it('.dockerignore keeps dependencies, VCS data and build output out of the context', () => {
    for (const entry of ['.git', 'node_modules', 'dist']) assert.ok(ignored.includes(entry), `${entry} ignored`);
  });

  it('the runtime stage has no sources, npm cache or dev dependencies', () => {
    const copies = final.instructions.filter((i) => i.keyword === 'COPY');
    assert.ok(copies.every((c) => c.args[0] !== '.'), 'no COPY . . in the runtime stage');
    assert.ok(!final.instructions.some((i) => i.keyword === 'RUN' && /npm (ci|install)/.test(i.text)), 'nothing installed in the runtime stage');
    const installer = stages.find((s) => s.instructions.some((i) => i.keyword === 'RUN' && /npm install/.test(i.text)));
    assert.ok(installer, 'a stage installs the package');
    assert.match(installer.instructions.find((i) => /npm install/.test(i.text))!.text, /--omit=dev/);
    assert.match(installer.instructions.find((i) => /npm install/.test(i.text))!.text, /switchyard\.tgz/, 'the packed package is what gets installed');
  });

  it('runs as a non-root user', () => {
    const [user] = instructions('USER');
    assert.ok(user && !/^(root|0)(:|$)/.test(user), `USER ${user}`);
  });

  it('exposes the ports its default config listens on and health-checks readiness', () => {
    const config = parse(readFileSync(join(ROOT, 'deploy/container/config.yaml'), 'utf8')) as {
      config: Record<string, string>;
      binds: { port: number }[];
    };
    const exposed = instructions('EXPOSE').flatMap((t) => t.split(/\s+/)).map(Number);
    const port = (addr: string) => Number(addr.split(':').pop());
    for (const p of [...config.binds.map((b) => b.port), port(config.config.statsAddr), port(config.config.readinessAddr)]) {
      assert.ok(exposed.includes(p), `port ${p} exposed`);
    }
    assert.ok(!exposed.includes(port(config.config.adminAddr)), 'the admin port is not exposed');
    assert.ok(final.instructions.some((i) => i.keyword === 'COPY' && i.args.at(-1) === '/etc/switchyard/config.yaml'));
    const [health] = instructions('HEALTHCHECK');
    assert.ok(health, 'a HEALTHCHECK');
    assert.ok(health.includes(`:${port(config.config.readinessAddr)}/healthz/ready`), health);
  });

  it('stops on SIGTERM (the gateway drains on it) and starts the installed CLI on the mounted config', () => {
    assert.deepEqual(instructions('STOPSIGNAL'), ['SIGTERM']);
    const entry = final.instructions.find((i) => i.keyword === 'ENTRYPOINT')?.exec;
    const cmd = final.instructions.find((i) => i.keyword === 'CMD')?.exec;
    // bin/node-flags.js on node's command line: the CLI then does not re-execute itself to apply them (ADR 0057).
    // tini as PID 1 reaps orphans (a stdio child's lifeline watcher, ADR 0056) and passes the signal on.
    assert.deepEqual(entry, ['/usr/bin/tini', '--', 'node', ...NODE_FLAGS, '/opt/switchyard/node_modules/switchyard/bin/switchyard.js']);
    assert.ok(final.instructions.some((i) => i.keyword === 'RUN' && /apt-get install .*\btini\b/.test(i.text)), 'the runtime stage installs tini');
    assert.deepEqual(cmd, ['-f', '/etc/switchyard/config.yaml']);
  });

  it('sets the environment the CLI would set on its re-execution (MALLOC_ARENA_MAX, ADR 0041), which it skips here', () => {
    // `ENV NAME=value` lines; `docker run -e NAME=…` still overrides them, as a user's value should.
    const env = new Map(instructions('ENV').flatMap((t) => t.split(/\s+/).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const)));
    for (const [name, value] of Object.entries(NODE_ENV_DEFAULTS)) assert.equal(env.get(name), value, `ENV ${name}=${value}`);
  });
});
