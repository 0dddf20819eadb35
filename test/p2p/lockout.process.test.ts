/**
 * A real `strand node` cannot be locked out: a flood of silent sockets from the peer's own IP
 * still lets a real peer in, and a session that sends garbage after its handshake is closed.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeFiberMessage } from '../../src/p2p/fiber-message.ts';
import { eventually, listPeers, type NodeProcess, startNode } from '../helpers/node-process.ts';
import { clientSession, until } from './helpers.ts';

const running: NodeProcess[] = [];
const sockets: net.Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(running.splice(0).map((n) => n.stop()));
});

async function node(): Promise<NodeProcess> {
  const n = await startNode();
  running.push(n);
  return n;
}

async function info(n: NodeProcess) {
  return (await n.call('node_info')).result as { addresses: string[]; chain_hash: string; pubkey: string };
}

const peers = listPeers;

function portOf(address: string): number {
  return Number(/\/tcp\/(\d+)\//.exec(address)![1]);
}

function connect(port: number): Promise<net.Socket> {
  const s = net.connect(port, '127.0.0.1');
  sockets.push(s);
  s.on('error', () => {});
  return new Promise((r) => s.once('connect', () => r(s)));
}

describe('a node under a flood of connections', { timeout: 120_000 }, () => {
  it('lets a real peer from the same IP in past 150 silent sockets, evicting the oldest', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    const ia = await info(a);
    const flood = await Promise.all(Array.from({ length: 150 }, () => connect(portOf(ia.addresses[0]!))));
    // While the flood is still open, a real peer from the same IP dials and completes the handshake.
    expect(await b.call('connect_peer', [{ address: ia.addresses[0] }])).toMatchObject({ result: null });
    const ib = await info(b);
    await eventually(async () => (await peers(a)).some((p) => p.pubkey === ib.pubkey), 'a to list b');
    // The node kept a bounded number of silent sockets (16 per IP) and closed the older ones.
    await until(() => flood.filter((s) => !s.closed).length <= 16, 'the older silent sockets to be evicted');
  });

  it('closes a session that sends garbage gossip after its handshake and Init', async () => {
    const a = await node();
    const ia = await info(a);
    const { session, closed } = await clientSession(portOf(ia.addresses[0]!));
    const chainHash = Buffer.from(ia.chain_hash.slice(2), 'hex');
    session.send(
      42,
      encodeFiberMessage({ type: 'Init', value: { features: new Uint8Array([0x15]), chainHash } }),
    );
    await eventually(async () => (await peers(a)).length === 1, 'a to accept the Init');
    session.send(43, new Uint8Array([0xde, 0xad, 0xbe, 0xef, 1, 2, 3]));
    await until(() => closed() !== '', 'the node to close the session');
    await eventually(async () => (await peers(a)).length === 0, 'a to drop the peer');
    // Logged as the session closes; the line reaches the output a moment after the RPC can tell.
    await eventually(
      async () => a.output().includes('malformed gossip message: session closed'),
      'the close to be logged',
    );
  });
});
