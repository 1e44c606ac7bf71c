/** See check-node.js: the one line to print when `found` is older than the `>=X.Y[.Z]` range, else undefined. */
export function nodeVersionProblem(range: string | undefined, found?: string): string | undefined;
