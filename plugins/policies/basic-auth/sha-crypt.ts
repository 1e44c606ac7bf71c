import { createHash, hash } from 'node:crypto';

/**
 * SHA-256-crypt (`$5$`) and SHA-512-crypt (`$6$`), written from Ulrich Drepper's specification
 * ("Unix crypt using SHA-256 and SHA-512", 2007/2008) with node:crypto. Verified against the specification's
 * published test vectors and against Debian `htpasswd -2` / `-5` output (sha-crypt.test.ts).
 */

const ITOA64 = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const ROUNDS_DEFAULT = 5000;
export const ROUNDS_MIN = 1000;
export const ROUNDS_MAX = 999_999_999;
const SALT_MAX = 16;

interface Variant {
  readonly id: '5' | '6';
  readonly algorithm: 'sha256' | 'sha512';
  readonly size: number;
  /** Byte triples of the final digest, in output order (the specification's permutation). */
  readonly triples: readonly (readonly [number, number, number])[];
  /** The tail: the bytes left over after the triples, high to low, and how many characters they make. */
  readonly tail: readonly [number, number, number, number];
}

function triples(groups: number, step: number, rotations: readonly (readonly [number, number, number])[]): [number, number, number][] {
  const out: [number, number, number][] = [];
  for (let i = 0; i < groups; i++) {
    const base = [i, i + step, i + 2 * step];
    const r = rotations[i % 3]!;
    out.push([base[r[0]]!, base[r[1]]!, base[r[2]]!]);
  }
  return out;
}

// SHA-256: (0,10,20) (21,1,11) (12,22,2) ... then (-, 31, 30) as 3 characters.
const SHA256: Variant = {
  id: '5',
  algorithm: 'sha256',
  size: 32,
  triples: triples(10, 10, [[0, 1, 2], [2, 0, 1], [1, 2, 0]]),
  tail: [-1, 31, 30, 3],
};
// SHA-512: (0,21,42) (22,43,1) (44,2,23) ... then (-, -, 63) as 2 characters.
const SHA512: Variant = {
  id: '6',
  algorithm: 'sha512',
  size: 64,
  triples: triples(21, 21, [[0, 1, 2], [1, 2, 0], [2, 0, 1]]),
  tail: [-1, -1, 63, 2],
};

function encode24(out: string[], b2: number, b1: number, b0: number, n: number): void {
  let w = (b2 << 16) | (b1 << 8) | b0;
  for (let i = 0; i < n; i++) {
    out.push(ITOA64[w & 0x3f]!);
    w >>>= 6;
  }
}

/** `length` bytes made of `block` repeated (the specification's P and S sequences). */
function repeatTo(block: Buffer, length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  for (let off = 0; off < length; off += block.length) block.copy(out, off, 0, Math.min(block.length, length - off));
  return out;
}

/** The parts of a `$5$` / `$6$` setting or full hash. */
export interface ShaCryptSetting {
  readonly variant: '5' | '6';
  readonly rounds: number;
  /** True when the setting named `rounds=`; the output then names it too. */
  readonly customRounds: boolean;
  readonly salt: string;
}

const SETTING = /^\$([56])\$(?:rounds=(\d{1,10})\$)?([^$]*)/;

/** Parse a setting (`$6$rounds=N$salt` with or without the hash after it). Rounds are clamped as the spec says. */
export function parseShaCryptSetting(setting: string): ShaCryptSetting | undefined {
  const m = SETTING.exec(setting);
  if (!m) return undefined;
  const custom = m[2] !== undefined;
  const rounds = custom ? Math.min(ROUNDS_MAX, Math.max(ROUNDS_MIN, Number(m[2]))) : ROUNDS_DEFAULT;
  return { variant: m[1] as '5' | '6', rounds, customRounds: custom, salt: m[3]!.slice(0, SALT_MAX) };
}

interface RoundState {
  readonly v: Variant;
  readonly parsed: ShaCryptSetting;
  readonly Pseq: Buffer;
  readonly Sseq: Buffer;
  readonly buf: Buffer;
  C: Buffer;
  i: number;
}

/** Everything before the rounds: digests B, A, DP, DS (the specification's steps 1-20). */
function prepare(password: Buffer | string, setting: string): RoundState | undefined {
  const parsed = parseShaCryptSetting(setting);
  if (!parsed) return undefined;
  const v = parsed.variant === '5' ? SHA256 : SHA512;
  const P = typeof password === 'string' ? Buffer.from(password, 'utf8') : password;
  const S = Buffer.from(parsed.salt, 'utf8');
  const H = () => createHash(v.algorithm);

  // Digest B = H(P S P).
  const B = H().update(P).update(S).update(P).digest();
  // Digest A = H(P S, B repeated to |P|, then for each bit of |P| from the lowest: 1 -> B, 0 -> P).
  const a = H().update(P).update(S);
  let cnt = P.length;
  for (; cnt > v.size; cnt -= v.size) a.update(B);
  a.update(B.subarray(0, cnt));
  for (cnt = P.length; cnt > 0; cnt >>= 1) a.update(cnt & 1 ? B : P);
  const A = a.digest();
  // DP = H(P repeated |P| times); the P sequence is DP repeated to |P| bytes.
  const dp = H();
  for (let i = 0; i < P.length; i++) dp.update(P);
  const Pseq = repeatTo(dp.digest(), P.length);
  // DS = H(S repeated 16 + A[0] times); the S sequence is DS repeated to |S| bytes.
  const ds = H();
  for (let i = 0; i < 16 + A[0]!; i++) ds.update(S);
  const Sseq = repeatTo(ds.digest(), S.length);
  // The rounds dominate the cost: each builds its input in one reused buffer and hashes it one-shot.
  const buf = Buffer.allocUnsafe(2 * v.size + 2 * P.length + S.length);
  return { v, parsed, Pseq, Sseq, buf, C: A, i: 0 };
}

/** Run up to `max` of the remaining rounds; true when all are done. */
function runRounds(st: RoundState, max: number): boolean {
  const { v, Pseq, Sseq, buf } = st;
  const end = Math.min(st.parsed.rounds, st.i + max);
  let C = st.C;
  for (let i = st.i; i < end; i++) {
    let off = (i & 1 ? Pseq : C).copy(buf, 0);
    if (i % 3 !== 0) off += Sseq.copy(buf, off);
    if (i % 7 !== 0) off += Pseq.copy(buf, off);
    off += (i & 1 ? C : Pseq).copy(buf, off);
    C = hash(v.algorithm, buf.subarray(0, off), 'buffer') as unknown as Buffer;
  }
  st.C = C;
  st.i = end;
  return end === st.parsed.rounds;
}

function finish(st: RoundState): string {
  const { v, parsed, C } = st;
  const out: string[] = [];
  for (const [x, y, z] of v.triples) encode24(out, C[x]!, C[y]!, C[z]!, 4);
  const [t2, t1, t0, n] = v.tail;
  encode24(out, t2 < 0 ? 0 : C[t2]!, t1 < 0 ? 0 : C[t1]!, C[t0]!, n);
  const rounds = parsed.customRounds ? `rounds=${parsed.rounds}$` : '';
  return `$${v.id}$${rounds}${parsed.salt}$${out.join('')}`;
}

/**
 * Compute the full crypt string for `password` under `setting` (`$5$[rounds=N$]salt[$...]`). Returns undefined
 * when the setting is not a SHA-crypt setting.
 */
export function shaCrypt(password: Buffer | string, setting: string): string | undefined {
  const st = prepare(password, setting);
  if (!st) return undefined;
  runRounds(st, Number.POSITIVE_INFINITY);
  return finish(st);
}

/** Rounds run between yields to the event loop by `shaCryptAsync` (about 2 ms of work). */
const ROUNDS_PER_SLICE = 1000;

/**
 * `shaCrypt` that yields to the event loop every `ROUNDS_PER_SLICE` rounds, so a verification (5000 rounds, a
 * few milliseconds; far more with a large `rounds=`) never stalls other requests.
 */
export async function shaCryptAsync(password: Buffer | string, setting: string): Promise<string | undefined> {
  const st = prepare(password, setting);
  if (!st) return undefined;
  while (!runRounds(st, ROUNDS_PER_SLICE)) await new Promise<void>((resolve) => setImmediate(resolve));
  return finish(st);
}
