import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { ConfigIssue, JsonSchema } from '../sdk/index.ts';
import { ConfigLoadError } from './format-issues.ts';
import type { PositionedIssue } from './format-issues.ts';
import { parseConfigText, validateParsed } from './load-config.ts';
import { ConfigValidator } from './validate-config.ts';
import { PASTE_CHECK_ARG } from './paste-check-arg.ts';
import { positionRedacted } from './redact-issues.ts';

/**
 * The schema check of a pasted config (the admin UI's validator, ADR 0172) or of a reloaded one (ADR 0179), on a
 * thread of its own. A 1 MiB paste can hold some 25,000 problems; ajv collects them all (its error lists are joined
 * per `$ref`, which grows with their square) and each is worded and framed: seconds of CPU that, on the gateway's
 * event loop, every data-plane request waited for. Here the thread parses, checks and positions, and answers with
 * the first problems only.
 */

const DATA_KEY = 'switchyardPasteCheck';
/** A check still running after this long is ended and answered as failed (a paste is 1 MiB at most). */
const CHECK_TIMEOUT_MS = 60_000;
/** Heap of the thread: a 1 MiB paste with every problem positioned stays well below. */
const MAX_HEAP_MB = 512;

export interface PasteCheckInput {
  readonly text: string;
  /** What positions name (default: a paste's name) and the environment `${VAR}` expands against (default: none). */
  readonly file?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** The gateway's assembled schema, its plugin keys and slot nouns: the check the gateway's own validator makes. */
  readonly schema: JsonSchema;
  readonly knownKeys: readonly string[];
  readonly slotNouns: Readonly<Record<string, string>>;
  /** How many problems to send back; the rest are only counted. */
  readonly limit: number;
  /**
   * Problems the gateway's compile found in this text, which passed the schema check: the thread positions and
   * frames them (ADR 0179). The positioned parse of a 1 MiB paste and its secrets' redaction took 3 s on the loop.
   */
  readonly issues?: readonly ConfigIssue[];
}

/** The first `limit` problems of the parse and schema check, and how many there were (0: the paste passes both). */
export interface PasteCheckResult {
  readonly errors: readonly PositionedIssue[];
  readonly total: number;
}

/** What the thread does: parse (a paste without the environment, ADR 0124), check against the schema, position. */
function checkPaste(input: PasteCheckInput): PasteCheckResult {
  try {
    const issues = input.issues;
    const parsed = parseConfigText(input.file ?? '(pasted config)', input.text, input.env ?? {}, issues !== undefined);
    const loaded = validateParsed(parsed, new ConfigValidator(input.schema, input.knownKeys, { slotNouns: input.slotNouns, checkSchema: false }));
    // Validated again for the secrets the schema marks: the frames must not show them.
    if (issues) return { errors: positionRedacted(loaded.source, issues.slice(0, input.limit), loaded.secrets, loaded.value), total: issues.length };
    return { errors: [], total: 0 };
  } catch (err) {
    if (!(err instanceof ConfigLoadError)) throw err;
    return { errors: err.issues.slice(0, input.limit), total: err.issues.length };
  }
}

/**
 * Run the check on a new thread, which ends with its answer. It runs this module's file: from the sources or the
 * compiled package this module, from a bundle the bundle, whose entry hands a thread with PASTE_CHECK_ARG here.
 */
export function checkPasteOffThread(input: PasteCheckInput, entry: URL = new URL(import.meta.url)): Promise<PasteCheckResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(entry, {
      workerData: { [DATA_KEY]: input },
      argv: [PASTE_CHECK_ARG],
      // No process environment (a reload's expansion gets its own in the data), and nothing it prints reaches the log.
      env: {},
      stdout: true,
      stderr: true,
      resourceLimits: { maxOldGenerationSizeMb: MAX_HEAP_MB },
    });
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
      void worker.terminate();
    };
    const timer = setTimeout(() => settle(() => reject(new Error(`the check did not finish within ${CHECK_TIMEOUT_MS / 1000} s`))), CHECK_TIMEOUT_MS);
    worker.once('message', (m: { result?: PasteCheckResult; error?: string }) => settle(() => (m.result ? resolve(m.result) : reject(new Error(m.error ?? 'the check failed')))));
    worker.once('error', (err) => settle(() => reject(err)));
    worker.once('exit', (code) => settle(() => reject(new Error(`the check ended (exit code ${code}) without an answer`))));
  });
}

/** On a paste-check thread: check the input this thread was given and post the answer. */
function serve(): void {
  const input = (workerData as Record<string, PasteCheckInput>)[DATA_KEY]!;
  try {
    parentPort!.postMessage({ result: checkPaste(input) });
  } catch (err) {
    parentPort!.postMessage({ error: (err as Error)?.message ?? String(err) });
  }
}

if (!isMainThread && (workerData as Record<string, unknown> | null)?.[DATA_KEY] !== undefined) serve();
