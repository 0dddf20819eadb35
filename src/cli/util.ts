import os from 'node:os';
import path from 'node:path';

/** Prints a one-line error and exits non-zero. */
export function fail(message: string): never {
  process.stderr.write(`strand: ${message}\n`);
  process.exit(1);
}

/** fnn's default base directory. */
export function defaultBaseDir(): string {
  return path.join(os.homedir(), '.fiber-node');
}
