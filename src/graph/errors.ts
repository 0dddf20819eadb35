/** The graph domain's refusals. */
import { type DetailsOf, DomainError } from '../codec/index.ts';

/** Every code, with when it is thrown. */
export const GRAPH_ERROR_CODES = {
  NodeNameTooLong: 'the node name is longer than 32 bytes',
  // PathFindError's kinds, fnn's `PathFindError` variants:
  NoPathFound: 'no path carries the amount',
  Amount: 'the amount is out of range for path finding',
  FeatureNotEnabled: 'a feature the route needs is not enabled',
  InsufficientBalance: 'our channels cannot send the amount',
  TlcMinValue: "the amount is below a channel's TLC minimum",
  Overflow: 'fees or expiries overflow along the path',
} as const;
export type GraphErrorCode = keyof typeof GRAPH_ERROR_CODES;

/** Typed facts of the codes that carry some. */
export interface GraphErrorDetails {
  /** The smallest amount the channels' TLC minimums allow. */
  TlcMinValue: { minimum: bigint };
}

export class GraphError<C extends GraphErrorCode = GraphErrorCode> extends DomainError<
  C,
  DetailsOf<GraphErrorDetails, C>
> {}
