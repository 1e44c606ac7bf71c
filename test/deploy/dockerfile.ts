// A reader for the parts of Dockerfile syntax the project's Dockerfile uses: instructions, line continuations,
// comments, JSON (exec) and shell forms, stages. Enough to check the file's claims without a container engine.

export interface Instruction {
  readonly keyword: string;
  /** The instruction's text after the keyword, continuations joined. */
  readonly text: string;
  /** Exec-form arguments (`["a", "b"]`), when the text is a JSON array. */
  readonly exec?: string[];
  /** `--from=…`-style flags at the start of the text. */
  readonly flags: Record<string, string>;
  /** Arguments after the flags, split on white space (shell form). */
  readonly args: string[];
}

export interface Stage {
  readonly base: string;
  readonly name?: string;
  readonly instructions: Instruction[];
}

function parseInstruction(line: string): Instruction {
  const [, keyword, rest] = /^(\S+)\s*(.*)$/s.exec(line.trim())!;
  const text = rest.trim();
  let exec: string[] | undefined;
  if (text.startsWith('[')) {
    try {
      exec = JSON.parse(text) as string[];
    } catch {
      exec = undefined;
    }
  }
  const flags: Record<string, string> = {};
  const words = text.split(/\s+/).filter(Boolean);
  while (words[0]?.startsWith('--')) {
    const [k, v = ''] = words.shift()!.slice(2).split('=');
    flags[k] = v;
  }
  return { keyword: keyword.toUpperCase(), text, exec, flags, args: words };
}

/** The stages of a Dockerfile, in order. */
export function parseDockerfile(source: string): Stage[] {
  const lines: string[] = [];
  let pending = '';
  for (const raw of source.split('\n')) {
    if (/^\s*#/.test(raw) && pending === '') continue;
    if (/^\s*#/.test(raw)) continue; // a comment inside a continued instruction
    const continued = raw.endsWith('\\');
    pending += (continued ? raw.slice(0, -1) : raw) + ' ';
    if (!continued) {
      if (pending.trim()) lines.push(pending.trim());
      pending = '';
    }
  }
  const stages: Stage[] = [];
  for (const line of lines) {
    const ins = parseInstruction(line);
    if (ins.keyword === 'FROM') {
      const [base, as, name] = ins.args;
      stages.push({ base, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
    } else if (ins.keyword !== 'ARG' || stages.length > 0) {
      stages.at(-1)?.instructions.push(ins);
    }
  }
  return stages;
}
