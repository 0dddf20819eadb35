/**
 * The short chaos run of `npm test` (the long one is `npm run chaos`): three nodes in a line under
 * 16 payments in flight, five of them killed with SIGKILL at random instants and restarted; then
 * nothing may be lost, created or left half-done.
 */
import { expect, it } from 'vitest';
import { runChaos } from './storm.ts';

it('survives kill -9 of random nodes under a payment storm: every payment ends, both ends agree, no shannon lost', async () => {
  const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000);
  const report = await runChaos({
    kills: 5,
    inFlight: 16,
    seed,
    gapMs: [1500, 3000],
    settleMs: 150_000,
    log: (l) => console.log(l),
  });
  console.log(JSON.stringify(report));
  expect(report.violations).toEqual([]);
  // The storm really ran: payments through every kill, most of them completed.
  expect(report.succeeded).toBeGreaterThan(20);
}, 400_000);
