// The usage error of a command-line word the CLI does not know, with the word meant when it is a likely typo
// (`--verison`, `plugin`, `keys lst`), in the words of the config errors' suggestions.
import { didYouMean } from '../config/did-you-mean.ts';

/**
 * `unknown <what> \`arg\``, plus `; did you mean \`x\`?` for the closest of `known`. A flag's `=value` is not
 * compared; a one-letter flag is only matched in the other case (`-v` for `-V`), as any other letter is one edit
 * from every short flag.
 */
export function unknownArgument(arg: string, known: readonly string[], what = 'argument'): string {
  const word = arg.startsWith('--') ? arg.split('=')[0]! : arg;
  const short = /^-[^-]$/.test(word);
  // `-validate-only` is a long flag with one dash too few.
  const pool = short ? known.filter((k) => /^-[^-]$/.test(k)) : word.startsWith('-') ? known.filter((k) => k.startsWith('--')) : known.filter((k) => !k.startsWith('-'));
  const meant = short ? pool.find((k) => k.toLowerCase() === word.toLowerCase()) : didYouMean(word, pool);
  return `unknown ${what} \`${arg}\`${meant !== undefined && meant !== arg ? `; did you mean \`${meant}\`?` : ''}`;
}
