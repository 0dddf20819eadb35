/**
 * Real `strand node` processes talking to each other over the P2P transport, driven through
 * their JSON-RPC: connect, list both ways, disconnect, reconnect after a restart, a wrong peer
 * id refused, a chain-hash mismatch refused, three nodes.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, listPeers, type NodeProcess, startNode } from '../helpers/node-process.ts';
import { randomIdentity } from './helpers.ts';

const running: NodeProcess[] = [];

async function node(chain = 'dev', dir?: string): Promise<NodeProcess> {
  const n = await startNode({ dir, config: { fiber: { chain, listening_addr: '/ip4/127.0.0.1/tcp/0' } } });
  running.push(n);
  return n;
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((n) => n.stop()));
});

async function info(n: NodeProcess) {
  const r = await n.call('node_info');
  return r.result as { pubkey: string; addresses: string[]; peers_count: string; chain_hash: string };
}

const peers = listPeers;

// Generous limits: several node processes start per test, on a machine that may be busy.
describe('strand node processes over P2P', { timeout: 120_000 }, () => {
  it('connect, list both ways, peers_count, disconnect', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    const [ia, ib] = await Promise.all([info(a), info(b)]);
    expect(ib.addresses[0]).toMatch(/^\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/Qm\w{44}$/);
    expect(await a.call('connect_peer', [{ address: ib.addresses[0] }])).toMatchObject({ result: null });
    await eventually(async () => (await peers(b)).length === 1, 'b to list a');
    expect((await peers(a)).map((p) => p.pubkey)).toEqual([ib.pubkey]);
    const fromB = await peers(b);
    expect(fromB[0]!.pubkey).toBe(ia.pubkey);
    expect(fromB[0]!.address).toMatch(new RegExp(`/p2p/${fromB[0]!.peer_id}$`));
    expect((await info(a)).peers_count).toBe('0x1');
    expect((await info(b)).peers_count).toBe('0x1');
    expect(await a.call('disconnect_peer', [{ peer_id: ib.pubkey }])).toMatchObject({ result: null });
    await eventually(async () => (await peers(b)).length === 0, 'b to see the disconnect');
    expect(await peers(a)).toEqual([]);
    expect((await info(b)).peers_count).toBe('0x0');
  });

  it('reconnects to a saved peer after a restart', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    const ib = await info(b);
    await a.call('connect_peer', [{ address: ib.addresses[0] }]);
    await eventually(async () => (await peers(b)).length === 1, 'first session');
    const dir = a.dir;
    expect(await a.stop()).toBe(0);
    running.splice(running.indexOf(a), 1);
    await eventually(async () => (await peers(b)).length === 0, 'b to see a go');
    const a2 = await node('dev', dir);
    await eventually(
      async () => (await peers(a2)).length === 1 && (await peers(b)).length === 1,
      'reconnect',
    );
    expect((await peers(a2))[0]!.pubkey).toBe(ib.pubkey);
  });

  it('refuses an address whose peer id is not the key proven in the handshake', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    const ib = await info(b);
    const wrong = ib.addresses[0]!.replace(/Qm\w+$/, randomIdentity().peerId);
    const r = await a.call('connect_peer', [{ address: wrong }]);
    expect(r.error?.code).toBe(-32000);
    expect(r.error?.message).toMatch(/^peer id not match/);
    expect(await peers(a)).toEqual([]);
    await eventually(async () => (await peers(b)).length === 0, 'b to drop the session');
  });

  it('refuses a peer on another chain, naming its chain hash', async () => {
    const [a, b] = await Promise.all([node('dev'), node('testnet')]);
    const [ia, ib] = await Promise.all([info(a), info(b)]);
    expect(ia.chain_hash).not.toBe(ib.chain_hash);
    await a.call('connect_peer', [{ address: ib.addresses[0] }]);
    await eventually(async () => a.output().includes('Invalid chain hash'), 'the mismatch to be logged');
    expect(a.output()).toContain(
      `Invalid chain hash: Hash256(${ib.chain_hash}) (expecting Hash256(${ia.chain_hash}))`,
    );
    await eventually(
      async () => (await peers(a)).length === 0 && (await peers(b)).length === 0,
      'both to drop',
    );
  });

  it('three nodes: two dial a third, which lists both; WebSocket on the same port', async () => {
    const [hub, x, y] = await Promise.all([node(), node(), node()]);
    const ih = await info(hub);
    await x.call('connect_peer', [{ address: ih.addresses[0] }]);
    const ws = ih.addresses[0]!.replace('/p2p/', '/ws/p2p/');
    expect(await y.call('connect_peer', [{ address: ws }])).toMatchObject({ result: null });
    await eventually(async () => (await peers(hub)).length === 2, 'hub to list both');
    const [ix, iy] = await Promise.all([info(x), info(y)]);
    expect(new Set((await peers(hub)).map((p) => p.pubkey))).toEqual(new Set([ix.pubkey, iy.pubkey]));
    expect((await peers(y))[0]!.address).toBe(ws);
  });

  it('survives garbage on its P2P port: drops and logs the connection, keeps serving', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    const ia = await info(a);
    const port = Number(/\/tcp\/(\d+)\//.exec(ia.addresses[0]!)![1]);
    const payloads = [
      Buffer.from('00000010' + 'ff'.repeat(16), 'hex'), // a "Propose" that is not molecule
      Buffer.from('ffffffff00', 'hex'), // a 4 GiB frame announced
      Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), // HTTP without a WebSocket upgrade
    ];
    for (const p of payloads) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      await new Promise((r) => s.once('connect', r));
      s.write(p);
      s.resume();
      await new Promise((r) => s.once('close', r));
    }
    await eventually(
      async () => a.output().includes('p2p inbound handshake failed'),
      'the drop to be logged',
    );
    expect(await b.call('connect_peer', [{ address: ia.addresses[0] }])).toMatchObject({ result: null });
    await eventually(async () => (await peers(a)).length === 1, 'an honest peer afterwards');
  });
});
