/** The node's chain layer: CKB JSON-RPC client, network presets and scripts, wallet, confirmation tracking, addresses. */
export {
  AddressError,
  addressToScript,
  SIGHASH_ALL_TYPE_HASH,
  scriptToAddress,
  sighashLock,
} from './address.ts';
export {
  type ChainClient,
  type ChainClientOptions,
  ChainProtocolError,
  type ChainStatus,
  ChainUnreachableError,
  type CkbErrorKind,
  CkbRpcError,
  createChainClient,
  describeChainStatus,
  scriptToJson,
  txToJson,
} from './client.ts';
export { CHAIN_ERROR_CODES, ChainError, type ChainErrorCode, chainErrorOf } from './errors.ts';
export { startChainProbe } from './health.ts';
export { NETWORK_NAMES, NETWORKS, type NetworkName, networkOfChain } from './networks.ts';
export {
  type ChannelScripts,
  ChannelScriptsUnavailable,
  channelScriptsSource,
  readScriptsConfig,
  resolveUdtWhitelist,
  ScriptsConfigError,
} from './scripts.ts';
export { DEFAULT_CONFIRMATIONS, txConfirmation, waitForConfirmations } from './tracker.ts';
export type { HashType, UdtScriptRef } from './udt-whitelist.ts';
export {
  readUdtWhitelist,
  type UdtDepEntry,
  UdtWhitelist,
  type UdtWhitelistEntry,
  UdtWhitelistError,
} from './udt-whitelist.ts';
export { createWallet, feeFor, InsufficientFunds, type Wallet, type WalletOptions } from './wallet.ts';
