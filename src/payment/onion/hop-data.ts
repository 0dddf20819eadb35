/**
 * `PaymentHopData`, the per-hop payload of a payment onion (`fiber.mol`;
 * `docs/reference/fiber-routing-protocol.md` §1.5), and its custom records.
 */
import { type Bytes, mol } from '../../codec/index.ts';
import { curve } from '../../crypto/index.ts';

/** HashAlgorithm byte: CkbHash 0 (default), Sha256 1. */
export type HashAlgorithm = 0 | 1;

/** Custom record keys reserved by Fiber (user keys are 0..=65535). */
export const MPP_RECORD_KEY = 65536;
export const TRAMPOLINE_RECORD_KEY = 65537;
export const MAX_CUSTOM_RECORDS_SIZE = 2048;

/** The hash algorithm byte, read leniently as the reference does: anything but 1 is CkbHash. */
export const HashAlgorithmByte: mol.Schema<HashAlgorithm> = mol.map(
  mol.u8,
  (b): HashAlgorithm => (b === 1 ? 1 : 0),
  (a: HashAlgorithm) => a,
);

/** key → value; encoded in ascending key order (any order decodes). */
export const CustomRecords: mol.Schema<Map<number, Bytes>> = mol.map(
  mol.table('CustomRecords', {
    data: mol.dynvec(
      'CustomRecordData',
      mol.table('CustomRecordDataPair', { key: mol.u32, value: mol.bytes() }),
    ),
  }),
  (r) => new Map(r.data.map((p) => [p.key, p.value])),
  (m: Map<number, Bytes>) => ({
    data: [...m.entries()].sort((a, b) => a[0] - b[0]).map(([key, value]) => ({ key, value })),
  }),
);

/** A next hop that is not a curve point reads as none, as in the reference. */
const NextHop: mol.Schema<Bytes | null> = mol.map(
  mol.option(mol.byteArray(33)),
  (b) => b && validPubkey(b),
  (b) => b,
);

const PaymentHopData = mol.table('PaymentHopData', {
  amount: mol.u128,
  /** Absolute expiry (ms since the epoch) of the TLC this hop must send (or receive, at the end). */
  expiry: mol.u64,
  paymentPreimage: mol.option(mol.byteArray(32)),
  hashAlgorithm: HashAlgorithmByte,
  /** Funding tx of the outgoing channel; zero for the final hop. */
  fundingTxHash: mol.byteArray(32),
  /** The next node, or null for the final hop. */
  nextHop: NextHop,
  customRecords: mol.option(CustomRecords),
});
export type PaymentHopData = mol.Infer<typeof PaymentHopData>;

export const encodeCustomRecords = (records: Map<number, Bytes>): Bytes => CustomRecords.encode(records);
export const decodeCustomRecords = (b: Bytes): Map<number, Bytes> => CustomRecords.decode(b);
export const encodeHopData = (h: PaymentHopData): Bytes => PaymentHopData.encode(h);
/** Strict molecule decode with the reference's leniencies (hash algorithm, next hop). */
export const decodeHopData = (b: Bytes): PaymentHopData => PaymentHopData.decode(b);

function validPubkey(b: Bytes): Bytes | null {
  return curve().isPoint(b) ? b : null;
}

/** The MPP record (65536): `payment_secret(32) ‖ total_amount u128 LE`. */
const MppRecord = mol.struct('MppRecord', { paymentSecret: mol.byteArray(32), totalAmount: mol.u128 });

export function encodeMppRecord(paymentSecret: Bytes, totalAmount: bigint): Bytes {
  return MppRecord.encode({ paymentSecret, totalAmount });
}

export function decodeMppRecord(value: Bytes): { paymentSecret: Bytes; totalAmount: bigint } | null {
  return value.length === MppRecord.size ? MppRecord.decode(value) : null;
}
