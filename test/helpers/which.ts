import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** An executable on PATH or in one of `extra` (where a package or `go install` puts it off PATH). */
export function which(name: string, extra: string[] = []): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), ...extra]) {
    if (!dir) continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}
