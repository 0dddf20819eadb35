/**
 * The leader lease of a node on Postgres, with real `strand node` processes and a real server: a
 * second node with the same key on the same database waits as a standby while the first lives,
 * takes over when the first is killed (kill -9: its lease runs out) with everything the first
 * committed, and a node whose lease is taken from it exits instead of writing on. A node whose
 * store stops answering (a statement stuck behind a lock) exits after the store's timeout.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type NodeProcess, startNode, tempDir } from '../helpers/node-process.ts';
import { freshDatabase, type PostgresServer, pgQuery, startPostgres } from '../helpers/postgres.ts';

let server: PostgresServer;
const dirs: string[] = [];
const procs: NodeProcess[] = [];

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);
afterAll(async () => {
  for (const p of procs) if (p.proc.exitCode === null) p.proc.kill('SIGKILL');
  await server?.stop();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A second base directory holding the same node key (and wallet key) as `dir`. */
function sameKeyDir(dir: string): string {
  const twin = tempDir('strand-twin-');
  dirs.push(twin);
  for (const f of ['fiber/sk', 'ckb/key']) {
    if (!fs.existsSync(path.join(dir, f))) continue;
    fs.mkdirSync(path.dirname(path.join(twin, f)), { recursive: true });
    fs.copyFileSync(path.join(dir, f), path.join(twin, f));
  }
  return twin;
}

const LEASE_MS = 1500;

describe('leader lease on Postgres', () => {
  it('a standby waits while the leader lives, takes over after kill -9, and a node that loses its lease exits', async () => {
    const url = await freshDatabase(server);
    const config = { store: { url, lease_ms: LEASE_MS } };
    const a = await startNode({ config });
    procs.push(a);
    dirs.push(a.dir);
    const inv = await a.call('new_invoice', [{ amount: '0x3e8', currency: 'Fibd' }]);
    const hash = inv.result.invoice.data.payment_hash;

    // B: same key, same database. It must not start its services while A holds the lease.
    const twin = sameKeyDir(a.dir);
    let b: NodeProcess | undefined;
    let early = '';
    const bStarted = startNode({
      config,
      dir: twin,
      onOutput: (chunk) => {
        early += chunk;
      },
    }).then((n) => {
      b = n;
      procs.push(n);
      return n;
    });
    await eventually(async () => /standby: another node holds the leader lease/.test(early), 'B on standby');
    // Several lease periods with A alive: B still waits and serves nothing, A still serves.
    await new Promise((r) => setTimeout(r, LEASE_MS * 3));
    expect(b).toBeUndefined();
    expect(early).not.toMatch(/rpc server listening/);
    expect((await a.call('get_invoice', [{ payment_hash: hash }])).result.status).toBe('Open');
    const holderOfA = (await pgQuery<{ holder: string }>(url, 'SELECT holder FROM strand_lease'))[0]!.holder;
    expect(holderOfA).toContain(`/${a.proc.pid}/`);

    // A dies without a word: its lease runs out and B takes over, with what A committed.
    a.proc.kill('SIGKILL');
    const bNode = await bStarted;
    expect((await bNode.call('get_invoice', [{ payment_hash: hash }])).result.status).toBe('Open');
    const holderOfB = (await pgQuery<{ holder: string }>(url, 'SELECT holder FROM strand_lease'))[0]!.holder;
    expect(holderOfB).toContain(`/${bNode.proc.pid}/`);

    // Someone else takes the lease behind B's back: B exits rather than go on writing.
    await pgQuery(url, "UPDATE strand_lease SET holder = 'thief', expires_at = expires_at + 3600000");
    const code = await new Promise<number | null>((resolve) => {
      if (bNode.proc.exitCode !== null) return resolve(bNode.proc.exitCode);
      bNode.proc.once('exit', (c) => resolve(c));
    });
    expect(code).toBe(3);
    expect(bNode.output()).toMatch(/leader lease lost/);
  }, 120_000);

  it('a node whose store call hangs past store.timeout_ms exits (code 3) and what the call wrote never lands', async () => {
    const url = await freshDatabase(server);
    const a = await startNode({
      config: { store: { url, timeout_ms: 2000, lease_ms: LEASE_MS } },
    });
    procs.push(a);
    dirs.push(a.dir);
    expect((await a.call('new_invoice', [{ amount: '0x3e8', currency: 'Fibd' }])).result).toBeDefined();
    const exited = new Promise<number | null>((resolve) => a.proc.once('exit', (c) => resolve(c)));
    // Another session holds the invoices table: the node's next invoice waits on the lock.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE invoices IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      const reply = a.call('new_invoice', [{ amount: '0x7d0', currency: 'Fibd' }]).catch((e: Error) => e);
      expect(await exited).toBe(3);
      const took = Date.now() - started;
      console.log(`store.timeout_ms 2000: the node exited ${took} ms after the call`);
      // The store's timeout, plus the time the worker gets to end the hung session.
      expect(took).toBeGreaterThanOrEqual(2000);
      expect(took).toBeLessThan(2000 + 5000 + 3000);
      expect(await reply).toBeInstanceOf(Error); // no answer: the process is gone
      expect(a.output()).toMatch(
        /"level":60[^\n]*did not answer within 2000 ms[^\n]*"cause":"store_timeout"[^\n]*store did not answer in time: exiting/,
      );
      await holder.query('COMMIT');
      expect(await pgQuery(url, 'SELECT COUNT(*)::int AS n FROM invoices')).toEqual([{ n: 1 }]);
    } finally {
      await holder.end();
    }
  }, 60_000);
});
