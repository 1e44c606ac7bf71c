function distance(a: string, b: string): number {
  const prev = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = prev[j]!;
      prev[j] = a[i - 1] === b[j - 1] ? diag : 1 + Math.min(diag, above, prev[j - 1]!);
      diag = above;
    }
  }
  return prev[b.length]!;
}

/** The closest candidate to `word` when it is close enough to be a likely typo, else undefined. */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestScore = Infinity;
  const limit = Math.max(2, Math.floor(word.length / 3));
  for (const candidate of candidates) {
    const c = candidate.toLowerCase();
    if (c === lower) return candidate;
    // The distance is at least the difference in length: a candidate that cannot be close enough, or closer than
    // the best so far, is not measured (a paste of thousands of typos measures each against every key).
    const floor = Math.abs(c.length - lower.length);
    if (floor > limit || floor >= bestScore) continue;
    const score = distance(lower, c);
    if (score < bestScore) {
      bestScore = score;
      best = candidate;
    }
  }
  return bestScore <= limit ? best : undefined;
}
