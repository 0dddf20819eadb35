/**
 * `PaymentHopData`, the per-hop payload of a payment onion (`fiber.mol`;
 * `docs/reference/fiber-routing-protocol.md` §1.5), and its custom records.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import {
  type Bytes,
  byte,
  fixed,
  fixvec,
  option,
  readFixvec,
  readOption,
  readTable,
  readU32le,
  readUintLe,
  table,
  u32le,
  uintLe,
} from '../../codec/index.ts';

/** HashAlgorithm byte: CkbHash 0 (default), Sha256 1. */
export type HashAlgorithm = 0 | 1;

/** Custom record keys reserved by Fiber (user keys are 0..=65535). */
export const MPP_RECORD_KEY = 65536;
export const TRAMPOLINE_RECORD_KEY = 65537;
export const MAX_CUSTOM_RECORDS_SIZE = 2048;

export interface PaymentHopData {
  amount: bigint;
  /** Absolute expiry (ms since the epoch) of the TLC this hop must send (or receive, at the end). */
  expiry: bigint;
  paymentPreimage: Bytes | null;
  hashAlgorithm: HashAlgorithm;
  /** Funding tx of the outgoing channel; zero for the final hop. */
  fundingTxHash: Bytes;
  /** The next node, or null for the final hop. */
  nextHop: Bytes | null;
  /** key → value; encoded in ascending key order (any order decodes). */
  customRecords: Map<number, Bytes> | null;
}

export function encodeCustomRecords(records: Map<number, Bytes>): Bytes {
  const pairs = [...records.entries()].sort((a, b) => a[0] - b[0]);
  return table([table(pairs.map(([k, v]) => table([u32le(k), fixvec(v)])))]);
}

export function decodeCustomRecords(b: Bytes): Map<number, Bytes> {
  const [data] = readTable(b, 'CustomRecords', 1);
  const out = new Map<number, Bytes>();
  for (const pair of readTable(data!, 'CustomRecordData')) {
    const [k, v] = readTable(pair, 'CustomRecordDataPair', 2);
    out.set(readU32le(fixed(k!, 4, 'key'), 0), readFixvec(v!, 'value').slice());
  }
  return out;
}

export function encodeHopData(h: PaymentHopData): Bytes {
  return table([
    uintLe(h.amount, 16),
    uintLe(h.expiry, 8),
    option(h.paymentPreimage ? fixed(h.paymentPreimage, 32, 'payment_preimage') : null),
    Uint8Array.of(h.hashAlgorithm),
    fixed(h.fundingTxHash, 32, 'funding_tx_hash'),
    option(h.nextHop ? fixed(h.nextHop, 33, 'next_hop') : null),
    option(h.customRecords ? encodeCustomRecords(h.customRecords) : null),
  ]);
}

/**
 * Strict molecule decode with the reference's leniencies: an unknown hash algorithm reads as
 * CkbHash, a next hop that is not a curve point reads as none.
 */
export function decodeHopData(b: Bytes): PaymentHopData {
  const f = readTable(b, 'PaymentHopData', 7);
  const preimage = readOption(f[2]!);
  const next = readOption(f[5]!);
  const records = readOption(f[6]!);
  const alg = byte(f[3]!, 'hash_algorithm');
  return {
    amount: readUintLe(f[0]!, 16, 'amount'),
    expiry: readUintLe(f[1]!, 8, 'expiry'),
    paymentPreimage: preimage === null ? null : fixed(preimage, 32, 'payment_preimage').slice(),
    hashAlgorithm: alg === 1 ? 1 : 0,
    fundingTxHash: fixed(f[4]!, 32, 'funding_tx_hash').slice(),
    nextHop: next === null ? null : validPubkey(fixed(next, 33, 'next_hop')),
    customRecords: records === null ? null : decodeCustomRecords(records),
  };
}

function validPubkey(b: Bytes): Bytes | null {
  try {
    secp256k1.Point.fromBytes(b);
    return b.slice();
  } catch {
    return null;
  }
}

/** The MPP record (65536): `payment_secret(32) ‖ total_amount u128 LE`. */
export function encodeMppRecord(paymentSecret: Bytes, totalAmount: bigint): Bytes {
  const out = new Uint8Array(48);
  out.set(fixed(paymentSecret, 32, 'payment_secret'), 0);
  out.set(uintLe(totalAmount, 16), 32);
  return out;
}

export function decodeMppRecord(value: Bytes): { paymentSecret: Bytes; totalAmount: bigint } | null {
  if (value.length !== 48) return null;
  return {
    paymentSecret: value.slice(0, 32),
    totalAmount: readUintLe(value.subarray(32), 16, 'total_amount'),
  };
}
