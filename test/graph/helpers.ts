import { secp256k1 } from '@noble/curves/secp256k1.js';
import type { MolScript } from '../../src/graph/messages.ts';
import type { ChannelUpdateInfo } from '../../src/graph/network-graph.ts';
import { NetworkGraph } from '../../src/graph/network-graph.ts';

export const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** Node `i`'s secret key and compressed pubkey (66 hex). */
export function key(i: number): { sk: Uint8Array; pk: string } {
  const sk = new Uint8Array(32);
  new DataView(sk.buffer).setUint32(28, i + 1);
  return { sk, pk: hex(secp256k1.getPublicKey(sk, true)) };
}

export function outpoint(i: number): string {
  const b = Buffer.alloc(36);
  b.writeUInt32BE(i + 1, 0);
  return '0x' + b.toString('hex');
}

export function policy(p: Partial<ChannelUpdateInfo> = {}): ChannelUpdateInfo {
  return {
    timestamp: 1n,
    enabled: true,
    outboundLiquidity: null,
    tlcExpiryDelta: 14_400_000n,
    tlcMinimumValue: 0n,
    feeRate: 1000n,
    ...p,
  };
}

/**
 * A graph of public channels given as `[a, b, capacity, policy a→b, policy b→a]` (node names
 * are pubkeys); channels touching `source` are fed as own channels when `own` is set.
 */
export function graphOf(
  source: string,
  channels: {
    a: string;
    b: string;
    capacity?: bigint;
    ab?: Partial<ChannelUpdateInfo> | null;
    ba?: Partial<ChannelUpdateInfo> | null;
    udt?: MolScript | null;
    id?: string;
  }[],
): NetworkGraph {
  const g = new NetworkGraph(source);
  channels.forEach((c, i) => {
    const op = c.id ?? outpoint(i);
    const ab = c.ab === null ? null : policy(c.ab);
    const ba = c.ba === null ? null : policy(c.ba);
    if (c.a === source || c.b === source) {
      const localIsA = c.a === source;
      g.upsertOwnChannel({
        outpoint: op,
        peer: localIsA ? c.b : c.a,
        capacity: c.capacity ?? 10n ** 12n,
        udtTypeScript: c.udt ?? null,
        local: localIsA ? ab : ba,
        remote: localIsA ? ba : ab,
      });
      return;
    }
    const aIs1 = c.a < c.b;
    g.putChannel({
      outpoint: op,
      node1: aIs1 ? c.a : c.b,
      node2: aIs1 ? c.b : c.a,
      capacity: c.capacity ?? 10n ** 12n,
      createdTimestamp: 1n,
      chainHash: '',
      udtTypeScript: c.udt ?? null,
      update1: aIs1 ? ab : ba,
      update2: aIs1 ? ba : ab,
      own: false,
    });
  });
  return g;
}
