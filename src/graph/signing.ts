/**
 * Signing and verification of gossip messages as the reference does
 * (`../shared/reference/fiber-routing-protocol.md` §3.2): the digest is the ckb hash of the
 * molecule bytes with every signature field zero-filled; ECDSA signatures are 64-byte compact
 * (low s, RFC 6979 nonces) over that digest as is; the channel announcement also carries a BIP340
 * signature by the funding aggregate key.
 */
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { ckbHash } from '../crypto/hash.ts';
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
