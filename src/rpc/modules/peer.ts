/**
 * `peer` module: `connect_peer`, `disconnect_peer`, `list_peers` (fiber-rpc.md §1.2, error texts
 * §5.2). `disconnect_peer` takes the seed's `peer_id` (a `Qm…` id, or a pubkey) and v0.8's
 * `pubkey`; when both are given they must name the same node. `list_peers` writes `pubkey`,
 * `peer_id` and `address`. `connect_peer` answers once the Fiber protocol is open (the reference
 * answers as soon as the dial starts), so dial and handshake failures surface as errors; a peer
 * already connected is not one.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { z } from 'zod';
import { DomainError, InvalidParams } from '../../codec/index.ts';
import { PeerError } from '../../p2p/index.ts';
import { type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';
import { echo } from '../schema.ts';

/** What the peer module needs from the P2P layer (PeerManager implements it). */
export interface PeerService {
  connect(address: string, opts: { save?: boolean }): Promise<unknown>;
  connectByPubkey(pubkey: string): Promise<unknown>;
  disconnect(pubkey: string): Promise<void>;
  list(): { pubkey: string; peerId: string; address: string }[];
}

const PUBKEY_HEX = /^(0x)?[0-9a-fA-F]{66}$/;

/** A 33-byte compressed key that is a curve point; texts as the reference's (`invalid pubkey '…': …`). */
function checkPubkey(input: string): string {
  const hex = (input.startsWith('0x') ? input.slice(2) : input).toLowerCase();
  if (!PUBKEY_HEX.test(input) || !/^0[23]/.test(hex)) {
    throw new InvalidParams(
      `invalid pubkey '${echo(input)}': expected a 33-byte compressed public key in hex`,
    );
  }
  try {
    secp256k1.Point.fromHex(hex);
  } catch {
    throw new InvalidParams(`invalid pubkey '${echo(input)}': malformed public key`);
  }
  return hex;
}

const connectParams = z.object({
  address: z.string().max(1024, { error: 'at most 1024 characters' }).optional(),
  pubkey: z.string().optional(),
  save: z.boolean().optional(),
});

const disconnectParams = z.object({
  peer_id: z.string().optional(),
  pubkey: z.string().optional(),
});

export function peerMethods(pm: PeerService): MethodSpec[] {
  /** `peer_id` as a `Qm…` id (resolved among connected peers) or as a pubkey. */
  const resolvePeerId = (peerId: string): string => {
    if (PUBKEY_HEX.test(peerId)) return checkPubkey(peerId);
    if (!/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/.test(peerId))
      throw new InvalidParams(`invalid peer_id '${echo(peerId)}': expected a Qm… peer id or a pubkey`);
    const found = pm.list().find((p) => p.peerId === peerId);
    if (!found) throw new PeerError('PeerNotConnected', `peer ${peerId} is not connected`);
    return found.pubkey;
  };

  return [
    method({
      name: 'connect_peer',
      module: 'peer',
      description:
        'Connects to a peer by multiaddr (`address`, saved to the peer store unless `save` is false) or by `pubkey` (address from the graph). Answers once the Fiber protocol is open; a peer already connected is not an error.',
      result: R.nullResult,
      examples: [
        {
          name: 'connect to bob of the devnet',
          params: { address: '/ip4/127.0.0.1/tcp/8238/p2p/QmSRcPqUn4aQrKHXyCDjGn2qBVf43tWBDS2Wj9QDUZXtZp' },
          result: null,
        },
      ],
      params: connectParams,
      handler: async (p) => {
        try {
          if (p.address !== undefined) {
            await pm.connect(p.address, { save: p.save ?? true });
          } else if (p.pubkey !== undefined) {
            await pm.connectByPubkey(checkPubkey(p.pubkey));
          } else {
            throw new PeerError('AddressOrPubkeyRequired', 'either `address` or `pubkey` is required');
          }
        } catch (e) {
          // Idempotent, as in fnn v0.8.0: its dial of a connected peer is accepted and only fails
          // later inside tentacle, so the RPC answers null (its e2e tests rely on that).
          if (PeerError.is(e, 'AlreadyConnected')) return null;
          if (e instanceof DomainError && e.data === undefined) throw e.withData(p);
          throw e;
        }
        return null;
      },
    }),
    method({
      name: 'disconnect_peer',
      module: 'peer',
      description: 'Disconnects a peer named by `peer_id` (a `Qm…` id or a pubkey) or `pubkey`.',
      result: R.nullResult,
      params: disconnectParams,
      handler: async (p) => {
        const byPubkey = p.pubkey !== undefined ? checkPubkey(p.pubkey) : undefined;
        const byPeerId = p.peer_id !== undefined ? resolvePeerId(p.peer_id) : undefined;
        if (byPubkey === undefined && byPeerId === undefined) {
          throw new InvalidParams('peer_id: missing required field');
        }
        if (byPubkey !== undefined && byPeerId !== undefined && byPubkey !== byPeerId) {
          throw new InvalidParams('peer_id and pubkey name different nodes');
        }
        try {
          await pm.disconnect((byPubkey ?? byPeerId)!);
        } catch (e) {
          if (e instanceof DomainError && e.data === undefined) throw e.withData(p);
          throw e;
        }
        return null;
      },
    }),
    method({
      name: 'list_peers',
      module: 'peer',
      description: 'The connected peers: pubkey, peer id and the address of the session.',
      result: R.listPeersResult,
      examples: [{ name: 'no peers', result: { peers: [] } }],
      params: null,
      handler: () => ({
        peers: pm.list().map((p) => ({ pubkey: p.pubkey, peer_id: p.peerId, address: p.address })),
      }),
    }),
  ];
}
