/**
 * `strand devnet` run as a user runs it, for the process tests: started in `dir` on `basePort`,
 * ready once it prints how to stop it, and stopped with SIGINT (Ctrl-C).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { STRAND_BIN } from '../helpers/node-process.ts';

export interface RunningDevnetCli {
  proc: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  out: () => string;
}

export function startDevnetCli(
  dir: string,
  basePort: number,
  extra: string[] = [],
): Promise<RunningDevnetCli> {
  const p = spawn(process.execPath, [
    STRAND_BIN,
    'devnet',
    '-d',
    dir,
    '--base-port',
    String(basePort),
    '--block-interval',
    '200',
    ...extra,
  ]);
  let out = '';
  p.stdout.on('data', (d) => {
    out += d;
  });
  p.stderr.on('data', (d) => {
    out += d;
  });
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes('Ctrl-C stops it')) {
        clearInterval(timer);
        resolve({ proc: p, out: () => out });
      }
    }, 100);
    p.once('exit', (code) => {
      clearInterval(timer);
      reject(new Error(`devnet exited with ${code}:\n${out}`));
    });
  });
}

/** SIGINT, as Ctrl-C: resolves with the exit code (at once if it already exited). */
export function interrupt(p: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (p.exitCode !== null) return resolve(p.exitCode);
    p.once('exit', (code) => resolve(code));
    p.kill('SIGINT');
  });
}
