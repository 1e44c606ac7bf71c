import { readConfigFile } from '../config/load-config.ts';
import type { ConfigInput } from './config-loader.ts';

/** What a config is called in log lines: its file, or the name given with inline text. */
export function configName(c: ConfigInput): string {
  return 'file' in c ? c.file : c.name;
}

/** The config text: the file read now (bounded, never blocking; ConfigLoadError when unreadable) or the inline text. */
export function readConfigInput(c: ConfigInput): Promise<string> {
  return 'file' in c ? readConfigFile(c.file) : Promise.resolve(c.text);
}
