import { isUtf8 } from 'node:buffer';
import { celLib } from './cel-lib.ts';
import { forEachNode } from './cel-ast-walk.ts';
import { rfc3339ForDate } from './cel-timestamp.ts';
import type { EngineNode } from './cel-ast-walk.ts';

/**
 * CEL's `int` is 64-bit and an overflow is an evaluation error, as is `string()` of bytes that are not UTF-8 and a
 * timestamp or duration outside CEL's range (CEL spec, "Overflow" and "Conversions"; cel-go does the same). cel-js 8
 * checks `+`, `-` and `*` of ints but not unary minus, `/`, `%` or `int(double)`, which return integers past 64
 * bits (`-(-9223372036854775808)`, `int(1e300)`), decodes bytes with U+FFFD for what is not UTF-8, and lets
 * timestamps pass the year 9999 and durations 10,000 years. Its overload declarations are frozen, so the checks are made on
 * the checked tree instead, as the budget's are (cel-budget.ts, docs/adr/0160): each node of these operators and
 * calls has its resolved `handle`, which is wrapped. Static and `dyn` operands go through the same `handle`.
 */
const MIN_INT = -(2n ** 63n);
const MAX_INT = 2n ** 63n - 1n;
const TWO_TO_63 = 2 ** 63;
/** CEL's timestamps: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z, in ms. */
const MIN_TIME_MS = -62_135_596_800_000;
const MAX_TIME_MS = 253_402_300_799_999;
/** CEL's durations: at most 315,576,000,000 s (10,000 years) either way. */
const MAX_DURATION_S = 315_576_000_000n;

type Handle = (...args: unknown[]) => unknown;

function failure(node: EngineNode, code: string, message: string): Error {
  const { EvaluationError } = celLib();
  return new EvaluationError({ code, message, node: node as never });
}

function wrapHandle(node: EngineNode, before: (args: unknown[]) => void, after?: (result: unknown) => void): void {
  const handle = node.handle;
  if (typeof handle !== 'function') return;
  const wrapped: Handle = function (this: unknown, ...args: unknown[]): unknown {
    before(args);
    const result = handle.apply(this, args);
    after?.(result);
    return result;
  };
  node.handle = wrapped;
}

function outOfRange(node: EngineNode): (result: unknown) => void {
  return (result) => {
    if (typeof result === 'bigint' && (result > MAX_INT || result < MIN_INT)) throw failure(node, 'numeric_overflow', 'integer overflow');
  };
}

/** A timestamp or duration result outside CEL's range (cel-js's Duration has bigint `seconds`). */
function outOfTimeRange(node: EngineNode): (result: unknown) => void {
  return (result) => {
    if (result instanceof Date) {
      const ms = result.getTime();
      if (!(ms >= MIN_TIME_MS && ms <= MAX_TIME_MS)) throw failure(node, 'timestamp_overflow', 'timestamp overflow: outside 0001-01-01 to 9999-12-31');
      return;
    }
    const seconds = (result as { seconds?: unknown } | null)?.seconds;
    if (typeof seconds === 'bigint' && (seconds > MAX_DURATION_S || seconds < -MAX_DURATION_S)) throw failure(node, 'duration_overflow', 'duration overflow: longer than 10000 years');
  };
}

const nothing = (): void => {};

/** The first argument of a call's `handle`: `call` passes the argument values, `rcall` the receiver and then them. */
function firstValue(args: unknown[]): unknown {
  return Array.isArray(args[0]) ? args[0][0] : undefined;
}

/** Make the operators and conversions of a checked cel-js AST fail where CEL says they overflow. */
export function checkOverflow(root: unknown): void {
  forEachNode(root, (node) => {
    const args = node.args;
    switch (node.op) {
      case '+':
      case '-':
        // Ints are checked by cel-js itself; timestamps and durations are not.
        wrapHandle(node, nothing, outOfTimeRange(node));
        return;
      case '-_':
      case '/':
        wrapHandle(node, nothing, outOfRange(node));
        return;
      case '%':
        // -2^63 % -1 is 0 in two's complement arithmetic, but the division behind it overflows (cel-go agrees).
        wrapHandle(node, ([a, b]) => {
          if (a === MIN_INT && b === -1n) throw failure(node, 'numeric_overflow', 'integer overflow');
        });
        return;
      case 'call':
      case 'rcall': {
        if (!Array.isArray(args)) return;
        const [name] = args as unknown[];
        const argCount = node.op === 'call' ? (args[1] as unknown[]).length : (args[2] as unknown[]).length + 1;
        if (name === 'int' && argCount === 1) {
          // cel-go's bounds: a double must be strictly inside (-2^63, 2^63).
          wrapHandle(node, (values) => {
            const v = firstValue(values);
            if (typeof v === 'number' && !(v > -TWO_TO_63 && v < TWO_TO_63)) throw failure(node, 'numeric_overflow', 'int() type error: integer overflow');
          }, outOfRange(node));
        } else if (name === 'timestamp' && node.op === 'call' && argCount === 1) {
          wrapHandle(node, (values) => {
            const v = firstValue(values);
            if (typeof v !== 'string') return;
            const exact = rfc3339ForDate(v);
            if (exact === undefined) throw failure(node, 'invalid_timestamp', 'timestamp() requires an RFC 3339 timestamp (2006-01-02T15:04:05.999999999Z or with +07:00)');
            (values[0] as unknown[])[0] = exact;
          }, outOfTimeRange(node));
        } else if (name === 'duration' && node.op === 'call' && argCount === 1) {
          wrapHandle(node, nothing, outOfTimeRange(node));
        } else if (name === 'string' && argCount === 1) {
          wrapHandle(node, (values) => {
            const v = firstValue(values);
            if (v instanceof Uint8Array && !isUtf8(v)) throw failure(node, 'invalid_utf8', 'string() type error: bytes are not valid UTF-8');
          });
        }
        return;
      }
    }
  });
}

/**
 * An int literal past 64 bits (`9223372036854775808`, `0x8000000000000000`): CEL refuses it when parsing; cel-js
 * reads it as is. Only `-9223372036854775808` may write 2^63: CEL's INT_LIT takes the sign (cel-go's grammar, a
 * `-` token then the digits, so blanks between them too), while `-(9223372036854775808)` negates a literal that
 * is out of range already. The problem and its place, for a config error.
 */
export function findIntegerLiteralProblem(root: unknown, source: string): { message: string; offset: number } | undefined {
  const negated = new Set<unknown>();
  let problem: { message: string; offset: number } | undefined;
  const startOf = (node: unknown): number => (node as { start?: number }).start ?? 0;
  forEachNode(root, (node) => {
    const literal = node.args as { args?: unknown } | undefined;
    if (node.op !== '-_' || typeof literal?.args !== 'bigint') return;
    // The parentheses of `-(...)` leave no node: the text between the sign and the digits tells.
    if (/^\s*$/.test(source.slice(startOf(node) + 1, startOf(literal)))) negated.add(literal);
  });
  forEachNode(root, (node) => {
    if (problem || node.op !== 'value' || typeof node.args !== 'bigint') return;
    const value = node.args;
    if (value <= MAX_INT || (value === MAX_INT + 1n && negated.has(node))) return;
    const offset = startOf(node);
    problem = { message: `the integer literal ${value} is out of range: CEL ints are 64-bit (at most ${MAX_INT})`, offset };
  });
  return problem;
}

