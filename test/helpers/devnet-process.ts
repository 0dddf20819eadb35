/**
 * A `strand devnet` process for tests: started on its own ports in a temp directory, resolved once
 * it prints that it is up (with its devnet.json), stopped with SIGINT as a user's Ctrl-C.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { DevnetDescription } from '../../src/devnet/devnet.ts';
import { STRAND_BIN, tempDir } from './node-process.ts';
import { devnetBasePort } from './ports.ts';

export interface DevnetProcess {
  dir: string;
  description: DevnetDescription;
  output: () => string;
  stop(): Promise<void>;
}

/** `topology`: YAML text of a topology file (nodes, peers, channels). */
export function startDevnetProcess(topology: string): Promise<DevnetProcess> {
  const dir = path.join(tempDir('strand-devnet-'), 'net');
  fs.mkdirSync(dir, { recursive: true });
  const topologyFile = path.join(dir, '..', 'topology.yml');
  fs.writeFileSync(topologyFile, topology);
  const args = ['devnet', '-d', dir, '--topology', topologyFile, '--base-port', String(devnetBasePort())];
  const proc: ChildProcess = spawn(process.execPath, [STRAND_BIN, ...args, '--block-interval', '200']);
  let out = '';
  proc.stdout!.on('data', (d) => {
    out += d;
  });
  proc.stderr!.on('data', (d) => {
    out += d;
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGINT');
    });
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (!out.includes('Ctrl-C stops it')) return;
      clearInterval(timer);
      const description = JSON.parse(fs.readFileSync(path.join(dir, 'devnet.json'), 'utf8'));
      resolve({ dir, description, output: () => out, stop });
    }, 100);
    proc.once('exit', (code) => {
      clearInterval(timer);
      reject(new Error(`devnet exited with ${code}:\n${out}`));
    });
  });
}
