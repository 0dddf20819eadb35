/** Signed gossip fixtures: channel announcements with real ECDSA and MuSig2 signatures. */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { aggregateXOnly, signTogether, sortPubkeys } from '../../src/crypto/musig2.ts';
import type { FundingChecker } from '../../src/graph/funding.ts';
import type { ChannelAnnouncement, ChannelUpdate, OutPoint } from '../../src/graph/messages.ts';
import { channelAnnouncementDigest, signChannelUpdate, signDigest } from '../../src/graph/signing.ts';

export interface Party {
  sk: Uint8Array;
  pk: Uint8Array;
}

export function party(seed: number): Party {
  const sk = new Uint8Array(32).fill(seed);
  return { sk, pk: secp256k1.getPublicKey(sk, true) };
}

export function signedChannel(
  a: Party,
  b: Party,
  chainHash: Uint8Array,
  op: OutPoint,
  capacity = 10n ** 11n,
): ChannelAnnouncement {
  const [n1, n2] = Buffer.compare(a.pk, b.pk) < 0 ? [a, b] : [b, a];
  const fundA = party(a.sk[0]! ^ 0x55);
  const fundB = party(b.sk[0]! ^ 0x55);
  const fundingKeys = sortPubkeys([fundA.pk, fundB.pk]);
  const unsigned: ChannelAnnouncement = {
    node1Signature: new Uint8Array(64),
    node2Signature: new Uint8Array(64),
    ckbSignature: new Uint8Array(64),
    features: 0n,
    chainHash,
    channelOutpoint: op,
    node1Id: n1.pk,
    node2Id: n2.pk,
    ckbKey: aggregateXOnly(fundingKeys),
    capacity,
    udtTypeScript: null,
  };
  const digest = channelAnnouncementDigest(unsigned);
  return {
    ...unsigned,
    node1Signature: signDigest(digest, n1.sk),
    node2Signature: signDigest(digest, n2.sk),
    ckbSignature: signTogether([fundA.sk, fundB.sk], fundingKeys, digest),
  };
}

export function signedUpdate(
  signer: Party,
  ca: ChannelAnnouncement,
  p: Partial<Omit<ChannelUpdate, 'signature'>> = {},
): ChannelUpdate {
  const isNode2 = Buffer.compare(signer.pk, ca.node2Id) === 0;
  return signChannelUpdate(
    {
      chainHash: ca.chainHash,
      channelOutpoint: ca.channelOutpoint,
      timestamp: BigInt(Date.now()),
      messageFlags: isNode2 ? 1 : 0,
      channelFlags: 0,
      tlcExpiryDelta: 14_400_000n,
      tlcMinimumValue: 0n,
      tlcMaximumValue: 0n,
      feeRate: 1000n,
      ...p,
    },
    signer.sk,
  );
}

/** Accepts every announcement with a fixed block timestamp (the chain check has its own test). */
export function trustingFunding(timestamp = BigInt(Date.now() - 60_000)): FundingChecker & { calls: number } {
  const f = {
    calls: 0,
    async check() {
      f.calls++;
      return timestamp;
    },
  };
  return f;
}

export function outPoint(n: number): OutPoint {
  return { txHash: new Uint8Array(32).fill(n), index: 0 };
}
