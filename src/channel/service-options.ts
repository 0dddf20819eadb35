/**
 * What the channel service is built from: the P2P link, the wallet and chain, the node's keys and
 * policies, and the hooks through which it tells the rest of the node what happened.
 */
import type { ccc } from '@ckb-ccc/core';
import type { ChainClient, UdtWhitelist, Wallet } from '../chain/index.ts';
import type { FiberMessage, FiberMessageKind } from '../p2p/index.ts';
import type { Db } from '../store/index.ts';
import type { ChannelLogger } from './chain-watch.ts';
import type { ExpiryPolicy } from './expiry.ts';
import type { NoncePool } from './nonce-pool.ts';
import type { Channel, ScriptData } from './state.ts';
import type { ScriptInfo } from './tx.ts';

/** What the service needs from the P2P layer (PeerManager implements it). */
export interface PeerLink {
  onMessage(
    kind: FiberMessageKind,
    handler: (pubkey: string, msg: FiberMessage) => void | Promise<void>,
  ): () => void;
  send(pubkey: string, message: FiberMessage): void;
  isConnected(pubkey: string): boolean;
  on(event: 'connected', listener: (peer: { pubkey: string }) => void): unknown;
  off(event: 'connected', listener: (peer: { pubkey: string }) => void): unknown;
  /** Closes the peer's session but keeps reconnecting to it (peer response timeout). */
  drop?(pubkey: string, reason: string): void;
  /** The peer's `Init` once received: its feature bits choose the channel rules. */
  peerInit(pubkey: string): { features: Uint8Array } | undefined;
}

export interface ChannelServiceOptions {
  db: Db;
  peers: PeerLink;
  wallet: Wallet;
  chain: ChainClient;
  chainHash: string;
  scripts: { fundingLock: ScriptInfo; commitmentLock: ScriptInfo };
  /** The node's secret key: one input of every channel seed. */
  nodeSecret: Uint8Array;
  /** The wallet's secret key: signs our funding inputs (UDT ones too, and after a restart). */
  walletSecretKey?: Uint8Array;
  /** Where our balance goes at close unless a script is given (the wallet lock). */
  defaultShutdownScript: ccc.ScriptLike;
  autoAccept: { minCkbFundingAmount: bigint; ckbFundingAmount: bigint };
  /** `ckb.udt_whitelist`, read once (`chain/udt-whitelist.ts`). */
  udtWhitelist?: UdtWhitelist;
  tlc: { expiryDelta: bigint; minValue: bigint; feeProportionalMillionths: bigint };
  /** Funding confirmations before ChannelReady (4, as the reference). */
  confirmations?: number;
  pollMs?: number;
  logger?: ChannelLogger;
  now?: () => number;
  /** Public channels: how to build and where to publish the channel announcement. */
  announcements?: AnnouncementHooks;
  /** Called after every committed change of a channel. */
  onChange?: (ch: Channel) => void;
  /** TLC expiry checks (`expiry.ts`): an epoch's milliseconds on this chain, the check interval. */
  expiry?: ExpiryPolicy;
  /** Nonce pairs made ahead (`nonce-pool.ts`); without it every pair is made when needed. */
  nonces?: NoncePool;
  /** Offer pipelined TLC updates to peers that offer them too (`fiber.pipelined_updates`). */
  pipelinedUpdates?: boolean;
  /** How long a CommitmentSigned covering only the peer's fulfils waits (`deferred-sign.ts`). */
  pipelinedSignDelayMs?: number;
  /** The least `tlc_expiry_delta` (`codec/epoch-rules.ts`, 2/3 of an epoch); 9,600,000 ms when absent. */
  minTlcExpiryDelta?: bigint;
  /** A TLC round unanswered this long drops the peer's session (`ack-timeout.ts`); 30 s by default. */
  peerResponseTimeoutMs?: number;
  /** `update_channel` changed a ready public channel's policy: broadcast a new ChannelUpdate. */
  onPolicyUpdated?: (ch: Channel) => void | Promise<void>;
  /** External funding: how long a channel waits for the signed funding tx (default 300 s). */
  externalFundingTimeoutSeconds?: number;
  /** An opening not ready this long after its creation is aborted while that is safe (1 day). */
  fundingTimeoutSeconds?: number;
  /** Asks the output gate for a flush right after the next group commit (`Durability.requestFlush`). */
  requestFlush?: () => void;
  /** Resolves once every commit made so far is durable and its output released (`Durability.durable`). */
  durable?: () => Promise<void>;
}

/** What a public channel's announcement is made of (the graph layer builds the message). */
export interface AnnouncementInfo {
  chainHash: Uint8Array;
  channelOutpoint: { txHash: Uint8Array; index: number };
  /** Node public keys (33 bytes). */
  localPubkey: Uint8Array;
  remotePubkey: Uint8Array;
  /** The funding lock's x-only MuSig2 aggregate key. */
  fundingXOnlyKey: Uint8Array;
  /** Liquid capacity: both fundings without the reserves (CKB) or the token total (UDT). */
  capacity: bigint;
  udtTypeScript: ScriptData | null;
}

export interface AnnouncementHooks {
  /** The digest both sides sign (the ChannelAnnouncement with zeroed signatures, hashed). */
  digest(info: AnnouncementInfo): Uint8Array;
  /** The complete signatures: build the ChannelAnnouncement and hand it to the graph. */
  publish(
    info: AnnouncementInfo,
    sigs: { localNodeSignature: Uint8Array; remoteNodeSignature: Uint8Array; ckbSignature: Uint8Array },
  ): void | Promise<void>;
}
