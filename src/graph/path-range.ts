/**
 * Route amounts for MPP: the widest route's amount, and a route for the largest part within a
 * range when none carries the whole amount (the reference's binary search over `find_path`).
 */
import {
  type FindRouteRequest,
  findPath,
  innerFindPath,
  maxBig,
  minBig,
  PathFindError,
  pathError,
  type RouterHop,
  type RoutingGraph,
} from './pathfind.ts';

const MAX_BINARY_SEARCH_ITERATIONS = 10;

/**
 * The route of greatest capacity from the source (the reference's `find_path_max_capacity`):
 * the amount its last hop can carry.
 */
export function maxRoutableAmount(graph: RoutingGraph, req: Omit<FindRouteRequest, 'amount'>): bigint {
  const route = findPath(graph, { ...req, amount: null });
  return route[route.length - 1]!.amountReceived;
}

/**
 * A route for `amount`, or — for MPP, when none carries it — for the largest amount down to
 * `lowBound` that one route can carry (the reference's `resolve_route` with
 * `binary_find_path_in_range`: at most 10 rounds, each hit widened along the same hops).
 * Returns the route and the amount it carries.
 */
export function findPathInRange(
  graph: RoutingGraph,
  req: FindRouteRequest & { amount: bigint },
  lowBound: bigint | null,
): { route: RouterHop[]; amount: bigint } {
  try {
    return { route: findPath(graph, req), amount: req.amount };
  } catch (e) {
    const retriable = e instanceof PathFindError && (e.kind === 'NoPathFound' || e.kind === 'TlcMinValue');
    if (!retriable || !req.allowMpp || lowBound === null || lowBound >= req.amount) throw e;
  }
  const found = binaryFindPathInRange(graph, req, req.amount - 1n, lowBound);
  if (!found) throw pathError('NoPathFound');
  return found;
}

function binaryFindPathInRange(
  graph: RoutingGraph,
  req: FindRouteRequest & { amount: bigint },
  amount: bigint,
  lowBound: bigint,
): { route: RouterHop[]; amount: bigint } | null {
  let low = lowBound;
  let high = amount;
  const liquidity = graph
    .outbounds(req.source)
    .filter((e) => e.udt === (req.udt ?? null))
    .map((e) => e.outboundLiquidity ?? 0n)
    .reduce(maxBig, 0n);
  high = minBig(high, liquidity);
  let best: { route: RouterHop[]; amount: bigint } | null = null;
  for (let i = 0; low <= high && i < MAX_BINARY_SEARCH_ITERATIONS; i++) {
    const mid = low + (high - low) / 2n;
    let route: RouterHop[];
    try {
      route = findPath(graph, { ...req, amount: mid });
    } catch (e) {
      if (!(e instanceof PathFindError)) throw e;
      if (e.kind === 'NoPathFound') {
        high = mid > 0n ? mid - 1n : 0n;
        continue;
      }
      if (e.kind === 'TlcMinValue' && e.details) {
        low = e.details.minimum;
        continue;
      }
      throw e;
    }
    const widened = maxOnRoute(graph, req, route, mid, amount);
    if (widened.amount === amount) return widened;
    if (!best || widened.amount > best.amount) best = widened;
    low = widened.amount + 1n;
  }
  return best;
}

/** The largest amount in [lower, upper] the same hops carry (`find_max_routable_amount_on_path`). */
function maxOnRoute(
  graph: RoutingGraph,
  req: FindRouteRequest,
  route: RouterHop[],
  lower: bigint,
  upper: bigint,
): { route: RouterHop[]; amount: bigint } {
  const probe = (amt: bigint): RouterHop[] | null => {
    try {
      return innerFindPath(
        graph,
        { ...req, amount: amt },
        req.target,
        amt,
        req.maxFeeAmount ?? null,
        req.finalTlcExpiryDelta,
        null,
        route,
      );
    } catch (e) {
      if (e instanceof PathFindError) return null;
      throw e;
    }
  };
  const full = probe(upper);
  if (full) return { route: full, amount: upper };
  let best = { route, amount: lower };
  let low = lower + 1n;
  let high = upper > 0n ? upper - 1n : 0n;
  while (low <= high) {
    const mid = low + (high - low) / 2n;
    const r = probe(mid);
    if (r) {
      best = { route: r, amount: mid };
      low = mid + 1n;
    } else {
      high = mid - 1n;
    }
  }
  return best;
}
