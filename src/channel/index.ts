/**
 * The `channel/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { checkpointBackupStore } from './checkpoint.ts';
export { buildCommitment } from './commitment.ts';
export { commitmentNumberOf } from './commitment-number.ts';
export {
  CHANNEL_ERROR_CODES,
  ChannelError,
  type ChannelErrorCode,
  type ChannelErrorDetails,
} from './errors.ts';
export type { ExpiryPolicy } from './expiry.ts';
export type { ChannelKeys } from './keys.ts';
export { deriveChannelKeys, pubOf } from './keys.ts';
export { aggregateXOnly } from './musig.ts';
export { NoncePool } from './nonce-pool.ts';
export type { OpenRequest } from './requests.ts';
export { dec } from './round.ts';
export { toScript } from './script-data.ts';
export { ChannelService, loadChannelScripts } from './service.ts';
export type { AnnouncementHooks, AnnouncementInfo } from './service-options.ts';
export type { ParsedScript } from './settlement-script.ts';
export { parseSettlementScript, scriptAfter, scriptAfterWitness } from './settlement-script.ts';
export type { Channel, PartyParams, ScriptData, Tlc } from './state.ts';
export { hasFlag, resolvingPending, STATE_NAMES } from './state.ts';
export type { MachineEnv } from './step.ts';
export { ChannelStore, channelSchema } from './store.ts';
export type { RemoveReason, TlcNotice } from './tlc.ts';
export { tlcPubkeys, tlcSecret } from './tlc-keys.ts';
export type { ScriptInfo } from './tx.ts';
export {
  CKB,
  fundingLockScript,
  le128,
  revocationWitness,
  SIDE_FLOOR,
  settlementScript,
  txMessage,
  XW,
} from './tx.ts';
export { commitmentCandidates, committedView, latestCommitmentView } from './views.ts';
