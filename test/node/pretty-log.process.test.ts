/**
 * `--log-format pretty|json` on a real node process: pretty gives one readable line per entry
 * (time, level, message, fields), json one JSON object per line; another value stops start-up
 * with a message naming the field.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { runStrand, STRAND_BIN, tempDir } from '../helpers/node-process.ts';

const running: ChildProcess[] = [];

afterEach(async () => {
  for (const p of running.splice(0)) {
    if (p.exitCode !== null) continue;
    await new Promise((resolve) => {
      p.once('exit', resolve);
      p.kill('SIGTERM');
    });
  }
});

function nodeDir(): string {
  const dir = tempDir('strand-log-');
  const config = {
    services: ['fiber', 'rpc'],
    fiber: { chain: 'dev', listening_addr: '/ip4/127.0.0.1/tcp/0' },
    rpc: { listening_addr: '127.0.0.1:0' },
  };
  fs.writeFileSync(path.join(dir, 'config.yml'), YAML.stringify(config));
  return dir;
}

/** Starts a node and collects its stdout until `ready` matches; then stops it (SIGTERM). */
async function runUntil(args: string[], ready: RegExp): Promise<string> {
  const proc = spawn(process.execPath, [STRAND_BIN, 'node', '-d', nodeDir(), ...args], {
    env: { ...process.env, FIBER_SECRET_KEY_PASSWORD: 'test-password' },
  });
  running.push(proc);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    proc.stdout.on('data', (d) => {
      out += d;
      if (ready.test(out)) resolve();
    });
    proc.stderr.on('data', (d) => {
      out += d;
    });
    proc.once('exit', (code) => reject(new Error(`node exited with ${code}:\n${out}`)));
  });
  await new Promise((resolve) => {
    proc.once('exit', resolve);
    proc.kill('SIGTERM');
  });
  return out;
}

describe('strand node --log-format', { timeout: 60_000 }, () => {
  it('pretty: one readable line per entry, with the entry fields as key=value', async () => {
    const out = await runUntil(['--log-format', 'pretty'], /node started/);
    const lines = out.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines)
      expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S/);
    const started = lines.find((l) => l.includes(' node started'));
    expect(started).toMatch(/INFO {2}node started {2}pubkey=(0x)?[0-9a-f]{66} peer_id=Qm\w+ version=\S+/);
    // pino's own fields are in the head or nowhere.
    expect(started).not.toMatch(/\bpid=|\bhostname=|\blevel=/);
    expect(lines.find((l) => l.includes('rpc server listening'))).toMatch(/url=http:\/\/127\.0\.0\.1:\d+/);
  });

  it('json (the default): one JSON object per line', async () => {
    const out = await runUntil([], /"msg":"node started"/);
    const entries = out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: number; msg: string; pid: number });
    expect(entries.find((e) => e.msg === 'node started')).toMatchObject({ level: 30 });
  });

  it('refuses another format, naming the field', async () => {
    const r = await runStrand(['node', '-d', nodeDir(), '--log-format', 'xml']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/log_format: expected json or pretty/);
  });
});
