/**
 * Checks a backup destination that came from a request before anything touches the disk, and
 * creates its missing parent directories one level at a time. Recursive `mkdir` under a
 * pseudo-filesystem (`/proc/self/x`) never returns in Node, so every path is refused there up
 * front: it must be absolute, outside `/proc`, `/sys` and `/dev` (also through symlinks), and its
 * nearest existing ancestor must be a writable directory on a real filesystem.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BackupPathError } from './errors.ts';

/** Longest destination accepted (PATH_MAX on Linux). */
export const MAX_BACKUP_PATH = 4096;
const FORBIDDEN_ROOTS = ['/proc', '/sys', '/dev'];
/** statfs magic numbers of kernel pseudo-filesystems (proc, sysfs, cgroup, cgroup2, debugfs, devpts). */
const PSEUDO_FS = new Set([0x9fa0, 0x62656572, 0x27e0eb, 0x63677270, 0x64626720, 0x1cd1]);

const shown = (p: string) => (p.length > 200 ? `${p.slice(0, 200)}…` : p);

function underForbiddenRoot(p: string): string | undefined {
  return FORBIDDEN_ROOTS.find((root) => p === root || p.startsWith(`${root}/`));
}

/** Validates `dest`; returns it normalised. Touches nothing. */
export function checkBackupPath(dest: string): string {
  const fail = (why: string): never => {
    throw new BackupPathError(`InvalidParameter: path ${why}, got '${shown(dest)}'`);
  };
  if (dest.length === 0) fail('must not be empty');
  if (dest.length > MAX_BACKUP_PATH) fail(`must be at most ${MAX_BACKUP_PATH} characters`);
  if (dest.includes('\0')) fail('must not contain a NUL character');
  if (!path.isAbsolute(dest)) fail('must be absolute');
  const normal = path.resolve(dest);
  if (normal === '/') fail('must not be the root directory');
  const root = underForbiddenRoot(normal);
  if (root) fail(`must not be under ${root}`);
  // The nearest existing ancestor decides: resolved through symlinks, on a real filesystem,
  // a directory we may write in.
  let ancestor = path.dirname(normal);
  while (!fs.existsSync(ancestor)) ancestor = path.dirname(ancestor);
  const real = fs.realpathSync(ancestor);
  const realRoot = underForbiddenRoot(real);
  if (realRoot) fail(`must not be under ${realRoot} (through ${shown(ancestor)})`);
  if (!fs.statSync(real).isDirectory()) fail(`has a parent that is not a directory (${shown(ancestor)})`);
  if (PSEUDO_FS.has(fs.statfsSync(real).type)) fail(`must not be on a kernel pseudo-filesystem`);
  try {
    fs.accessSync(real, fs.constants.W_OK);
  } catch {
    fail(`has a parent that is not writable (${shown(ancestor)})`);
  }
  return normal;
}

/** Creates the missing directories of `dir` one level at a time (never a recursive mkdir). */
export function makeDirs(dir: string): void {
  const missing: string[] = [];
  for (let d = dir; !fs.existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) fs.mkdirSync(d);
}
