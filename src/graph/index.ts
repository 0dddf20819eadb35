/**
 * The `graph/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { CursorError, parseCursor, ZERO_CURSOR } from './cursor.ts';
export { GRAPH_ERROR_CODES, GraphError, type GraphErrorCode } from './errors.ts';
export { featureBytes, featureNames } from './features.ts';
export { createChainFundingChecker } from './funding.ts';
export type { PaymentHistory, SessionRouteNode } from './history.ts';
export { directionOf } from './history.ts';
export type { ChannelAnnouncement, MolScript, NodeAnnouncement, UdtArgInfo, UdtDep } from './messages.ts';
export {
  ChannelUpdate,
  decodeChannelUpdate,
  decodeOutPoint,
  encodeChannelUpdate,
  encodeOutPoint,
  OutPoint,
} from './messages.ts';
export { udtKeyFromJson } from './network-graph.ts';
export type { ChannelStats, FindRouteRequest, RouterHop } from './pathfind.ts';
export { DEFAULT_TLC_EXPIRY_DELTA, MAX_PAYMENT_TLC_EXPIRY_LIMIT, PathFindError } from './pathfind.ts';
export type { GraphService, ListedChannel, PaymentFailure } from './service.ts';
export { createGraphService } from './service.ts';
export {
  channelAnnouncementDigest,
  completeChannelAnnouncement,
  unsignedChannelAnnouncement,
} from './signing.ts';
export { graphSchema } from './store.ts';
export { udtCfgInfosFromWhitelist } from './udt-config.ts';
