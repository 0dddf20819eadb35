/**
 * A cross-chain order and its state machine, as fnn v0.8's cch (`cch/order/state_machine.rs`,
 * `cch/actions/mod.rs`): pure functions from an order and an event to the next order and the
 * actions the shell performs on entering a status. One payment hash ties the two legs: the hub is
 * paid on the incoming side (held, not settled), pays the outgoing side, learns the preimage from
 * it, and only then settles the incoming side with that preimage.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '../codec/index.ts';

export const ORDER_STATUSES = [
  'Pending',
  'IncomingAccepted',
  'OutgoingInFlight',
  'OutgoingSuccess',
  'Success',
  'Failed',
] as const;
export type CchOrderStatus = (typeof ORDER_STATUSES)[number];

/** The incoming invoice the hub issued: a Fiber invoice (send_btc) or a BOLT 11 one (receive_btc). */
export type CchInvoice = { Fiber: string } | { Lightning: string };

export interface ScriptJson {
  code_hash: string;
  hash_type: string;
  args: string;
}

export interface CchOrder {
  /** Seconds since the epoch. */
  createdAt: number;
  expiryDeltaSeconds: number;
  wrappedBtcTypeScript: ScriptJson;
  /** The invoice the hub pays on the other network. */
  outgoingPayReq: string;
  incomingInvoice: CchInvoice;
  /** 0x + 64 hex. */
  paymentHash: string;
  paymentPreimage?: string;
  /** What the user pays, fee included (satoshis, or wrapped-BTC units: 8 decimals, 1 unit = 1 sat). */
  amountSats: bigint;
  feeSats: bigint;
  status: CchOrderStatus;
  failureReason?: string;
  /**
   * Strand: the incoming invoice was cancelled after the order failed (the payer refunded). fnn
   * leaves a failed order's incoming invoice to expire; the hub here cancels it at once.
   */
  incomingCancelled?: boolean;
  /**
   * Strand: the order failed (expired) while its outgoing payment may still be in flight: the
   * incoming side is not cancelled (a late success would have been paid for nothing) but left to
   * its own timeout, as fnn does for every failed order.
   */
  keepIncoming?: boolean;
}

/** The incoming invoice's status, in Fiber's terms (LND's states map onto them). */
export type InvoiceStatus = 'Open' | 'Received' | 'Paid' | 'Cancelled' | 'Expired';
/** The outgoing payment's status, in Fiber's terms (LND's map onto them). */
export type PaymentStatus = 'Created' | 'Inflight' | 'Success' | 'Failed';

export type CchEvent =
  | { kind: 'incoming'; status: InvoiceStatus; failureReason?: string }
  | { kind: 'outgoing'; status: PaymentStatus; preimage?: string; failureReason?: string };

export type CchAction =
  | 'TrackIncomingInvoice'
  | 'SendOutgoingPayment'
  | 'TrackOutgoingPayment'
  | 'SettleIncomingInvoice'
  /** Strand: fail the held incoming payment back once the order failed. */
  | 'CancelIncomingInvoice';

const FROM_INVOICE: Record<InvoiceStatus, CchOrderStatus> = {
  Open: 'Pending',
  Received: 'IncomingAccepted',
  Paid: 'Success',
  Cancelled: 'Failed',
  Expired: 'Failed',
};
const FROM_PAYMENT: Record<PaymentStatus, CchOrderStatus> = {
  Created: 'IncomingAccepted',
  Inflight: 'OutgoingInFlight',
  Success: 'OutgoingSuccess',
  Failed: 'Failed',
};

export class CchTransitionError extends Error {}

export const isFinal = (o: CchOrder): boolean => o.status === 'Success' || o.status === 'Failed';

function allowed(from: CchOrderStatus, to: CchOrderStatus): boolean {
  if (from === to) return true;
  if (to === 'Failed') return from !== 'Success';
  return (
    (from === 'Pending' && to === 'IncomingAccepted') ||
    // A payment that succeeds at once skips OutgoingInFlight.
    (from === 'IncomingAccepted' && (to === 'OutgoingInFlight' || to === 'OutgoingSuccess')) ||
    (from === 'OutgoingInFlight' && to === 'OutgoingSuccess') ||
    (from === 'OutgoingSuccess' && to === 'Success')
  );
}

/**
 * Applies `event`: the new order when the status changed, `undefined` when it stays. Throws
 * CchTransitionError for a move the machine does not allow (fnn's `InvalidTransition`), a
 * success without a preimage, or a preimage that does not hash (SHA-256) to the payment hash.
 */
export function applyEvent(order: CchOrder, event: CchEvent): CchOrder | undefined {
  let to: CchOrderStatus;
  let reason: string;
  if (event.kind === 'incoming') {
    to = FROM_INVOICE[event.status];
    reason = event.failureReason ?? `incoming invoice failed: ${event.status}`;
  } else {
    if (event.status === 'Success' && !event.preimage)
      throw new CchTransitionError('Expect preimage in settled payment but missing');
    if (event.preimage && bytesToHex(sha256(hexToBytes(event.preimage))) !== order.paymentHash)
      throw new CchTransitionError('Preimage hash mismatch');
    to = FROM_PAYMENT[event.status];
    reason = event.failureReason ?? `outgoing payment failed: ${event.status}`;
  }
  if (!allowed(order.status, to))
    throw new CchTransitionError(`Invalid transition from ${order.status} to ${to}`);
  if (order.status === to) return undefined;
  const next: CchOrder = { ...order, status: to };
  if (to === 'Failed') next.failureReason = reason;
  if (event.kind === 'outgoing' && event.preimage && !order.paymentPreimage)
    next.paymentPreimage = event.preimage;
  return next;
}

/** Actions on entering the order's status (fnn's `on_entering`, plus Strand's refund on failure). */
export function actionsOnEntering(order: CchOrder): CchAction[] {
  switch (order.status) {
    case 'Pending':
      return ['TrackIncomingInvoice'];
    case 'IncomingAccepted':
      return ['SendOutgoingPayment', 'TrackOutgoingPayment'];
    case 'OutgoingInFlight':
      return ['TrackOutgoingPayment'];
    case 'OutgoingSuccess':
      return ['SettleIncomingInvoice'];
    case 'Success':
      return [];
    case 'Failed':
      return order.incomingCancelled || order.keepIncoming ? [] : ['CancelIncomingInvoice'];
  }
}

/** Actions when a service (re)starts with the order (fnn's `on_starting`). */
export function actionsOnStarting(order: CchOrder): CchAction[] {
  const actions = actionsOnEntering(order);
  if (['IncomingAccepted', 'OutgoingInFlight', 'OutgoingSuccess'].includes(order.status))
    actions.push('TrackIncomingInvoice');
  return actions;
}

/** Whether the order outlived its expiry (`created_at + expiry_delta_seconds < now`). */
export function isExpiredAt(order: CchOrder, nowSeconds: number): boolean {
  return order.createdAt + order.expiryDeltaSeconds < nowSeconds;
}

/** The order as `send_btc`, `receive_btc` and `get_cch_order` answer it (fnn's CchOrderResponse). */
export function orderToJson(o: CchOrder) {
  const hex = (v: bigint | number) => `0x${v.toString(16)}`;
  return {
    timestamp: hex(o.createdAt),
    expiry_delta_seconds: hex(o.expiryDeltaSeconds),
    wrapped_btc_type_script: o.wrappedBtcTypeScript,
    incoming_invoice: o.incomingInvoice,
    outgoing_pay_req: o.outgoingPayReq,
    payment_hash: o.paymentHash,
    amount_sats: hex(o.amountSats),
    fee_sats: hex(o.feeSats),
    status: o.status,
    // Strand: why a failed order failed (fnn keeps it in the order but does not answer it).
    failure_reason: o.failureReason ?? null,
  };
}
