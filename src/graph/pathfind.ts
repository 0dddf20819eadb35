/**
 * The reference's path-finding (`docs/reference/fiber-routing-protocol.md` §4): Dijkstra
 * from the target back to the source over the enabled channel directions, each edge priced by the
 * sending node's own ChannelUpdate (fee ceil(amount × ppm / 1e6) and expiry delta, both zero on
 * the source's first hop), with capacity / liquidity / tlc-min / expiry / fee-cap filters, and a
 * distance that weighs fees, time-lock risk and the success probability from payment history.
 * Pure: the graph, history, time and in-flight statistics are inputs.
 */
import type { DetailsOf } from '../codec/index.ts';
import { GraphError, type GraphErrorCode, type GraphErrorDetails } from './errors.ts';
import { f64ToU128, type PaymentHistory } from './history.ts';
import { NodeHeap } from './node-heap.ts';

export const MAX_PAYMENT_TLC_EXPIRY_LIMIT = 1_209_600_000;
/** 4 h: the largest per-hop delta a route accepts, and the unit of the time-lock penalty. */
export const DEFAULT_TLC_EXPIRY_DELTA = 14_400_000;
export const DEFAULT_FINAL_TLC_EXPIRY_DELTA = 86_400_000;
export const MIN_PROBABILITY = 0.01;
/** 100 × (1/(0.5 − 0.9/2) − 1), computed the same way as the reference (1900.0000000000005). */
const PROBABILITY_PENALTY = 100 * (1.0 / (0.5 - 0.9 / 2.0) - 1.0);
const U128_MAX = (1n << 128n) - 1n;

/** One enabled direction of a channel, priced by `from`'s ChannelUpdate. */
export interface RouteEdge {
  from: string;
  to: string;
  /** OutPointHex (`0x` + 72 hex). */
  outpoint: string;
  capacity: bigint;
  /** Canonical key of the channel's UDT type script (`udtKey`), null for CKB. */
  udt: string | null;
  feeRate: bigint;
  tlcExpiryDelta: number;
  tlcMinimumValue: bigint;
  /** Known only for the node's own channels. */
  outboundLiquidity: bigint | null;
  /** Newest update time of the channel (either direction), for tie ordering. */
  lastUpdate: bigint;
}

/** What the path finder needs from a graph. */
export interface RoutingGraph {
  /**
   * Enabled edges into `node`, in the reference's order (`compareEdges`); the array is read
   * only, and may be a cached one.
   */
  inbounds(node: string): RouteEdge[];
  /** Enabled edges out of `node`. */
  outbounds(node: string): RouteEdge[];
  /** `from`'s direction of a channel, enabled or not (hop hints and explicit routes). */
  edge(outpoint: string, from: string): { edge: RouteEdge; enabled: boolean } | undefined;
  /** Unknown nodes count as supporting MPP. */
  supportsMpp(node: string): boolean;
}

/** Amounts planned or in flight per channel (MPP parts of one session). */
export interface ChannelStats {
  sentAmount(outpoint: string, from: string): bigint;
  pendingCount(outpoint: string): number;
}

export interface HopHint {
  /** The node at the other end of the private channel (it sends to the target). */
  pubkey: string;
  channelOutpoint: string;
  feeRate: bigint;
  tlcExpiryDelta: number;
}

export interface RouterHop {
  /** The node receiving this hop's TLC. */
  target: string;
  channelOutpoint: string;
  amountReceived: bigint;
  /** Relative expiry (ms) of the TLC the target receives, before `now` and the random offset. */
  incomingTlcExpiry: number;
}

export interface FindRouteRequest {
  source: string;
  target: string;
  /** null: search the route of maximum capacity. */
  amount: bigint | null;
  maxFeeAmount?: bigint | null;
  udt?: string | null;
  finalTlcExpiryDelta: number;
  tlcExpiryLimit: number;
  allowSelfPayment?: boolean;
  hopHints?: HopHint[];
  allowMpp?: boolean;
  history?: PaymentHistory;
  stats?: ChannelStats;
  /** ms since the epoch, for history decay. */
  now?: number;
}

export type PathFindErrorKind = Exclude<GraphErrorCode, 'NodeNameTooLong'>;

/** Messages are the reference's `PathFindError` Display texts. */
export class PathFindError extends GraphError<PathFindErrorKind> {
  constructor(
    kind: PathFindErrorKind,
    message: string,
    details?: DetailsOf<GraphErrorDetails, PathFindErrorKind>,
  ) {
    super(kind, message, details);
  }

  /** The code under its former name. */
  get kind(): PathFindErrorKind {
    return this.code;
  }
}

const PREFIX: Record<PathFindErrorKind, string> = {
  NoPathFound: 'PathFind error: no path found',
  Amount: 'Graph error: ',
  FeatureNotEnabled: 'Feature not enabled: ',
  InsufficientBalance: 'Insufficient balance: ',
  TlcMinValue: 'Path find failed for min_tlc_value error: ',
  Overflow: 'Overflow error: ',
};

export function pathError(kind: PathFindErrorKind, detail = ''): PathFindError {
  return new PathFindError(kind, PREFIX[kind] + detail);
}

/** The forwarding fee: ceil(amount × ppm / 1e6); null when it overflows u128. */
export function forwardFee(amount: bigint, feeRate: bigint): bigint | null {
  const product = amount * feeRate;
  if (product > U128_MAX) return null;
  return (product + 999_999n) / 1_000_000n;
}

/** The reference's `get_node_inbounds` order: liquidity desc (unknown last), capacity desc, update desc. */
export function compareEdges(a: RouteEdge, b: RouteEdge): number {
  if (a.outboundLiquidity !== b.outboundLiquidity) {
    if (a.outboundLiquidity === null) return 1;
    if (b.outboundLiquidity === null) return -1;
    return a.outboundLiquidity > b.outboundLiquidity ? -1 : 1;
  }
  if (a.capacity !== b.capacity) return a.capacity > b.capacity ? -1 : 1;
  if (a.lastUpdate !== b.lastUpdate) return a.lastUpdate > b.lastUpdate ? -1 : 1;
  return 0;
}

interface HeapNode {
  node: string;
  weight: bigint;
  distance: bigint;
  amountToSend: bigint;
  tlcMinValue: bigint;
  probability: number;
  incomingTlcExpiry: number;
  pendingCount: number;
  next: RouterHop | null;
}

interface SearchState {
  req: FindRouteRequest;
  graph: RoutingGraph;
  heap: NodeHeap<HeapNode>;
  distances: Map<string, HeapNode>;
  now: number;
}

export function edgeWeight(amount: bigint, fee: bigint, delta: number): bigint {
  return fee + f64ToU128(Number(amount) * (0.01 * (delta / DEFAULT_TLC_EXPIRY_DELTA)));
}

export function distanceOf(probability: number, weight: bigint): bigint {
  return f64ToU128(Number(weight)) + f64ToU128(PROBABILITY_PENALTY / probability);
}

/** The reference's `check_channel_amount_and_expiry`. */
function edgeAccepts(
  e: RouteEdge,
  amount: bigint,
  incomingExpiry: number,
  expiryLimit: number,
  stats: ChannelStats | undefined,
  allowMpp: boolean,
): boolean {
  if (forwardFee(amount, e.feeRate) === null) return false;
  if (e.tlcExpiryDelta > DEFAULT_TLC_EXPIRY_DELTA) return false;
  if (amount > e.capacity) return false;
  if (amount < e.tlcMinimumValue && !allowMpp) return false;
  const sent = stats?.sentAmount(e.outpoint, e.from) ?? 0n;
  if (amount > (e.capacity > sent ? e.capacity - sent : 0n)) return false;
  if (e.outboundLiquidity !== null && amount > (e.outboundLiquidity > sent ? e.outboundLiquidity - sent : 0n))
    return false;
  return incomingExpiry <= expiryLimit;
}

/** The reference's `eval_and_update`. */
function evalAndUpdate(
  s: SearchState,
  e: { outpoint: string; capacity: bigint; tlcMinValue: bigint; from: string; to: string },
  received: bigint,
  fee: bigint,
  incomingTlcExpiry: number,
  delta: number,
  curProbability: number,
  curWeight: bigint,
  curPending: number,
): void {
  const hist = s.req.history;
  let probability =
    curProbability *
    (hist ? hist.evalProbability(e.from, e.to, e.outpoint, received, e.capacity, s.now) : 1.0);
  const pendingCount = (s.req.stats?.pendingCount(e.outpoint) ?? 0) + curPending;
  if (pendingCount > 0) probability *= powi(0.95, pendingCount);
  if (probability < MIN_PROBABILITY) return;
  const weight = curWeight + edgeWeight(received, fee, delta);
  const distance = distanceOf(probability, weight);
  const known = s.distances.get(e.from);
  if (known && distance >= known.distance) return;
  const node: HeapNode = {
    node: e.from,
    weight,
    distance,
    amountToSend: received + fee,
    tlcMinValue: e.tlcMinValue,
    incomingTlcExpiry: incomingTlcExpiry + delta,
    probability,
    pendingCount,
    next: { target: e.to, channelOutpoint: e.outpoint, amountReceived: received, incomingTlcExpiry },
  };
  s.distances.set(e.from, node);
  s.heap.pushOrFix(node);
}

/** Rust's `powi` (repeated squaring). */
function powi(base: number, n: number): number {
  let result = 1;
  let b = base;
  let k = n;
  while (k > 0) {
    if (k & 1) result *= b;
    b *= b;
    k >>= 1;
  }
  return result;
}

/**
 * Finds a route from `source` to `target` (the reference's `find_path`): the list of hops after
 * the source, each naming the node that receives it, the channel, the amount it receives and its
 * relative incoming expiry. Throws PathFindError.
 */
export function findPath(graph: RoutingGraph, req: FindRouteRequest): RouterHop[] {
  const { source, target, amount } = req;
  const maxFee = req.maxFeeAmount ?? null;
  if (amount !== null) {
    if (amount === 0n) throw pathError('Amount', 'amount must be greater than 0');
    if (amount + (maxFee ?? 0n) > U128_MAX) {
      throw pathError('Amount', `amount ${amount} + max_fee_amount ${maxFee ?? 0n} overflow`);
    }
  }
  if (source === target && !req.allowSelfPayment) {
    throw pathError('FeatureNotEnabled', 'allow_self_payment is not enable, can not pay self');
  }
  if (req.allowMpp && !graph.supportsMpp(target)) {
    throw pathError('FeatureNotEnabled', 'MPP is not supported by the target node');
  }
  if (source !== target)
    return innerFindPath(graph, req, target, amount, maxFee, req.finalTlcExpiryDelta, null);
  // Self-payment: retarget to each usable inbound neighbour, its channel as the fixed last edge.
  const check = amount ?? 0n;
  const udt = req.udt ?? null;
  const inbound = sortedInbounds(graph, source).filter(
    (e) =>
      e.udt === udt &&
      edgeAccepts(e, check, e.tlcExpiryDelta, req.tlcExpiryLimit, req.stats, !!req.allowMpp) &&
      (!req.allowMpp || graph.supportsMpp(e.from)),
  );
  for (const e of inbound) {
    const fee = forwardFee(check, e.feeRate) ?? 0n;
    const lastEdge: RouterHop = {
      target: source,
      channelOutpoint: e.outpoint,
      amountReceived: check,
      incomingTlcExpiry: req.finalTlcExpiryDelta,
    };
    try {
      return innerFindPath(
        graph,
        { ...req, hopHints: [] },
        e.from,
        amount === null ? null : amount + fee,
        maxFee === null ? null : maxFee > fee ? maxFee - fee : 0n,
        req.finalTlcExpiryDelta + e.tlcExpiryDelta,
        lastEdge,
      );
    } catch (err) {
      if (!(err instanceof PathFindError)) throw err;
    }
  }
  throw pathError('NoPathFound');
}

/** Math.min/max do not take bigints. */
export function minBig(a: bigint, b: bigint): bigint {
  if (a < b) return a;
  return b;
}

export function maxBig(a: bigint, b: bigint): bigint {
  if (a > b) return a;
  return b;
}

function sortedInbounds(graph: RoutingGraph, node: string): RouteEdge[] {
  return graph.inbounds(node);
}

export function innerFindPath(
  graph: RoutingGraph,
  req: FindRouteRequest,
  target: string,
  amount: bigint | null,
  maxFee: bigint | null,
  finalExpiry: number,
  lastEdge: RouterHop | null,
  /** Search only along this route (the reference's `route` argument, for probing amounts). */
  fixedRoute?: RouterHop[],
): RouterHop[] {
  const source = req.source;
  let routeEdges: Map<string, RouteEdge> | undefined;
  if (fixedRoute) {
    routeEdges = new Map();
    fixedRoute.forEach((hop, i) => {
      const from = i === 0 ? source : fixedRoute[i - 1]!.target;
      const found = graph.edge(hop.channelOutpoint, from);
      if (found) routeEdges!.set(hop.target, found.edge);
    });
  }
  const udt = req.udt ?? null;
  const allowMpp = !!req.allowMpp;
  const maxCapacity = amount === null;
  const searchAmount = amount ?? 0n;
  const s: SearchState = {
    req,
    graph,
    heap: new NodeHeap<HeapNode>(),
    distances: new Map(),
    now: req.now ?? Date.now(),
  };

  if (source !== target && !maxCapacity) {
    for (const hint of req.hopHints ?? []) {
      // A hint stands only for a private channel: skip it when the graph has the same-UDT
      // direction enabled.
      const known = graph.edge(hint.channelOutpoint, hint.pubkey);
      if (known && !(known.edge.udt === udt && !known.enabled)) continue;
      const fee = forwardFee(searchAmount, hint.feeRate);
      if (fee === null) throw pathError('Overflow', 'calculate_tlc_forward_fee error');
      // Deliberate divergence: the reference passes capacity and tlc-min swapped here (capacity
      // 0, min u128::MAX), which makes every hinted edge unusable. A hint says nothing of the
      // channel's capacity or minimum, so take them as unbounded and zero.
      evalAndUpdate(
        s,
        {
          outpoint: hint.channelOutpoint,
          capacity: U128_MAX,
          tlcMinValue: 0n,
          from: hint.pubkey,
          to: target,
        },
        searchAmount,
        fee,
        finalExpiry,
        hint.tlcExpiryDelta,
        1.0,
        0n,
        0,
      );
    }
  }

  s.heap.pushOrFix({
    node: target,
    weight: maxCapacity ? U128_MAX : 0n,
    distance: 0n,
    amountToSend: maxCapacity ? U128_MAX : searchAmount,
    tlcMinValue: 0n,
    probability: 1.0,
    incomingTlcExpiry: finalExpiry,
    pendingCount: 0,
    next: null,
  });

  for (let cur = s.heap.pop(); cur; cur = s.heap.pop()) {
    if (cur.node === source) break;
    const edges = routeEdges
      ? routeEdges.has(cur.node)
        ? [routeEdges.get(cur.node)!]
        : []
      : sortedInbounds(graph, cur.node);
    for (const e of edges) {
      const isSource = e.from === source;
      if (allowMpp && !graph.supportsMpp(e.from)) continue;
      if (e.udt !== udt) continue;
      if (lastEdge && lastEdge.channelOutpoint === e.outpoint) continue;
      if (maxCapacity) {
        maxCapacityEdge(s, cur, e, isSource);
        continue;
      }
      const received = cur.amountToSend;
      const fee = isSource ? 0n : forwardFee(received, e.feeRate);
      if (fee === null) continue;
      const send = received + fee > U128_MAX ? U128_MAX : received + fee;
      const delta = isSource ? 0 : e.tlcExpiryDelta;
      const incoming = cur.incomingTlcExpiry + delta;
      if (!edgeAccepts(e, send, incoming, req.tlcExpiryLimit, req.stats, allowMpp)) continue;
      if (maxFee !== null && amount !== null && send > amount + maxFee) continue;
      evalAndUpdate(
        s,
        {
          outpoint: e.outpoint,
          capacity: e.capacity,
          tlcMinValue: e.tlcMinimumValue,
          from: e.from,
          to: e.to,
        },
        received,
        fee,
        cur.incomingTlcExpiry,
        delta,
        cur.probability,
        cur.weight,
        cur.pendingCount,
      );
    }
  }

  const result: RouterHop[] = [];
  let current = source;
  let maxMinTlc = 0n;
  for (let elem = s.distances.get(current); elem; elem = s.distances.get(current)) {
    s.distances.delete(current);
    const hop = elem.next!;
    if (elem.amountToSend < elem.tlcMinValue && elem.tlcMinValue > maxMinTlc) maxMinTlc = elem.tlcMinValue;
    current = hop.target;
    result.push(hop);
    if (current === target) break;
  }
  if (result.length === 0 || current !== target) throw pathError('NoPathFound');
  if (lastEdge) result.push(lastEdge);
  if (allowMpp && maxMinTlc > 0n)
    throw new PathFindError('TlcMinValue', PREFIX.TlcMinValue + maxMinTlc, { minimum: maxMinTlc });
  return result;
}

function maxCapacityEdge(s: SearchState, cur: HeapNode, e: RouteEdge, isSource: boolean): void {
  const delta = isSource ? 0 : e.tlcExpiryDelta;
  const incoming = cur.incomingTlcExpiry + delta;
  if (incoming > s.req.tlcExpiryLimit) return;
  const capacity = minBig(cur.weight, e.capacity);
  const old = s.distances.get(e.from)?.weight ?? 0n;
  if (capacity <= old) return;
  const node: HeapNode = {
    node: e.from,
    weight: capacity,
    distance: U128_MAX - capacity,
    amountToSend: capacity,
    tlcMinValue: 0n,
    incomingTlcExpiry: incoming,
    probability: 1.0,
    pendingCount: 0,
    next: {
      target: cur.node,
      channelOutpoint: e.outpoint,
      amountReceived: capacity,
      incomingTlcExpiry: incoming,
    },
  };
  s.distances.set(e.from, node);
  s.heap.pushOrFix(node);
}

/**
 * The sender's pre-check before routing (`build_route`): its best direct outbound liquidity (or
 * capacity when unknown) on the payment's asset covers the amount; for MPP, the sum does.
 */
export function checkOutboundLiquidity(
  graph: RoutingGraph,
  source: string,
  amount: bigint,
  udt: string | null,
  mpp: boolean,
): void {
  const values = graph
    .outbounds(source)
    .filter((e) => e.udt === udt)
    .map((e) => e.outboundLiquidity ?? e.capacity);
  if (mpp) {
    const total = values.reduce((a, b) => a + b, 0n);
    if (total < amount) {
      throw pathError(
        'InsufficientBalance',
        `total outbound liquidity ${total} is insufficient, required amount: ${amount}`,
      );
    }
    return;
  }
  const max = values.reduce(maxBig, 0n);
  if (max < amount) {
    throw pathError(
      'InsufficientBalance',
      `max outbound liquidity ${max} is insufficient, required amount: ${amount}`,
    );
  }
}

/** `max_fee_amount = min(user value, ceil(amount × max_fee_rate / 1000))`, rate default 5‰. */
export function effectiveMaxFee(
  amount: bigint,
  maxFeeAmount: bigint | null | undefined,
  maxFeeRate = 5n,
): bigint {
  const byRate = (amount * maxFeeRate + 999n) / 1000n;
  return maxFeeAmount === null || maxFeeAmount === undefined || maxFeeAmount > byRate ? byRate : maxFeeAmount;
}
