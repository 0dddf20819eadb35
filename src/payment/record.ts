/**
 * What the RPC and the store-change feed say of a payment: `PaymentRecord` (`send_payment`,
 * `get_payment`, `list_payments`), from a live session or a settled payment alike (the same
 * `PaymentView`), and the `payment_session` payload of a `PutPaymentSession` change.
 */
import { toHexQuantity } from '../codec/index.ts';
import { sessionRouteOf } from './onion/route-hops.ts';
import type { PaymentSession, PaymentStatus } from './session.ts';
import type { PaymentView } from './settled.ts';
import { lastErrorCodeOf } from './trampoline.ts';

export interface PaymentRecord {
  payment_hash: string;
  status: PaymentStatus;
  created_at: string;
  last_updated_at: string;
  failed_error: string | null;
  fee: string;
  custom_records: Record<string, string> | null;
  /** Per attempt not failed, its route (`SessionRoute`: the reference's debug-build field). */
  routers: { nodes: { pubkey: string; amount: string; channel_outpoint: string }[] }[];
}

export function paymentRecord(v: PaymentView, source?: string): PaymentRecord {
  return {
    payment_hash: v.paymentHash,
    status: v.status,
    created_at: toHexQuantity(v.createdAt),
    last_updated_at: toHexQuantity(v.lastUpdatedAt),
    failed_error: v.failedError,
    fee: toHexQuantity(v.fee),
    custom_records: v.customRecords,
    routers: source
      ? v.routes.map((route) => ({
          nodes: sessionRouteOf(
            source,
            route.map((h) => ({ ...h, incomingTlcExpiry: 0 })),
            // What the target receives from this attempt (`partAmount`).
            route.at(-1)?.amountReceived ?? 0n,
          ).map((n) => ({
            pubkey: n.pubkey,
            amount: toHexQuantity(n.amount),
            channel_outpoint: n.channelOutpoint,
          })),
        }))
      : [],
  };
}

/** The `payment_session` payload of a store change (plain JSON numbers, as the reference). */
export function sessionChange(s: PaymentSession): unknown {
  return {
    status: s.status,
    created_at: s.createdAt,
    last_updated_at: s.lastUpdatedAt,
    last_error: s.failedError,
    last_error_code: lastErrorCodeOf(s),
    try_limit: s.tryLimit,
    request: {
      target_pubkey: s.request.targetPubkey,
      amount: s.request.amount.toString(),
      payment_hash: s.request.paymentHash,
      invoice: s.request.invoice,
      keysend: s.request.keysend,
      max_parts: Number(s.request.maxParts),
      allow_mpp: !!s.request.allowMpp,
      dry_run: s.request.dryRun,
    },
  };
}
