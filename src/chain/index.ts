/** The node's chain layer: CKB JSON-RPC client, wallet, confirmation tracking, addresses. */
export { addressToScript, SIGHASH_ALL_TYPE_HASH, scriptToAddress, sighashLock } from './address.ts';
export {
  type ChainClient,
  type ChainClientOptions,
  ChainProtocolError,
  ChainUnreachableError,
  CkbRpcError,
  createChainClient,
  scriptToJson,
} from './client.ts';
export { DEFAULT_CONFIRMATIONS, txConfirmation, waitForConfirmations } from './tracker.ts';
export {
  readUdtWhitelist,
  type UdtDepEntry,
  UdtWhitelist,
  type UdtWhitelistEntry,
  UdtWhitelistError,
} from './udt-whitelist.ts';
export { createWallet, feeFor, InsufficientFunds, type Wallet, type WalletOptions } from './wallet.ts';
