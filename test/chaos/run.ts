/**
 * `npm run chaos -- [--kills N] [--in-flight N] [--seed N] [--settle-s N] [--postgres] [--pipelined]`:
 * a chaos run (see storm.ts). `--postgres` (`npm run chaos:postgres`) keeps each node's store in a
 * database of a Postgres server started for the run; `--pipelined`: the channels run pipelined
 * TLC updates (`fiber.pipelined_updates`). Prints the report; exits 1 when the audit found anything.
 */
import { parseArgs } from 'node:util';
import { freshDatabase, type PostgresServer, startPostgres } from '../helpers/postgres.ts';
import { runChaos } from './storm.ts';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '100' },
    'in-flight': { type: 'string', default: '16' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    'settle-s': { type: 'string', default: '300' },
    dir: { type: 'string' },
    postgres: { type: 'boolean', default: false },
    pipelined: { type: 'boolean', default: false },
  },
});
let server: PostgresServer | undefined;
const urls = new Map<string, string>();
if (values.postgres) {
  server = await startPostgres();
  for (const n of ['alice', 'bob', 'carol']) urls.set(n, await freshDatabase(server));
}
const report = await runChaos({
  kills: Number(values.kills),
  inFlight: Number(values['in-flight']),
  seed: Number(values.seed),
  gapMs: [1500, 4000],
  settleMs: Number(values['settle-s']) * 1000,
  dir: values.dir,
  store: server ? (node) => ({ url: urls.get(node), lease_ms: 2000 }) : undefined,
  pipelined: values.pipelined,
  log: (l) => console.log(l),
});
console.log(JSON.stringify(report, null, 2));
await server?.stop();
process.exit(report.violations.length ? 1 : 0);
