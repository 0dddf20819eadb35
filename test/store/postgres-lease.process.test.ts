/**
 * The leader lease of a node on Postgres, with real `strand node` processes and a real server: a
 * second node with the same key on the same database waits as a standby while the first lives,
 * takes over when the first is killed (kill -9: its lease runs out) with everything the first
 * committed, and a node whose lease is taken from it exits instead of writing on.
 */
import fs from 'node:fs';
import path from 'node:path';
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
});
