/**
 * From a route to the per-hop onion payloads (`docs/reference/fiber-routing-protocol.md`
 * §2.2, `build_router_from_path`): absolute expiries = now + relative expiry + one random privacy
 * offset shared by all hops; `hops[0]` is the sender's own instruction for its first AddTlc.
 */
import { randomInt } from 'node:crypto';
import { bytesToHex, hexToBytes } from '../../codec/index.ts';
import type { PaymentFailure, SessionRouteNode } from '../../graph/index.ts';
import {
  DEFAULT_TLC_EXPIRY_DELTA,
  encodeOutPoint,
  MAX_PAYMENT_TLC_EXPIRY_LIMIT,
  type RouterHop,
} from '../../graph/index.ts';
import type { HashAlgorithm, PaymentHopData } from './hop-data.ts';
import { TLC_ERROR_CODES, TLC_ERROR_FLAGS, type TlcErr } from './tlc-error.ts';

export interface BuildHopsOptions {
  /** What the final node receives. */
  amount: bigint;
  finalTlcExpiryDelta: number;
  hashAlgorithm?: HashAlgorithm;
  /** Keysend preimage for the final hop. */
  paymentPreimage?: Uint8Array | null;
  customRecords?: Map<number, Uint8Array> | null;
  /** ms since the epoch. */
  now?: number;
  /** The privacy offset R (ms); random multiple of 4 h unless given. */
  randomOffset?: number;
}

/** R = k × 4 h with k uniform in [1, max(m, 2)), m = (14 d − first incoming expiry) / 4 h. */
export function randomExpiryOffset(route: RouterHop[]): number {
  const first = route[0]?.incomingTlcExpiry ?? 0;
  const m = Math.floor(Math.max(0, MAX_PAYMENT_TLC_EXPIRY_LIMIT - first) / DEFAULT_TLC_EXPIRY_DELTA);
  return randomInt(1, Math.max(m, 2)) * DEFAULT_TLC_EXPIRY_DELTA;
}

/** The 32-byte tx hash of an OutPointHex. */
export function outpointTxHash(outpoint: string): Uint8Array {
  return hexToBytes(outpoint, 'channel_outpoint', 36).slice(0, 32);
}

export function buildPaymentHops(route: RouterHop[], o: BuildHopsOptions): PaymentHopData[] {
  if (route.length === 0) throw new Error('route must not be empty');
  const targets = new Set(route.map((r) => r.target));
  if (targets.size !== route.length) throw new Error('route repeats a node');
  const now = o.now ?? Date.now();
  const R = o.randomOffset ?? randomExpiryOffset(route);
  const hashAlgorithm = o.hashAlgorithm ?? 0;
  const hops: PaymentHopData[] = route.map((r) => ({
    amount: r.amountReceived,
    expiry: BigInt(now + r.incomingTlcExpiry + R),
    paymentPreimage: null,
    hashAlgorithm,
    fundingTxHash: outpointTxHash(r.channelOutpoint),
    nextHop: hexToBytes(r.target, 'target', 33),
    customRecords: null,
  }));
  hops.push({
    amount: o.amount,
    expiry: BigInt(now + o.finalTlcExpiryDelta + R),
    paymentPreimage: o.paymentPreimage ?? null,
    hashAlgorithm,
    fundingTxHash: new Uint8Array(32),
    nextHop: null,
    customRecords: o.customRecords ?? null,
  });
  return hops;
}

/** The total forwarding fee of a route paying `amount` to its last hop. */
export function routeFee(route: RouterHop[], amount: bigint): bigint {
  const first = route[0];
  return first ? first.amountReceived - amount : 0n;
}

const ZERO_OUTPOINT = `0x${'00'.repeat(36)}`;

/**
 * The route as the payment history records it (`SessionRoute::new`): the source, then each hop's
 * node; node i names the channel to node i+1 and the amount node i+1 receives; the target ends
 * with a zero outpoint and the final amount.
 */
export function sessionRouteOf(source: string, route: RouterHop[], finalAmount: bigint): SessionRouteNode[] {
  const nodes: SessionRouteNode[] = [];
  let from = source;
  for (const hop of route) {
    nodes.push({
      pubkey: from,
      channelOutpoint: outpointWithIndexZero(hop.channelOutpoint),
      amount: hop.amountReceived,
    });
    from = hop.target;
  }
  nodes.push({ pubkey: from, channelOutpoint: ZERO_OUTPOINT, amount: finalAmount });
  return nodes;
}

/** A payment hop names its channel by funding tx hash only; the index is always 0. */
function outpointWithIndexZero(outpoint: string): string {
  return `${outpoint.slice(0, 2 + 64)}00000000`;
}

/** A decoded TlcErr in the form `GraphService.recordPaymentFailure` takes. */
export function paymentFailureOf(e: TlcErr): PaymentFailure {
  const extra = e.extra;
  return {
    code: e.code,
    nodeId: extra ? bytesToHex(extra.nodeId, false) : null,
    channelOutpoint:
      extra?.type === 'ChannelFailed' ? bytesToHex(encodeOutPoint(extra.channelOutpoint)) : null,
    channelUpdate: extra?.type === 'ChannelFailed' ? extra.channelUpdate : null,
    updateFlag: (TLC_ERROR_CODES[e.code] & TLC_ERROR_FLAGS.UPDATE) !== 0,
  };
}
