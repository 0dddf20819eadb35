/** The `peer` RPC module through the real dispatcher, backed by real PeerManagers on loopback. */
import { afterEach, describe, expect, it } from 'vitest';
import type { PeerManager } from '../../src/p2p/peer-manager.ts';
import { OPEN_ACCESS } from '../../src/rpc/auth.ts';
import { Dispatcher } from '../../src/rpc/dispatch.ts';
import { peerMethods } from '../../src/rpc/modules/peer.ts';
import { randomIdentity, startManager, stopAll, tcpAddr, until, wsAddr } from './helpers.ts';

afterEach(stopAll);

function rpc(pm: PeerManager) {
  const d = new Dispatcher(peerMethods(pm), OPEN_ACCESS);
  return async (method: string, params: unknown[] = []) => {
    const out = (await d.handleValue({ jsonrpc: '2.0', id: 1, method, params }, undefined, {
      transport: 'http',
    })) as {
      result?: unknown;
      error?: { code: number; message: string; data?: unknown };
    };
    return out;
  };
}

describe('peer RPC module', () => {
  it('connect_peer, list_peers both ways, disconnect_peer by peer_id', async () => {
    const a = await startManager();
    const b = await startManager();
    const callA = rpc(a);
    const callB = rpc(b);
    expect(await callA('connect_peer', [{ address: wsAddr(b) }])).toMatchObject({ result: null });
    await until(() => b.peersCount === 1);
    expect((await callA('list_peers')).result).toEqual({
      peers: [{ pubkey: b.identity.pubkeyHex, peer_id: b.identity.peerId, address: wsAddr(b) }],
    });
    const listedByB = (await callB('list_peers')).result as { peers: { pubkey: string; peer_id: string }[] };
    expect(listedByB.peers.map((p) => [p.pubkey, p.peer_id])).toEqual([
      [a.identity.pubkeyHex, a.identity.peerId],
    ]);
    expect(await callA('disconnect_peer', [{ peer_id: b.identity.peerId }])).toMatchObject({ result: null });
    await until(() => b.peersCount === 0);
    expect((await callA('list_peers')).result).toEqual({ peers: [] });
  });

  it('connects by pubkey from the saved address, disconnects by v0.8 pubkey', async () => {
    const a = await startManager();
    const b = await startManager();
    const call = rpc(a);
    await call('connect_peer', [{ address: tcpAddr(b) }]);
    await call('disconnect_peer', [{ pubkey: b.identity.pubkeyHex }]);
    expect(await call('connect_peer', [{ pubkey: b.identity.pubkeyHex }])).toMatchObject({ result: null });
    expect(a.isConnected(b.identity.pubkeyHex)).toBe(true);
  });

  it('answers errors with the reference texts', async () => {
    const a = await startManager();
    const b = await startManager();
    const call = rpc(a);
    const unknown = randomIdentity();
    expect((await call('connect_peer', [{ address: '' }])).error).toEqual({
      code: -32000,
      message: 'address must not be empty, expected a multiaddr like /ip4/1.2.3.4/tcp/8080',
      data: { address: '' },
    });
    expect((await call('connect_peer', [{}])).error?.message).toBe(
      'either `address` or `pubkey` is required',
    );
    expect((await call('connect_peer', [{ address: 'not-an-address' }])).error?.message).toBe(
      'invalid multiaddr',
    );
    expect((await call('connect_peer', [{ pubkey: unknown.pubkeyHex }])).error?.message).toBe(
      `Peer not found error: Pubkey(${unknown.pubkeyHex})`,
    );
    expect((await call('connect_peer', [{ address: tcpAddr(a) }])).error?.message).toBe(
      'cannot connect to self',
    );
    await call('connect_peer', [{ address: tcpAddr(b) }]);
    // Connecting again is not an error (fnn v0.8.0 answers null too).
    expect(await call('connect_peer', [{ address: tcpAddr(b) }])).toMatchObject({ result: null });
    expect(await call('connect_peer', [{ pubkey: b.identity.pubkeyHex }])).toMatchObject({ result: null });
    expect(a.peersCount).toBe(1);
    expect((await call('disconnect_peer', [{ pubkey: unknown.pubkeyHex }])).error?.message).toBe(
      `peer Pubkey(${unknown.pubkeyHex}) is not connected`,
    );
    const notPoint = `02${'ff'.repeat(32)}`;
    const bad = await call('disconnect_peer', [{ pubkey: notPoint }]);
    expect(bad.error?.code).toBe(-32602);
    expect(bad.error?.message).toContain(`invalid pubkey '${notPoint}'`);
    const mismatch = await call('disconnect_peer', [
      { pubkey: b.identity.pubkeyHex, peer_id: unknown.pubkeyHex },
    ]);
    expect(mismatch.error?.code).toBe(-32602);
    expect((await call('disconnect_peer', [{}])).error?.code).toBe(-32602);
    expect((await call('list_peers', [{ x: 1 }])).error?.code).toBe(-32602);
  });
});
