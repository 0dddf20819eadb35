/**
 * Block headers and blocks as CKB encodes and hashes them: the 192-byte raw header plus a 16-byte
 * nonce, hashed with ckb blake2b; `transactions_root` over the complete binary Merkle tree (CBMT)
 * of tx hashes and of witness hashes.
 */
import { ccc } from '@ckb-ccc/core';
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { ckbHash } from '../crypto/index.ts';
import { txHashOf } from './txcache.ts';

export const ZERO_HASH = `0x${'00'.repeat(32)}` as ccc.Hex;

export interface Header {
  version: number;
  compactTarget: number;
  /** Milliseconds. */
  timestamp: bigint;
  number: bigint;
  /** EpochNumberWithFraction full value (`number | index << 24 | length << 40`). */
  epoch: bigint;
  parentHash: ccc.Hex;
  transactionsRoot: ccc.Hex;
  proposalsHash: ccc.Hex;
  extraHash: ccc.Hex;
  dao: ccc.Hex;
  nonce: bigint;
}

export interface Block {
  header: Header;
  hash: ccc.Hex;
  transactions: ccc.Transaction[];
}

export function headerBytes(h: Header): Uint8Array {
  const b = Buffer.alloc(208);
  b.writeUInt32LE(h.version, 0);
  b.writeUInt32LE(h.compactTarget, 4);
  b.writeBigUInt64LE(h.timestamp, 8);
  b.writeBigUInt64LE(h.number, 16);
  b.writeBigUInt64LE(h.epoch, 24);
  b.set(hexToBytes(h.parentHash, 'parent_hash', 32), 32);
  b.set(hexToBytes(h.transactionsRoot, 'transactions_root', 32), 64);
  b.set(hexToBytes(h.proposalsHash, 'proposals_hash', 32), 96);
  b.set(hexToBytes(h.extraHash, 'extra_hash', 32), 128);
  b.set(hexToBytes(h.dao, 'dao', 32), 160);
  b.writeBigUInt64LE(h.nonce & 0xffff_ffff_ffff_ffffn, 192);
  b.writeBigUInt64LE(h.nonce >> 64n, 200);
  return new Uint8Array(b);
}

export function headerHash(h: Header): ccc.Hex {
  return bytesToHex(ckbHash(headerBytes(h))) as ccc.Hex;
}

/** CKB's CBMT root: leaves at the end of a 2n−1 array, parents = H(left ‖ right); empty → zero. */
export function merkleRoot(leaves: Uint8Array[]): Uint8Array {
  const n = leaves.length;
  if (n === 0) return new Uint8Array(32);
  const nodes: Uint8Array[] = new Array(2 * n - 1);
  for (let i = 0; i < n; i++) nodes[n - 1 + i] = leaves[i] as Uint8Array;
  for (let i = n - 2; i >= 0; i--)
    nodes[i] = ckbHash(nodes[2 * i + 1] as Uint8Array, nodes[2 * i + 2] as Uint8Array);
  return nodes[0] as Uint8Array;
}

export function transactionsRoot(txs: ccc.Transaction[]): ccc.Hex {
  const hashes = txs.map((tx) => ccc.bytesFrom(txHashOf(tx)));
  const witnessHashes = txs.map((tx) => ccc.bytesFrom(tx.hashFull()));
  return bytesToHex(ckbHash(merkleRoot(hashes), merkleRoot(witnessHashes))) as ccc.Hex;
}

/** Packs a block the way `Block` is serialised (for its size in `get_block` callers, not hashed). */
export function makeBlock(header: Omit<Header, 'transactionsRoot'>, transactions: ccc.Transaction[]): Block {
  const full: Header = { ...header, transactionsRoot: transactionsRoot(transactions) };
  return { header: full, hash: headerHash(full), transactions };
}
