import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/codec/errors.ts';
import { checkBackupPath, makeDirs } from '../../src/store/backup-path.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-backup-path-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function refusal(p: string): string {
  try {
    checkBackupPath(p);
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return (e as Error).message;
  }
  throw new Error(`'${p}' was accepted`);
}

describe('backup destination check', () => {
  it('refuses pseudo-filesystems, relative and odd paths with the field named', () => {
    expect(refusal('/proc/self/x')).toBe(
      "InvalidParameter: path must not be under /proc, got '/proc/self/x'",
    );
    expect(refusal('/sys/kernel/x')).toContain('must not be under /sys');
    expect(refusal('/dev/shm/x')).toContain('must not be under /dev');
    expect(refusal('/tmp/../proc/1/x')).toContain('must not be under /proc');
    expect(refusal('relative/dir')).toContain('path must be absolute');
    expect(refusal('')).toContain('must not be empty');
    expect(refusal('/')).toContain('root directory');
    expect(refusal('/tmp/a\0b')).toContain('NUL');
  });

  it('follows symlinks of the existing ancestor', () => {
    const link = path.join(dir, 'to-proc');
    fs.symlinkSync('/proc/self', link);
    expect(refusal(path.join(link, 'x', 'y'))).toContain('must not be under /proc');
  });

  it('needs a directory for a parent', () => {
    const file = path.join(dir, 'file');
    fs.writeFileSync(file, '');
    expect(refusal(path.join(file, 'x'))).toContain('not a directory');
  });

  it('echoes at most 200 characters of the path', () => {
    const long = `relative/${'a'.repeat(3000)}`;
    expect(refusal(long).length).toBeLessThan(300);
  });

  it('accepts a fresh path whose parents do not exist yet, and creates them level by level', () => {
    const dest = path.join(dir, 'a', 'b', 'c');
    expect(checkBackupPath(`${dest}/`)).toBe(dest);
    makeDirs(dest);
    expect(fs.statSync(dest).isDirectory()).toBe(true);
  });
});
