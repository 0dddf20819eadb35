/**
 * The invoice model (`docs/reference/fiber-internals.md` §1). Amounts and times are bigints:
 * `timestamp` in milliseconds since the epoch (u128), `ExpiryTime` in seconds (u64),
 * `FinalHtlcMinimumExpiryDelta` in milliseconds (u64).
 */

export const CURRENCIES = ['Fibb', 'Fibt', 'Fibd'] as const;
export type Currency = (typeof CURRENCIES)[number];

/** Molecule byte of each currency in `RawCkbInvoice` and the hrp prefix. */
export const CURRENCY_PREFIX: Record<Currency, string> = { Fibb: 'fibb', Fibt: 'fibt', Fibd: 'fibd' };

export type HashAlgorithm = 'ckb_hash' | 'sha256';

/** Attributes, in the molecule union's order (item ids 0..9). */
export type InvoiceAttr =
  /**
   * `legacyNanos` is set when the invoice was decoded from the Fiber ≤ v0.4 layout, where this
   * attribute was a 16-byte Duration {seconds, nanos}; re-encoding then keeps that layout (so the
   * string stays byte-identical). New invoices use the v0.5+ layout: 8 bytes of seconds.
   */
  | { kind: 'ExpiryTime'; seconds: bigint; legacyNanos?: bigint }
  | { kind: 'Description'; value: string }
  /** Deprecated since Fiber v0.6; decoded, never built. */
  | { kind: 'FinalHtlcTimeout'; value: bigint }
  | { kind: 'FinalHtlcMinimumExpiryDelta'; value: bigint }
  | { kind: 'FallbackAddr'; value: string }
  /** Feature bit vector, bit i in byte i/8 at position i%8. */
  | { kind: 'Feature'; bytes: Uint8Array }
  /** Molecule-encoded CKB Script. */
  | { kind: 'UdtScript'; script: Uint8Array }
  /** 33-byte compressed secp256k1 key. */
  | { kind: 'PayeePublicKey'; pubkey: Uint8Array }
  | { kind: 'HashAlgorithm'; value: HashAlgorithm }
  | { kind: 'PaymentSecret'; value: Uint8Array };

export type AttrKind = InvoiceAttr['kind'];

export const ATTR_KINDS: AttrKind[] = [
  'ExpiryTime',
  'Description',
  'FinalHtlcTimeout',
  'FinalHtlcMinimumExpiryDelta',
  'FallbackAddr',
  'Feature',
  'UdtScript',
  'PayeePublicKey',
  'HashAlgorithm',
  'PaymentSecret',
];

export interface InvoiceData {
  timestamp: bigint;
  paymentHash: Uint8Array;
  attrs: InvoiceAttr[];
}

export interface Invoice {
  currency: Currency;
  /** Absent when the invoice names no amount (hrp without digits). */
  amount?: bigint;
  /** 65 bytes: compact r‖s and the recovery id (0..3). Absent for unsigned invoices. */
  signature?: Uint8Array;
  data: InvoiceData;
}

/** Feature bits that invoices set (the optional, odd bits). */
export const FEATURE_BITS = {
  GOSSIP_QUERIES_REQUIRED: 0,
  GOSSIP_QUERIES_OPTIONAL: 1,
  BASIC_MPP_REQUIRED: 2,
  BASIC_MPP_OPTIONAL: 3,
  TRAMPOLINE_ROUTING_REQUIRED: 4,
  TRAMPOLINE_ROUTING_OPTIONAL: 5,
} as const;

export function findAttr<K extends AttrKind>(
  inv: Invoice,
  kind: K,
): Extract<InvoiceAttr, { kind: K }> | undefined {
  return inv.data.attrs.find((a) => a.kind === kind) as Extract<InvoiceAttr, { kind: K }> | undefined;
}

export function hashAlgorithmOf(inv: Invoice): HashAlgorithm {
  return findAttr(inv, 'HashAlgorithm')?.value ?? 'ckb_hash';
}

export function featureBitSet(bytes: Uint8Array, bit: number): boolean {
  const idx = bit >> 3;
  return idx < bytes.length && ((bytes[idx] >> (bit & 7)) & 1) === 1;
}

/** Whether a feature is supported (either its required or its optional bit set), as the reference. */
export function supportsFeature(bytes: Uint8Array, optionalBit: number): boolean {
  return featureBitSet(bytes, optionalBit) || featureBitSet(bytes, optionalBit ^ 1);
}

export function allowsMpp(inv: Invoice): boolean {
  return inv.data.attrs.some(
    (a) => a.kind === 'Feature' && supportsFeature(a.bytes, FEATURE_BITS.BASIC_MPP_OPTIONAL),
  );
}

export function allowsTrampoline(inv: Invoice): boolean {
  return inv.data.attrs.some(
    (a) => a.kind === 'Feature' && supportsFeature(a.bytes, FEATURE_BITS.TRAMPOLINE_ROUTING_OPTIONAL),
  );
}

/** Expiry instant in ms, or undefined for an invoice that never expires. */
export function expiresAtMs(inv: Invoice): bigint | undefined {
  const e = findAttr(inv, 'ExpiryTime');
  return e ? inv.data.timestamp + e.seconds * 1000n + (e.legacyNanos ?? 0n) / 1_000_000n : undefined;
}

/** The reference's rule: expired when `timestamp_ms + expiry_s * 1000 < now`. */
export function isExpired(inv: Invoice, nowMs: number | bigint): boolean {
  const at = expiresAtMs(inv);
  return at !== undefined && at < BigInt(nowMs);
}
