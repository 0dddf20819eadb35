/**
 * Signing and verification of gossip messages as the reference does
 * (`docs/reference/fiber-routing-protocol.md` §3.2): the digest is the ckb hash of the
 * molecule bytes with every signature field zero-filled; ECDSA signatures are 64-byte compact
 * (low s, RFC 6979 nonces) over that digest as is; the channel announcement also carries a BIP340
 * signature by the funding aggregate key.
 */
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { ckbHash } from '../crypto/index.ts';
import {
  type ChannelAnnouncement,
  type ChannelUpdate,
  encodeChannelAnnouncement,
  encodeChannelUpdate,
  encodeNodeAnnouncement,
  type NodeAnnouncement,
} from './messages.ts';

const ZERO_SIG = new Uint8Array(64);

export function nodeAnnouncementDigest(n: NodeAnnouncement): Uint8Array {
  return ckbHash(encodeNodeAnnouncement({ ...n, signature: ZERO_SIG }));
}

export function channelUpdateDigest(u: ChannelUpdate): Uint8Array {
  return ckbHash(encodeChannelUpdate({ ...u, signature: ZERO_SIG }));
}

export function channelAnnouncementDigest(c: ChannelAnnouncement): Uint8Array {
  return ckbHash(
    encodeChannelAnnouncement({
      ...c,
      node1Signature: ZERO_SIG,
      node2Signature: ZERO_SIG,
      ckbSignature: ZERO_SIG,
    }),
  );
}

/** 64-byte compact ECDSA over a 32-byte digest (no pre-hashing). */
export function signDigest(digest: Uint8Array, secretKey: Uint8Array): Uint8Array {
  return secp256k1.sign(digest, secretKey, { prehash: false });
}

export function verifyDigest(sig: Uint8Array, digest: Uint8Array, pubkey: Uint8Array): boolean {
  if (sig.length !== 64 || pubkey.length !== 33) return false;
  try {
    return secp256k1.verify(sig, digest, pubkey, { prehash: false });
  } catch {
    return false;
  }
}

export function signNodeAnnouncement(
  n: Omit<NodeAnnouncement, 'signature'>,
  secretKey: Uint8Array,
): NodeAnnouncement {
  const unsigned = { ...n, signature: ZERO_SIG };
  return { ...unsigned, signature: signDigest(nodeAnnouncementDigest(unsigned), secretKey) };
}

export function verifyNodeAnnouncement(n: NodeAnnouncement): boolean {
  return verifyDigest(n.signature, nodeAnnouncementDigest(n), n.nodeId);
}

export function signChannelUpdate(u: Omit<ChannelUpdate, 'signature'>, secretKey: Uint8Array): ChannelUpdate {
  const unsigned = { ...u, signature: ZERO_SIG };
  return { ...unsigned, signature: signDigest(channelUpdateDigest(unsigned), secretKey) };
}

/** Verifies against node1 or node2, chosen by bit0 of `message_flags`. */
export function verifyChannelUpdate(u: ChannelUpdate, node1: Uint8Array, node2: Uint8Array): boolean {
  return verifyDigest(u.signature, channelUpdateDigest(u), (u.messageFlags & 1) === 1 ? node2 : node1);
}

/** Both node signatures and the BIP340 signature of the funding aggregate key. */
export function verifyChannelAnnouncement(c: ChannelAnnouncement): boolean {
  const digest = channelAnnouncementDigest(c);
  if (!verifyDigest(c.node1Signature, digest, c.node1Id)) return false;
  if (!verifyDigest(c.node2Signature, digest, c.node2Id)) return false;
  try {
    return schnorr.verify(c.ckbSignature, digest, c.ckbKey);
  } catch {
    return false;
  }
}

/**
 * The unsigned announcement of one of this node's public channels, as the reference builds it
 * (`try_create_channel_announcement_message`): node1 = the smaller pubkey, `ckb_key` = the funding
 * lock's x-only MuSig2 aggregate key, capacity = the channel's liquid capacity, features 0.
 * Sign `channelAnnouncementDigest(a)` with the node key (`signDigest`) and, for `ckb_signature`,
 * with MuSig2 partial signatures exchanged in `AnnouncementSignatures`.
 */
export function unsignedChannelAnnouncement(o: {
  chainHash: Uint8Array;
  channelOutpoint: ChannelAnnouncement['channelOutpoint'];
  localPubkey: Uint8Array;
  remotePubkey: Uint8Array;
  fundingXOnlyKey: Uint8Array;
  capacity: bigint;
  udtTypeScript: ChannelAnnouncement['udtTypeScript'];
}): ChannelAnnouncement {
  const localIsNode1 = Buffer.compare(o.localPubkey, o.remotePubkey) < 0;
  return {
    node1Signature: ZERO_SIG,
    node2Signature: ZERO_SIG,
    ckbSignature: ZERO_SIG,
    features: 0n,
    chainHash: o.chainHash,
    channelOutpoint: o.channelOutpoint,
    node1Id: localIsNode1 ? o.localPubkey : o.remotePubkey,
    node2Id: localIsNode1 ? o.remotePubkey : o.localPubkey,
    ckbKey: o.fundingXOnlyKey,
    capacity: o.capacity,
    udtTypeScript: o.udtTypeScript,
  };
}

/** Puts both node signatures (ours and the peer's) and the aggregated BIP340 signature in place. */
export function completeChannelAnnouncement(
  a: ChannelAnnouncement,
  s: {
    localPubkey: Uint8Array;
    localNodeSignature: Uint8Array;
    remoteNodeSignature: Uint8Array;
    ckbSignature: Uint8Array;
  },
): ChannelAnnouncement {
  const localIsNode1 = Buffer.compare(s.localPubkey, a.node1Id) === 0;
  return {
    ...a,
    node1Signature: localIsNode1 ? s.localNodeSignature : s.remoteNodeSignature,
    node2Signature: localIsNode1 ? s.remoteNodeSignature : s.localNodeSignature,
    ckbSignature: s.ckbSignature,
  };
}
