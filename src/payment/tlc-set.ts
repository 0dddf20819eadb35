/**
 * The receiver's decision over the TLCs it holds for one payment hash (the reference's
 * `SettleTlcSetCommand`, pure): parts of an MPP payment are held until together they reach the
 * total their MPP records name; only then is the whole set settled (and parts beyond the total
 * refused). A set that is not complete yet stays held; a set the invoice cannot take is refused.
 */
import type { InvoiceStatus } from '../invoice/index.ts';
import type { TlcErrorCodeName } from './onion/tlc-error.ts';

export interface HeldPart {
  channelId: string;
  tlcId: bigint;
  amount: bigint;
  /** From the part's MPP record; null for a TLC without one. */
  totalAmount: bigint | null;
}

export interface TlcSetInput {
  /** The invoice's amount, if it names one. */
  invoiceAmount: bigint | undefined;
  allowMpp: boolean;
  /** The invoice's status as read now (Open past its expiry reads Expired). */
  status: InvoiceStatus;
  /** Held parts in arrival order. */
  parts: HeldPart[];
}

export interface TlcSetDecision {
  /** Parts to fail back, with the code. */
  fail: { part: HeldPart; code: TlcErrorCodeName }[];
  /** The set that pays the invoice, when complete (to fulfil once the preimage is known). */
  settle: HeldPart[];
  /** The set is complete: the invoice becomes Received. */
  complete: boolean;
}

const rejectAll = (parts: HeldPart[], code: TlcErrorCodeName): TlcSetDecision => ({
  fail: parts.map((part) => ({ part, code })),
  settle: [],
  complete: false,
});

export function decideTlcSet(input: TlcSetInput): TlcSetDecision {
  const parts = input.parts;
  switch (input.status) {
    case 'Open':
    case 'Received': // a hold set may be re-examined after it is complete
      break;
    case 'Expired':
      return rejectAll(parts, 'InvoiceExpired');
    case 'Cancelled':
      return rejectAll(parts, 'InvoiceCancelled');
    case 'Paid':
      return rejectAll(parts, 'HoldTlcTimeout');
  }
  if (input.allowMpp && parts.length > 1 && !parts.every((p) => p.totalAmount === parts[0]!.totalAmount)) {
    return rejectAll(parts, 'IncorrectOrUnknownPaymentDetails');
  }
  const want = input.invoiceAmount ?? 0n;
  if (!input.allowMpp) {
    const i = parts.findIndex((p) => p.amount >= want);
    if (i === -1) return rejectAll(parts, 'IncorrectOrUnknownPaymentDetails');
    return {
      fail: parts.filter((_, j) => j !== i).map((part) => ({ part, code: 'HoldTlcTimeout' as const })),
      settle: [parts[i]!],
      complete: true,
    };
  }
  const first = parts[0];
  if (!first) return { fail: [], settle: [], complete: false };
  const total = first.totalAmount ?? first.amount;
  if (total < want) return rejectAll(parts, 'IncorrectOrUnknownPaymentDetails');
  let accumulated = 0n;
  let keep = 0;
  for (const p of parts) {
    if (accumulated >= total) break;
    accumulated += p.amount;
    keep++;
  }
  if (accumulated < total) return { fail: [], settle: [], complete: false };
  return {
    fail: parts.slice(keep).map((part) => ({ part, code: 'HoldTlcTimeout' as const })),
    settle: parts.slice(0, keep),
    complete: true,
  };
}
