/**
 * Molecule `RawInvoiceData` (Fiber `invoice.mol`) as a schema of `codec/schema.ts`, which verifies
 * as the Rust generated code does (`from_slice`, non-compatible mode: exact field counts, exact
 * struct sizes, ordered offsets, known union ids) and reports with molecule's own wording. The
 * attribute conversions that panic in the reference (invalid UTF-8, invalid public key) run after
 * the whole structure is verified, as typed errors.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { MoleculeError, mol } from '../codec/index.ts';
import { InvoiceError, moleculeError } from './errors.ts';
import type { InvoiceAttr, InvoiceData } from './types.ts';

const ExpirySeconds = mol.uint(8, 'ExpiryTime');
/**
 * Fiber ≤ v0.4 wrote a Duration {seconds: Uint64, nanos: Uint64} (fnn v0.8 refuses it); real
 * invoices of that era circulate (the testnet guide's examples), so Strand reads them.
 */
const ExpiryTime = mol.foreign(
  'ExpiryTime',
  (e: { seconds: bigint; legacyNanos?: bigint }) =>
    e.legacyNanos === undefined
      ? ExpirySeconds.encode(e.seconds)
      : LegacyDuration.encode({ seconds: e.seconds, nanos: e.legacyNanos }),
  (b) => {
    if (b.length !== 16) return { seconds: ExpirySeconds.decode(b) };
    const d = LegacyDuration.decode(b);
    return { seconds: d.seconds, legacyNanos: d.nanos };
  },
);
const LegacyDuration = mol.struct('Duration', { seconds: mol.u64, nanos: mol.u64 });

/** The script bytes kept as they are, once verified as a `Script`. */
const ScriptBytes = mol.foreign(
  'Script',
  (b: Uint8Array) => b,
  (b) => b,
  mol.Script,
);

const bytesIn = (name: string) => mol.table(name, { value: mol.bytes() });

const Attr = mol.union('InvoiceAttr', {
  ExpiryTime,
  Description: bytesIn('Description'),
  FinalHtlcTimeout: mol.uint(8, 'FinalHtlcTimeout'),
  FinalHtlcMinimumExpiryDelta: mol.uint(8, 'FinalHtlcMinimumExpiryDelta'),
  FallbackAddr: bytesIn('FallbackAddr'),
  Feature: bytesIn('Feature'),
  UdtScript: mol.table('UdtScript', { value: ScriptBytes }),
  PayeePublicKey: bytesIn('PayeePublicKey'),
  HashAlgorithm: mol.byteNamed('HashAlgorithm'),
  PaymentSecret: mol.byteArray(32, 'PaymentSecret'),
});
type RawAttr = mol.Infer<typeof Attr>;

const RawInvoiceData = mol.table('RawInvoiceData', {
  timestamp: mol.u128,
  paymentHash: mol.byteArray(32, 'PaymentHash'),
  attrs: mol.dynvec('InvoiceAttrsVec', Attr),
});

const utf8 = new TextEncoder();

function rawAttr(attr: InvoiceAttr): RawAttr {
  switch (attr.kind) {
    case 'ExpiryTime':
      return { type: 'ExpiryTime', value: attr };
    case 'FinalHtlcTimeout':
    case 'FinalHtlcMinimumExpiryDelta':
      return { type: attr.kind, value: attr.value };
    case 'Description':
    case 'FallbackAddr':
      return { type: attr.kind, value: { value: utf8.encode(attr.value) } };
    case 'Feature':
      return { type: 'Feature', value: { value: attr.bytes } };
    case 'UdtScript':
      return { type: 'UdtScript', value: { value: attr.script } };
    case 'PayeePublicKey':
      return { type: 'PayeePublicKey', value: { value: attr.pubkey } };
    case 'HashAlgorithm':
      return { type: 'HashAlgorithm', value: attr.value === 'sha256' ? 1 : 0 };
    case 'PaymentSecret':
      return { type: 'PaymentSecret', value: attr.value };
  }
}

export function encodeRawInvoiceData(data: InvoiceData): Uint8Array {
  return RawInvoiceData.encode({ ...data, attrs: data.attrs.map(rawAttr) });
}

/** Verifies a molecule `Script` table (code_hash, hash_type, args) and returns it unchanged. */
export function verifyScript(b: Uint8Array): Uint8Array {
  asInvoiceError(() => mol.Script.decode(b));
  return b;
}

function asInvoiceError<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof MoleculeError) throw moleculeError(e.message);
    throw e;
  }
}

const utf8Strict = new TextDecoder('utf-8', { fatal: true });

function text(kind: string, b: Uint8Array): string {
  try {
    return utf8Strict.decode(b);
  } catch {
    throw new InvoiceError('InvalidUtf8', `${kind} is not valid UTF-8`);
  }
}

/** Phase 2, after the whole structure is verified: the conversions the reference does. */
function toAttr(a: RawAttr): InvoiceAttr {
  switch (a.type) {
    case 'ExpiryTime':
      return { kind: 'ExpiryTime', ...a.value };
    case 'FinalHtlcTimeout':
    case 'FinalHtlcMinimumExpiryDelta':
      return { kind: a.type, value: a.value };
    case 'Description':
    case 'FallbackAddr':
      return { kind: a.type, value: text(a.type, a.value.value) };
    case 'Feature':
      return { kind: 'Feature', bytes: a.value.value };
    case 'UdtScript':
      return { kind: 'UdtScript', script: a.value.value };
    case 'PayeePublicKey': {
      const pubkey = compressedPubkey(a.value.value);
      if (!pubkey) throw new InvoiceError('InvalidPubkey', 'PayeePublicKey is not a valid public key');
      return { kind: 'PayeePublicKey', pubkey };
    }
    case 'HashAlgorithm':
      // Unknown algorithm bytes decode as the default (ckb hash), as the reference does.
      return { kind: 'HashAlgorithm', value: a.value === 1 ? 'sha256' : 'ckb_hash' };
    case 'PaymentSecret':
      return { kind: 'PaymentSecret', value: a.value };
  }
}

/**
 * Accepts compressed (33) or uncompressed (65) keys, as secp256k1 `PublicKey::from_slice`, and
 * returns the compressed form (the reference re-encodes the key compressed).
 */
function compressedPubkey(key: Uint8Array): Uint8Array | undefined {
  if (key.length !== 33 && key.length !== 65) return undefined;
  try {
    return secp256k1.Point.fromBytes(key).toBytes(true);
  } catch {
    return undefined;
  }
}

export function decodeRawInvoiceData(b: Uint8Array): InvoiceData {
  const raw = asInvoiceError(() => RawInvoiceData.decode(b));
  return { timestamp: raw.timestamp, paymentHash: raw.paymentHash, attrs: raw.attrs.map(toAttr) };
}
