/**
 * `npm run bench:rpc`: node_info requests per second against a real `strand node` process, and
 * against a bare fastify handler (bench/bare-fastify.ts) on the same machine in the same run,
 * with the ratio (goal ≥ 0.8). Both servers are separate processes; autocannon runs here.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import autocannon from 'autocannon';
import { startNode } from '../test/helpers/node-process.ts';

const DURATION = Number(process.env.BENCH_SECONDS ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'node_info', params: [] });

async function load(url: string, headers: Record<string, string> = {}) {
  // Warm-up (JIT) before the measured run.
  await autocannon({
    url,
    method: 'POST',
    body: BODY,
    headers: { 'content-type': 'application/json', ...headers },
    duration: 2,
    connections: CONNECTIONS,
  });
  const r = await autocannon({
    url,
    method: 'POST',
    body: BODY,
    headers: { 'content-type': 'application/json', ...headers },
    duration: DURATION,
    connections: CONNECTIONS,
  });
  if (r.errors > 0 || r.non2xx > 0)
    throw new Error(`errors during load: ${r.errors} errors, ${r.non2xx} non-2xx`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

const node = await startNode({ config: { rpc: { listening_addr: '127.0.0.1:0' } } });
const info = await node.call('node_info');
const bare = spawn(process.execPath, [
  '--import',
  'tsx',
  path.join(import.meta.dirname, 'bare-fastify.ts'),
  JSON.stringify(info.result),
]);
const bareUrl = await new Promise<string>((resolve) =>
  bare.stdout.once('data', (d) => resolve(JSON.parse(String(d)).url)),
);

try {
  const strand = await load(node.url);
  const baseline = await load(bareUrl);
  const rows = [
    ['server', 'req/s', 'p50 ms', 'p99 ms'],
    ['strand node (node_info)', strand.rps.toFixed(0), String(strand.p50), String(strand.p99)],
    ['bare fastify', baseline.rps.toFixed(0), String(baseline.p50), String(baseline.p99)],
  ];
  for (const r of rows)
    console.log(
      r[0]!.padEnd(26) +
        r
          .slice(1)
          .map((c) => c.padStart(10))
          .join(''),
    );
  console.log(
    `ratio strand / bare fastify: ${(strand.rps / baseline.rps).toFixed(2)} (goal >= 0.80); ${CONNECTIONS} connections, ${DURATION} s`,
  );
} finally {
  bare.kill();
  await node.stop();
}
