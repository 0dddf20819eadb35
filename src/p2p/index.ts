/**
 * The `p2p/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { malformed, P2pError, PEER_ERROR_CODES, PeerError, type PeerErrorCode } from './errors.ts';
export type { FiberMessage, FiberMessageKind } from './fiber-message.ts';
export {
  decodeFiberMessage,
  encodeFiberMessage,
  hasFeatureBit,
  initFeatures,
  STRAND_CHANNEL_RULES_BIT,
  STRAND_PIPELINED_BIT,
} from './fiber-message.ts';
export type { PeerManager } from './peer-manager.ts';
export { createPeerManager } from './peer-manager.ts';
export { peerSchema } from './peer-store.ts';
