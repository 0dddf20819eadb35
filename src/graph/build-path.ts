/**
 * A route through hops the caller names (`build_router`), priced as the path finder prices edges.
 */
import type { PaymentHistory } from './history.ts';
import {
  DEFAULT_FINAL_TLC_EXPIRY_DELTA,
  distanceOf,
  edgeWeight,
  forwardFee,
  MIN_PROBABILITY,
  pathError,
  type RouterHop,
  type RoutingGraph,
} from './pathfind.ts';

export interface HopRequire {
  pubkey: string;
  /** A specific channel (OutPointHex), or null for the best channel between the pair. */
  channelOutpoint: string | null;
}

export interface BuildPathRequest {
  source: string;
  /** The hops after the source; the last is the target. */
  hops: HopRequire[];
  /** What the target receives; 1 when absent (the minimum routable amount). */
  amount?: bigint | null;
  finalTlcExpiryDelta?: number | null;
  udt?: string | null;
  history?: PaymentHistory;
  now?: number;
}

/**
 * The reference's `build_path` (`build_router`): a route through the given hops, choosing per pair
 * the channel of least distance among those that can carry the amount (a given channel is taken
 * as routable). Deliberate difference: the reference adds each hop's accumulated expiry instead of
 * its delta (`agg_tlc_expiry += edge.incoming_tlc_expiry`, doubling it per hop); here the delta
 * is added, as `find_path` does.
 */
export function buildPath(graph: RoutingGraph, req: BuildPathRequest): RouterHop[] {
  const amount = req.amount ?? 1n;
  if (amount === 0n) throw pathError('Amount', 'amount must be greater than 0');
  const hops = [...req.hops].reverse();
  const udt = req.udt ?? null;
  const now = req.now ?? Date.now();
  let aggAmount = amount;
  let aggExpiry = req.finalTlcExpiryDelta ?? DEFAULT_FINAL_TLC_EXPIRY_DELTA;
  const path: RouterHop[] = [];
  for (const [i, cur] of hops.entries()) {
    const prev = hops[i + 1]?.pubkey ?? req.source;
    let found: { distance: bigint; fee: bigint; delta: number; hop: RouterHop } | null = null;
    for (const e of graph.inbounds(cur.pubkey)) {
      if (e.from !== prev || e.udt !== udt) continue;
      if (cur.channelOutpoint !== null && cur.channelOutpoint !== e.outpoint) continue;
      const initial = e.from === req.source;
      const fee = initial ? 0n : forwardFee(aggAmount, e.feeRate);
      if (fee === null) throw pathError('Overflow', 'calculate_tlc_forward_fee error');
      const send = aggAmount + fee;
      if (send > e.capacity) continue;
      if (e.outboundLiquidity !== null && send > e.outboundLiquidity) continue;
      const delta = initial ? 0 : e.tlcExpiryDelta;
      const incoming = aggExpiry + delta;
      const p =
        cur.channelOutpoint !== null
          ? 1.0
          : (req.history?.evalProbability(e.from, e.to, e.outpoint, send, e.capacity, now) ?? 1.0);
      // As the reference: the weight takes the accumulated expiry, and low probabilities are floored.
      const distance = distanceOf(Math.max(p, MIN_PROBABILITY), edgeWeight(send, fee, incoming));
      if (found && distance >= found.distance) continue;
      found = {
        distance,
        fee,
        delta,
        hop: {
          target: e.to,
          channelOutpoint: e.outpoint,
          amountReceived: aggAmount,
          incomingTlcExpiry: aggExpiry,
        },
      };
    }
    if (!found) throw pathError('NoPathFound');
    aggExpiry += found.delta;
    aggAmount = found.hop.amountReceived + found.fee;
    path.push(found.hop);
  }
  return path.reverse();
}
