// The process table as /proc shows it (Linux): which processes descend from a pid, and whether one is really gone
// (a zombie still answers `kill(pid, 0)`).
import { readFileSync, readdirSync } from 'node:fs';

interface Stat {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  readonly state: string;
}

function stat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // `pid (comm) state ppid pgrp ...`; comm may contain spaces and parentheses: split after the last `)`.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pid, state: rest[0]!, ppid: Number(rest[1]), pgid: Number(rest[2]) };
}

function all(): Stat[] {
  const out: Stat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(Number(name));
    if (s) out.push(s);
  }
  return out;
}

/** Every live process below `root` (children, grandchildren, …), not counting zombies. */
export function descendants(root: number): number[] {
  const table = all();
  const found = new Set<number>([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const s of table) {
      if (!found.has(s.pid) && found.has(s.ppid)) {
        found.add(s.pid);
        grew = true;
      }
    }
  }
  found.delete(root);
  return table.filter((s) => found.has(s.pid) && s.state !== 'Z').map((s) => s.pid);
}

/** The state letter /proc shows (`S`, `R`, `Z` for a zombie nobody reaped, …), or undefined once it is gone. */
export function processState(pid: number): string | undefined {
  return stat(pid)?.state;
}

/** Still running (not exited, not a zombie waiting to be reaped). */
export function running(pid: number): boolean {
  const s = stat(pid);
  return s !== undefined && s.state !== 'Z';
}

/** The command line of a process ('' when gone). */
export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}
