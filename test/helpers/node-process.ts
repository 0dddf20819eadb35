/**
 * Starts a real `strand node` process in a temporary directory and talks to it over HTTP, the
 * way an application would.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';

export const STRAND_BIN = path.resolve(import.meta.dirname, '../../bin/strand.js');

export interface NodeProcess {
  dir: string;
  url: string;
  proc: ChildProcess;
  output(): string;
  call(method: string, params?: unknown[], headers?: Record<string, string>): Promise<RpcReply>;
  post(
    body: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; text: string; headers: Headers }>;
  stop(): Promise<number | null>;
}

export interface RpcReply {
  result?: any;
  error?: { code: number; message: string; data?: unknown };
  id: unknown;
}

export interface StartNodeOptions {
  config?: Record<string, unknown>;
  args?: string[];
  env?: Record<string, string>;
  dir?: string;
  /** Sees the output (stdout and stderr) as it comes, before the node listens too. */
  onOutput?: (chunk: string) => void;
}

export function tempDir(prefix = 'strand-node-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Runs `strand <args>` to completion. */
export function runStrand(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [STRAND_BIN, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => {
      stdout += d;
    });
    p.stderr.on('data', (d) => {
      stderr += d;
    });
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export async function startNode(opts: StartNodeOptions = {}): Promise<NodeProcess> {
  const dir = opts.dir ?? tempDir();
  const config = {
    fiber: { chain: 'dev', listening_addr: '/ip4/127.0.0.1/tcp/0' },
    rpc: { listening_addr: '127.0.0.1:0' },
    // No chain by default: tests that need one start a devchain and add the `ckb` service.
    services: ['fiber', 'rpc'],
    ...opts.config,
  };
  fs.writeFileSync(path.join(dir, 'config.yml'), YAML.stringify(config));
  const proc = spawn(process.execPath, [STRAND_BIN, 'node', '-d', dir, ...(opts.args ?? [])], {
    env: { ...process.env, FIBER_SECRET_KEY_PASSWORD: 'test-password', ...opts.env },
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      opts.onOutput?.(d.toString());
      const m = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"rpc server listening"/.exec(out);
      if (m) resolve(m[1]!);
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (d) => {
      out += d.toString();
      opts.onOutput?.(d.toString());
    });
    proc.on('exit', (code) => reject(new Error(`strand node exited with ${code} before listening:\n${out}`)));
  });
  const post = async (body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: res.status, text: await res.text(), headers: res.headers };
  };
  return {
    dir,
    url,
    proc,
    output: () => out,
    post,
    async call(method, params = [], headers = {}) {
      const r = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), headers);
      return JSON.parse(r.text) as RpcReply;
    },
    stop() {
      return new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve(proc.exitCode);
        proc.once('exit', (code) => resolve(code));
        proc.kill('SIGTERM');
      });
    },
  };
}

/** Resolves when `cond()` holds, polling a process (no timing assertion: the test's timeout bounds it). */
export async function eventually(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** `list_peers` of a node process. */
export async function listPeers(
  n: NodeProcess,
): Promise<{ pubkey: string; peer_id: string; address: string }[]> {
  return (await n.call('list_peers')).result.peers;
}
