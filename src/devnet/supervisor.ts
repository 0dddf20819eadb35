/**
 * Child processes of a devnet: each `strand` child writes its output to a log file, is watched
 * for its "ready" line, and is reported when it dies unexpectedly. Stopping sends SIGTERM and
 * waits (SIGKILL after a grace period).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const STRAND_BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/strand.js');

export interface Child {
  name: string;
  proc: ChildProcess;
  logFile: string;
  /** Set when we asked it to stop: its exit is then expected. */
  stopping: boolean;
}

export interface SpawnOptions {
  name: string;
  args: string[];
  env?: Record<string, string>;
  logFile: string;
  /** Resolves with the match once a line of output matches. */
  ready: RegExp;
  timeoutMs?: number;
}

export async function spawnStrand(
  opts: SpawnOptions,
): Promise<{ child: Child; match: RegExpExecArray; output: string }> {
  fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
  const log = fs.createWriteStream(opts.logFile, { flags: 'a' });
  // Extra flags for node itself, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile a devnet's
  // processes (Node refuses --cpu-prof in NODE_OPTIONS). Benchmarks only: see docs/performance.md.
  const nodeFlags = (process.env.STRAND_DEVNET_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const proc = spawn(process.execPath, [...nodeFlags, STRAND_BIN, ...opts.args], {
    env: { ...process.env, ...opts.env },
    // A channel to the child, unused but for its closing: the child stops when this process
    // ends, whatever ends it (`cli/shutdown.ts`, `onParentGone`). It keeps neither side alive.
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  proc.channel?.unref();
  const child: Child = { name: opts.name, proc, logFile: opts.logFile, stopping: false };
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(
        new Error(
          `${opts.name} did not become ready in ${(opts.timeoutMs ?? 60_000) / 1000} s; see ${opts.logFile}`,
        ),
      );
    }, opts.timeoutMs ?? 60_000);
    let ready = false;
    const onData = (d: Buffer) => {
      log.write(d);
      if (ready) return;
      output += d.toString();
      const m = opts.ready.exec(output);
      if (m) {
        ready = true;
        clearTimeout(timer);
        resolve({ child, match: m, output });
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('exit', (code, signal) => {
      log.end();
      if (!ready) {
        clearTimeout(timer);
        const tail = output.trim().split('\n').slice(-5).join('\n');
        reject(new Error(`${opts.name} exited (${signal ?? code}) before it was ready:\n${tail}`));
      }
    });
  });
}

/** Stops a child with `signal` (SIGTERM: a clean stop; SIGKILL after `graceMs` if it lingers). */
export function stopChild(child: Child, graceMs = 10_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  child.stopping = true;
  const { proc } = child;
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    proc.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    proc.kill(signal);
  });
}
