// A real PostgreSQL server for a test: initdb in a temp dir, `postgres` on a free loopback port, stopped (by its
// own pid) and removed after. As root (CI), both run as the `postgres` user, since the server refuses root.
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { stopChild, waitForPort } from './processes.ts';
import { freePort } from './ports.ts';
import { which } from './which.ts';

const PG_DIRS = ['17', '16', '15', '14', '13'].map((v) => `/usr/lib/postgresql/${v}/bin`);

/** The server binaries, or why the suite must skip. */
export function locatePostgres(): { initdb: string; postgres: string } | { skip: string } {
  const initdb = which('initdb', PG_DIRS);
  const postgres = which('postgres', PG_DIRS);
  if (!initdb || !postgres) return { skip: 'PostgreSQL is not installed (Debian: apt-get install -y postgresql)' };
  return { initdb, postgres };
}

export interface RunningPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, loopback only). */
  readonly url: string;
  stop(): Promise<void>;
}

/** The uid/gid to run as: `postgres` when we are root, else ourselves. */
function runAs(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  const id = (flag: string): number => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  return { uid: id('-u'), gid: id('-g') };
}

export async function startPostgres(found: { initdb: string; postgres: string }): Promise<RunningPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-pg-'));
  const as = runAs();
  if (as) chownSync(dir, as.uid, as.gid);
  // setpriv execs the program itself, so the pid we hold (and signal) is the server's.
  const command = (bin: string, args: string[]): [string, string[]] =>
    as ? ['setpriv', [`--reuid=${as.uid}`, `--regid=${as.gid}`, '--clear-groups', '--', bin, ...args]] : [bin, args];
  const data = join(dir, 'data');
  const [initFile, initArgs] = command(found.initdb, ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  execFileSync(initFile, initArgs, { stdio: 'ignore', timeout: 60_000 });
  const port = await freePort();
  const [file, args] = command(found.postgres, ['-D', data, '-p', String(port), '-h', '127.0.0.1', '-k', dir, '-F', '-c', 'max_connections=50']);
  const server: ChildProcess = spawn(file, args, { stdio: 'ignore' });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  try {
    await waitForPort(port, Date.now() + 30_000);
    // The port opens before the server takes connections ("the database system is starting up").
    for (const until = Date.now() + 30_000; ; await sleep(50)) {
      const client = new pg.Client({ connectionString: url });
      try {
        await client.connect();
        await client.query('SELECT 1');
        break;
      } catch (err) {
        if (Date.now() > until) throw err;
      } finally {
        await client.end().catch(() => undefined);
      }
    }
  } catch (err) {
    await stopChild(server);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    async stop() {
      await stopChild(server);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
