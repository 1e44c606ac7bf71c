// The Node version check of the CLI (bin/switchyard.js, a trimmed distribution's switchyard.mjs). Plain
// JavaScript with no imports, so that it runs on any Node and says what is wrong before anything else loads.

/**
 * `engines.node` of the form `>=X[.Y[.Z]]` against `found` (default: this process). Returns the one line to print
 * when `found` is older, else undefined (also for a range of another form: then nothing is claimed).
 * @param {string | undefined} range
 * @param {string} [found]
 * @returns {string | undefined}
 */
export function nodeVersionProblem(range, found = process.version) {
  const want = /^\s*>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(range ?? '');
  const have = /^v?(\d+)\.(\d+)\.(\d+)/.exec(found);
  if (!want || !have) return undefined;
  for (let i = 1; i <= 3; i++) {
    const w = Number(want[i] ?? 0);
    const h = Number(have[i]);
    if (h > w) return undefined;
    if (h < w) return `needs Node.js ${range.trim()}, found ${found}`;
  }
  return undefined;
}
