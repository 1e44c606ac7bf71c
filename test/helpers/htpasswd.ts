// Whether Apache's `htpasswd` tool runs here: the basic-auth tests check their hashes against it when it does.
import { execFileSync } from 'node:child_process';

function hasHtpasswd(): boolean {
  try {
    execFileSync('htpasswd', ['-nb', 'u', 'p'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const HTPASSWD = hasHtpasswd();
