/**
 * The RPC JSON form of an invoice (`CkbInvoice`). Strand writes the seed's attribute keys
 * (PascalCase: `Description`, `ExpiryTime` {secs, nanos}, `HashAlgorithm`, `PayeePublicKey`,
 * `UdtScript`, …, see docs/protocol.md, the table of names); the `v08` style writes
 * Fiber v0.8's snake_case keys with hex quantities instead.
 */
import { bytesToHex, toHexQuantity } from '../codec/index.ts';
import { signatureWords } from './codec.ts';
import { FEATURE_BITS, type Invoice, type InvoiceAttr } from './types.ts';

export type AttrStyle = 'seed' | 'v08';

export interface InvoiceJson {
  currency: string;
  amount: string | null;
  signature: string | null;
  data: { timestamp: string; payment_hash: string; attrs: Record<string, unknown>[] };
}

const FEATURE_NAMES = new Map<number, string>(Object.entries(FEATURE_BITS).map(([name, bit]) => [bit, name]));

/** Names of the set bits, as the reference's `enabled_features_names`. */
export function featureNames(bytes: Uint8Array): string[] {
  const names: string[] = [];
  for (let bit = 0; bit < bytes.length * 8; bit++) {
    if ((bytes[bit >> 3] >> (bit & 7)) & 1) names.push(FEATURE_NAMES.get(bit) ?? 'Unknown Feature');
  }
  return names;
}

/** A u64 as a JSON number when exact, else as a decimal string (JSON numbers lose precision above 2^53). */
function jsonInteger(v: bigint): number | string {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString(10);
}

function attrJson(a: InvoiceAttr, style: AttrStyle): Record<string, unknown> {
  const seed = style === 'seed';
  switch (a.kind) {
    case 'ExpiryTime':
      return seed
        ? { ExpiryTime: { secs: jsonInteger(a.seconds), nanos: Number(a.legacyNanos ?? 0n) } }
        : { expiry_time: toHexQuantity(a.seconds) };
    case 'Description':
      return { [seed ? 'Description' : 'description']: a.value };
    case 'FinalHtlcTimeout':
      return { [seed ? 'FinalHtlcTimeout' : 'final_htlc_timeout']: toHexQuantity(a.value) };
    case 'FinalHtlcMinimumExpiryDelta':
      return {
        [seed ? 'FinalHtlcMinimumExpiryDelta' : 'final_htlc_minimum_expiry_delta']: toHexQuantity(a.value),
      };
    case 'FallbackAddr':
      return { [seed ? 'FallbackAddr' : 'fallback_addr']: a.value };
    case 'Feature':
      return { [seed ? 'Feature' : 'feature']: featureNames(a.bytes) };
    case 'UdtScript':
      return { [seed ? 'UdtScript' : 'udt_script']: bytesToHex(a.script) };
    case 'PayeePublicKey':
      return { [seed ? 'PayeePublicKey' : 'payee_public_key']: bytesToHex(a.pubkey, false) };
    case 'HashAlgorithm':
      return { [seed ? 'HashAlgorithm' : 'hash_algorithm']: a.value };
    case 'PaymentSecret':
      return { [seed ? 'PaymentSecret' : 'payment_secret']: bytesToHex(a.value) };
  }
}

export function invoiceToJson(inv: Invoice, style: AttrStyle = 'seed'): InvoiceJson {
  return {
    currency: inv.currency,
    amount: inv.amount === undefined ? null : toHexQuantity(inv.amount),
    // The reference shows the signature as the hex of its 104 u5 values, one byte each.
    signature: inv.signature ? bytesToHex(Uint8Array.from(signatureWords(inv.signature)), false) : null,
    data: {
      timestamp: toHexQuantity(inv.data.timestamp),
      payment_hash: bytesToHex(inv.data.paymentHash),
      attrs: inv.data.attrs.map((a) => attrJson(a, style)),
    },
  };
}
