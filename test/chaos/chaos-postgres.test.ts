/**
 * The short chaos run on Postgres (the long one: `npm run chaos -- --postgres`): the three nodes
 * of `chaos.test.ts` each keep their store in a database of a real Postgres server, and are killed
 * with SIGKILL under the payment storm; a restarted node waits for its own lease to run out and
 * takes it back. Nothing committed may be lost: the same audit as on SQLite.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabase, type PostgresServer, pgQuery, startPostgres } from '../helpers/postgres.ts';
import { runChaos } from './storm.ts';

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

it('survives kill -9 of nodes on Postgres under a payment storm: nothing committed is lost', async () => {
  const urls = new Map<string, string>();
  for (const n of ['alice', 'bob', 'carol']) urls.set(n, await freshDatabase(server));
  const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000);
  const report = await runChaos({
    kills: 3,
    inFlight: 8,
    seed,
    gapMs: [1500, 3000],
    settleMs: 150_000,
    // A short lease: a killed node's successor (itself, restarted) waits for it to run out. Not
    // shorter: a node that cannot renew in time stops, as it must, and at 2 s (renewed every
    // 0.67 s, trusted for 1.5 s) a node's worker thread kept from the CPU for ~0.8 s while the
    // whole suite ran beside a restart lost its lease once on CI (2026-12-03): a failure of the
    // machine's load, not of what this test checks.
    store: (node) => ({ url: urls.get(node), lease_ms: 5000 }),
    log: (l) => console.log(l),
  });
  console.log(JSON.stringify(report));
  expect(report.violations).toEqual([]);
  expect(report.succeeded).toBeGreaterThan(5);
  // The storm ran on Postgres: every payer's payments (live or settled) are in its database, no SQLite file exists.
  for (const [node, url] of urls) {
    expect(fs.existsSync(path.join(report.dir, node, 'fiber', 'store', 'strand.db'))).toBe(false);
    const [{ n }] = await pgQuery<{ n: string }>(
      url,
      'SELECT (SELECT COUNT(*) FROM payment_sessions) + (SELECT COUNT(*) FROM payments_settled) AS n',
    );
    expect(Number(n)).toBeGreaterThan(0);
  }
}, 400_000);
