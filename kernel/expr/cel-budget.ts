import { EXPRESSION_STOPPED } from '../sdk/expr.ts';
import { forEachNode } from './cel-ast-walk.ts';
import type { EngineNode } from './cel-ast-walk.ts';

/**
 * The run-time budget of one CEL evaluation (docs/adr/0145). Expressions are the operator's, but the lists they
 * iterate can be the client's (a header split on `,`, a JWT claim, an LLM request body): two nested macros over a
 * 6000-item header ran 2.4 s on the event loop. Each comprehension (`all`, `exists`, `map`, `filter`, `mapValues`,
 * ...) spends its list's length before it starts, so no more than MAX_STEPS items are ever visited; each step also
 * counts towards a wall-time check (every TIME_CHECK steps, for steps that are costly themselves). Once spent, the
 * budget stays spent: every later step fails at once, so `exists`, which keeps looking past a failing item as CEL
 * requires, cannot go on working. The evaluation fails with an error named EXPRESSION_STOPPED, which policies
 * treat as any other error except that a deny rule denies (rule-set.ts). Evaluation is synchronous, so one budget
 * per process is enough: each evaluation starts it afresh.
 */
export const MAX_STEPS = 1_000_000;
export const MAX_MS = 100;
const TIME_CHECK = 64;

let steps = 0;
let ticks = 0;
let startedAt = 0;
let spent: string | undefined;

/** Start the budget of an evaluation. */
export function startBudget(): void {
  steps = 0;
  ticks = 0;
  startedAt = 0;
  spent = undefined;
}

function stopped(why: string): Error {
  const err = new Error(why);
  err.name = EXPRESSION_STOPPED;
  return err;
}

function stop(why: string): never {
  spent = why;
  throw stopped(why);
}

/** Spend `n` items (a comprehension about to visit its list); throws past MAX_STEPS. */
export function spendItems(n: number): void {
  if (spent !== undefined) throw stopped(spent);
  if (startedAt === 0) startedAt = performance.now();
  steps += n;
  if (steps > MAX_STEPS) stop(`expression stopped: its macros would visit more than ${MAX_STEPS} items (docs/cel.md#limits)`);
}

/** One step of a comprehension; throws once the budget is spent or the evaluation has run past MAX_MS. */
export function spendStep(): void {
  if (spent !== undefined) throw stopped(spent);
  if (++ticks % TIME_CHECK !== 0) return;
  if (performance.now() - startedAt > MAX_MS) stop(`expression stopped: its macros ran for more than ${MAX_MS} ms (docs/cel.md#limits)`);
}

/** How many items a comprehension visits: a list's length, a map's size. */
export function itemCount(collection: unknown): number {
  if (Array.isArray(collection)) return collection.length;
  if (collection instanceof Map || collection instanceof Set) return collection.size;
  return collection !== null && typeof collection === 'object' ? Object.keys(collection).length : 0;
}

/** A node that runs `run` in place of `node` (already type-checked: nothing reads its other fields afterwards). */
function metered(node: EngineNode, run: (ev: unknown, ctx: unknown) => unknown): EngineNode {
  return { op: node.op, args: node, maybeAsync: false, evaluate: (ev: unknown, _ast: unknown, ctx: unknown) => run(ev, ctx) } as unknown as EngineNode;
}

/**
 * Make every comprehension of a checked cel-js AST spend a step per iteration. cel-js expands the macros into
 * `comprehension` nodes (a node's `meta.alternate`) whose `args.step` runs once per item: the step is replaced by
 * a node that spends a step, then runs it, and the list (`args.iterable`) by one that spends its length.
 */
export function meterComprehensions(root: unknown): void {
  forEachNode(root, (node) => {
    if (node.op !== 'comprehension') return;
    const args = node.args as { step: EngineNode; iterable: EngineNode };
    const { step, iterable } = args;
    args.iterable = metered(iterable, (ev, ctx) => {
      const items = iterable.evaluate(ev, iterable, ctx);
      spendItems(itemCount(items));
      return items;
    });
    args.step = metered(step, (ev, ctx) => {
      spendStep();
      return step.evaluate(ev, step, ctx);
    });
  });
}
