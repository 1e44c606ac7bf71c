// The usage error of a command-line word the CLI does not know, with the word meant when it is a likely typo
// (`--verison`, `plugin`, `keys lst`), in the words of the config errors' suggestions.
import { didYouMean } from '../config/did-you-mean.ts';

/**
 * `unknown <what> \`arg\``, plus `; did you mean \`x\`?` for the closest of `known`. A flag's `=value` is not
 * compared; a one-letter flag is only matched in the other case (`-v` for `-V`), as any other letter is one edit
 * from every short flag; a bare word is compared with the commands and with the long flags without their dashes.
 */
export function unknownArgument(arg: string, known: readonly string[], what = 'argument'): string {
  const word = arg.startsWith('--') ? arg.split('=')[0]! : arg;
  const short = /^-[^-]$/.test(word);
  const long = known.filter((k) => k.startsWith('--'));
  let meant: string | undefined;
  if (short) meant = known.find((k) => /^-[^-]$/.test(k) && k.toLowerCase() === word.toLowerCase());
  // `-validate-only` is a long flag with one dash too few.
  else if (word.startsWith('-')) meant = didYouMean(word, long);
  else {
    // A bare word may be a command, or a flag written without its dashes (`help`, `version`).
    const bare = didYouMean(word, [...known.filter((k) => !k.startsWith('-')), ...long.map((k) => k.slice(2))]);
    meant = bare !== undefined && long.includes(`--${bare}`) && !known.includes(bare) ? `--${bare}` : bare;
  }
  return `unknown ${what} \`${arg}\`${meant !== undefined && meant !== arg ? `; did you mean \`${meant}\`?` : ''}`;
}
