/**
 * A real Postgres server for a test file: Debian's `postgresql` binaries (`.ci/run` installs the
 * package when missing), a fresh cluster in a temporary directory, listening on 127.0.0.1 and a
 * free port. As root (CI, this machine) the cluster belongs to the `postgres` user, as initdb
 * refuses root. Each test takes its own database (`freshDatabase`). No Postgres is a failure,
 * never a skip.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  stop(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions[0])
    throw new Error('no Postgres server binaries: apt-get install -y postgresql (.ci/run does it)');
  return path.join(root, versions[0], 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = binDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-pg-'));
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) =>
    asRoot ? (['runuser', ['-u', 'postgres', '--', cmd, ...args]] as const) : ([cmd, args] as const);
  if (asRoot) execFileSync('chown', ['postgres:postgres', dir]);
  fs.chmodSync(dir, 0o700);
  const data = path.join(dir, 'data');
  const [initCmd, initArgs] = run(path.join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  execFileSync(initCmd, [...initArgs], { stdio: 'pipe' });
  const port = await freePort();
  const [cmd, args] = run(path.join(bin, 'postgres'), [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'max_connections=50',
  ]);
  const proc: ChildProcess = spawn(cmd, [...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stderr?.on('data', (d) => {
    log += d;
  });
  proc.stdout?.on('data', (d) => {
    log += d;
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`postgres exited:\n${log}`);
    const c = new pg.Client({ connectionString: url });
    try {
      await c.connect();
      await c.end();
      break;
    } catch {
      if (i > 600) throw new Error(`postgres did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // The postmaster itself: runuser does not pass signals on.
  const pid = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  // A test process that ends without `stop` (killed, a hook timed out) leaves no server behind.
  const orphanGuard = () => {
    try {
      process.kill(pid, 'SIGQUIT');
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {}
  };
  process.once('exit', orphanGuard);
  return {
    url,
    port,
    async stop() {
      process.off('exit', orphanGuard);
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        process.kill(pid, 'SIGINT'); // a fast shutdown
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let counter = 0;

/** A new empty database on the server; its URL. */
export async function freshDatabase(server: PostgresServer): Promise<string> {
  const name = `strand_${process.pid}_${++counter}`;
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  return server.url.replace(/\/postgres$/, `/${name}`);
}

/** Runs one query on `url` (what a test checks behind the node's back). */
export async function pgQuery<T = Record<string, unknown>>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end();
  }
}
