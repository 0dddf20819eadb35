/**
 * `npm run chaos -- [--kills N] [--in-flight N] [--seed N] [--settle-s N]`: a chaos run (see
 * storm.ts). Prints the report; exits 1 when the audit found anything.
 */
import { parseArgs } from 'node:util';
import { runChaos } from './storm.ts';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '100' },
    'in-flight': { type: 'string', default: '16' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    'settle-s': { type: 'string', default: '300' },
    dir: { type: 'string' },
  },
});
const report = await runChaos({
  kills: Number(values.kills),
  inFlight: Number(values['in-flight']),
  seed: Number(values.seed),
  gapMs: [1500, 4000],
  settleMs: Number(values['settle-s']) * 1000,
  dir: values.dir,
  log: (l) => console.log(l),
});
console.log(JSON.stringify(report, null, 2));
process.exit(report.violations.length ? 1 : 0);
