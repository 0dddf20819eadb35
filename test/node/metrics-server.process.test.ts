/**
 * `/metrics` of one node process: served only when `fiber.metrics_addr` is set, RPC calls counted
 * by method and JSON-RPC code (bad params, unknown methods under one label), nothing else served.
 * The payment, forwarding and channel counters are in `metrics.process.test.ts` (a devnet).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, type NodeProcess, startNode } from '../helpers/node-process.ts';

const nodes: NodeProcess[] = [];

afterAll(async () => {
  for (const n of nodes) await n.stop();
});

async function start(fiber: Record<string, unknown>): Promise<NodeProcess> {
  const n = await startNode({
    config: { fiber: { chain: 'dev', listening_addr: '/ip4/127.0.0.1/tcp/0', ...fiber } },
  });
  nodes.push(n);
  // The RPC listens before the node has finished starting (the metrics server comes after it).
  await eventually(async () => n.output().includes('"msg":"node started"'), 'node started');
  return n;
}

function metricsUrl(n: NodeProcess): string | undefined {
  return /"url":"(http:\/\/[^"]+\/metrics)"[^\n]*"msg":"metrics served"/.exec(n.output())?.[1];
}

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('the metrics endpoint', { timeout: 60_000 }, () => {
  it('counts RPC calls by method and code', async () => {
    const n = await start({ metrics_addr: '127.0.0.1:0' });
    const url = metricsUrl(n);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect((await n.call('node_info')).result.pubkey).toBeDefined();
    expect((await n.call('node_info')).result.pubkey).toBeDefined();
    const bad = await n.call('new_invoice', [{ amount: 'ten' }]);
    expect(bad.error?.code).toBe(-32602);
    expect((await n.call('no_such_method_1')).error?.code).toBe(-32601);
    expect((await n.call('no_such_method_2')).error?.code).toBe(-32601);

    const res = await fetch(url!);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(sample(text, 'strand_rpc_requests_total{method="node_info",code="0"}')).toBe(2);
    expect(sample(text, 'strand_rpc_requests_total{method="new_invoice",code="-32602"}')).toBe(1);
    // Names a caller makes up share one series: they cannot grow the scrape without bound.
    expect(sample(text, 'strand_rpc_requests_total{method="unknown",code="-32601"}')).toBe(2);
    expect(text).not.toContain('no_such_method');
    expect(sample(text, 'strand_peers_connected')).toBe(0);
    expect(text).toContain('# TYPE strand_payment_duration_seconds histogram');

    const other = await fetch(url!.replace('/metrics', '/'));
    expect(other.status).toBe(404);
    const post = await fetch(url!, { method: 'POST', body: '{}' });
    expect(post.status).toBe(404);
  });

  it('is off when fiber.metrics_addr is unset', async () => {
    const n = await start({});
    expect(metricsUrl(n)).toBeUndefined();
    expect(n.output()).not.toContain('metrics served');
  });
});
