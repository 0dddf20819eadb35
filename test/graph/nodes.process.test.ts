/**
 * Real `strand node` processes exchanging node announcements over /p2p/43, seen through their
 * `graph_nodes` / `graph_channels` RPC.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type NodeProcess, startNode } from '../helpers/node-process.ts';

const running: NodeProcess[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((n) => n.stop()));
});

async function node(name: string): Promise<NodeProcess> {
  const n = await startNode({
    config: {
      fiber: {
        chain: 'dev',
        listening_addr: '/ip4/127.0.0.1/tcp/0',
        announced_node_name: name,
        announce_listening_addr: true,
        // loopback addresses only: keep announcements without a public address
        announce_private_addr: true,
      },
    },
  });
  running.push(n);
  return n;
}

async function eventually(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface NodeInfoJson {
  node_name: string;
  pubkey: string;
  addresses: string[];
  version: string;
  features: string[];
}

async function graphNodes(n: NodeProcess): Promise<NodeInfoJson[]> {
  const r = await n.call('graph_nodes', [{}]);
  return r.result.nodes;
}

describe('graph over real node processes', { timeout: 120_000 }, () => {
  it('two nodes learn each other’s announcement after connecting', async () => {
    const [a, b] = await Promise.all([node('alpha'), node('beta')]);
    const [ia, ib] = await Promise.all([a.call('node_info'), b.call('node_info')]);
    // each node knows itself from the start
    expect((await graphNodes(a)).map((n) => n.node_name)).toEqual(['alpha']);
    expect(await a.call('connect_peer', [{ address: ib.result.addresses[0] }])).toMatchObject({
      result: null,
    });
    await eventually(async () => (await graphNodes(b)).length === 2, 'b to learn a');
    await eventually(async () => (await graphNodes(a)).length === 2, 'a to learn b');
    const alpha = (await graphNodes(b)).find((n) => n.pubkey === ia.result.pubkey)!;
    expect(alpha.node_name).toBe('alpha');
    expect(alpha.addresses).toEqual(ia.result.addresses);
    expect(alpha.features).toEqual([
      'GOSSIP_QUERIES_OPTIONAL',
      'BASIC_MPP_OPTIONAL',
      'TRAMPOLINE_ROUTING_OPTIONAL',
    ]);
    expect((await graphNodes(a)).find((n) => n.pubkey === ib.result.pubkey)?.node_name).toBe('beta');
    // paging and errors through the process's RPC
    const page = await b.call('graph_nodes', [{ limit: '0x1' }]);
    expect(page.result.nodes).toHaveLength(1);
    const next = await b.call('graph_nodes', [{ limit: '0x1', after: page.result.last_cursor }]);
    expect(next.result.nodes).toHaveLength(1);
    expect(next.result.nodes[0].pubkey).not.toBe(page.result.nodes[0].pubkey);
    expect((await b.call('graph_nodes', [{ after: '0x00' }])).error?.code).toBe(-32602);
    expect(await b.call('graph_channels', [{}])).toMatchObject({
      result: { channels: [], last_cursor: '0x' },
    });
  });
});
