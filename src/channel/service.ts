/**
 * The channel shell: one actor (a promise queue) per channel, persist-before-send, the wallet
 * for funding, the chain for confirmations, auto-accept from the config. All decisions are the
 * pure machine's (`machine.ts`); this file only moves bytes and waits.
 */
import { ccc } from '@ckb-ccc/core';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { type ChainClient, scriptToJson } from '../chain/client.ts';
import { txConfirmation } from '../chain/tracker.ts';
import { UdtWhitelist, type UdtWhitelistEntry } from '../chain/udt-whitelist.ts';
import type { Wallet } from '../chain/wallet.ts';
import { MAX_TLC_EXPIRY_LIMIT, MIN_TLC_EXPIRY_DELTA } from '../codec/epoch-rules.ts';
import { DomainError, StorageError } from '../codec/errors.ts';
import { bytesToHex, hexToBytes } from '../codec/hex.ts';
import { blake160 } from '../crypto/hash.ts';
import { signSighashAll } from '../crypto/sighash.ts';
import {
  type FiberMessage,
  type FiberMessageKind,
  hasFeatureBit,
  STRAND_CHANNEL_RULES_BIT,
} from '../p2p/fiber-message.ts';
import { AckTimeout } from './ack-timeout.ts';
import { buildCommitment, fundingTxOf } from './commitment.ts';
import { ChannelError } from './errors.ts';
import { CHECK_CHANNELS_INTERVAL_MS, type ExpiryPolicy, MS_PER_EPOCH_MAINNET } from './expiry.ts';
import { ExpiryMonitor } from './expiry-monitor.ts';
import { ExternalFundingWatch, fundFromLock } from './external-funder.ts';
import { EXTERNAL_TIMEOUT_REASON, withFunderWitnesses } from './external-funding.ts';
import { DEFAULT_FUNDING_TIMEOUT_SECONDS, fundingTimedOut, fundingTimeoutReason } from './funding-timeout.ts';
import { deriveChannelKeys, newChannelSeed, tempChannelId } from './keys.ts';
import { step } from './machine.ts';
import { aggregateXOnly, sorted2 } from './musig.ts';
import { acceptChannel, checkOpenChannel, openChannel, receiveOpen } from './open.ts';
import { resendable } from './rebroadcast.ts';
import { abortable, reestablishMessage } from './reestablish.ts';
import { type ChannelRules, reserveFor } from './reserve.ts';
import { cellDepData, scriptData, toScript } from './script-data.ts';
import { shareSettled } from './share-settled.ts';
import { StagedChannelStore } from './staged-store.ts';
import { type Channel, hasFlag, PENDING_STATES, type ScriptData } from './state.ts';
import { type Effect, type Event, fail, type MachineEnv, type Step } from './step.ts';
import { ChannelStore } from './store.ts';
import {
  type AddTlcCommand,
  type RemoveReason,
  type TlcCommand,
  type TlcNotice,
  WAITING_ACK,
} from './tlc.ts';
import { settleOutcomes, TlcQueue, type WaitingTlc } from './tlc-queue.ts';
import { partySettlementTx, type ScriptInfo, SIDE_FLOOR } from './tx.ts';
import {
  CHANNEL_CODECS,
  type ChannelMessage,
  type ChannelMessageKind,
  fromFiberMessage,
  toFiberMessage,
} from './wire.ts';

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

export interface ChannelLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ChannelServiceOptions {
  db: import('../store/db.ts').Db;
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

export interface OpenRequest {
  pubkey: string;
  /** Including our reserve (the seed: 500 CKB → local balance 438). */
  fundingAmount: bigint;
  isPublic?: boolean;
  fundingUdtTypeScript?: ccc.ScriptLike | null;
  shutdownScript?: ccc.ScriptLike;
  commitmentDelayEpoch?: bigint;
  commitmentFeeRate?: bigint;
  fundingFeeRate?: bigint;
  tlcExpiryDelta?: bigint;
  tlcMinValue?: bigint;
  tlcFeeProportionalMillionths?: bigint;
  maxTlcValueInFlight?: bigint;
  maxTlcNumberInFlight?: bigint;
  /** External funding: our part is paid from cells of this lock, signed off-node by the user. */
  external?: { lock: ccc.ScriptLike; cellDeps?: ccc.CellDepLike[] };
}

export interface AcceptRequest {
  temporaryChannelId: string;
  /** Including our reserve. */
  fundingAmount: bigint;
  shutdownScript?: ccc.ScriptLike;
  maxTlcValueInFlight?: bigint;
  maxTlcNumberInFlight?: bigint;
  tlcExpiryDelta?: bigint;
  tlcMinValue?: bigint;
  tlcFeeProportionalMillionths?: bigint;
}

const NOOP_LOG: ChannelLogger = { info() {}, warn() {}, error() {} };
const DEFAULT_DELAY = 0x0000010000000001n;
const MAX_TLC_EXPIRY_DELTA = MAX_TLC_EXPIRY_LIMIT;
/** The reference's PEER_CHANNEL_RESPONSE_TIMEOUT. */
const PEER_RESPONSE_TIMEOUT_MS = 30_000;
/** Polls of a watched tx the chain does not know between two sends of it. */
const RESEND_EVERY = 5;

export const hash256 = (id: string) => `Hash256(${id})`;

/**
 * The funding and commitment lock scripts with their cell deps: the chain client resolves them
 * (the network's preset and `fiber.scripts`, or the dev chain's `get_dev_scripts`).
 */
export async function loadChannelScripts(
  chain: ChainClient,
): Promise<{ fundingLock: ScriptInfo; commitmentLock: ScriptInfo }> {
  return chain.channelScripts();
}

/** A step whose state is staged for the next group commit, and what waits for that commit. */
interface StagedStep {
  s: Step;
  then?: () => void;
  resolve: () => void;
  reject: (e: Error) => void;
}

export class ChannelService {
  /** Channel states: the durable store, with the states staged for the next group commit. */
  readonly store: StagedChannelStore;
  /** Steps staged since the last group commit, in order: their effects wait for it. */
  private readonly batch: StagedStep[] = [];
  private flushing = false;
  private readonly log: ChannelLogger;
  private readonly env: MachineEnv;
  private readonly queues = new Map<string, Promise<void>>();
  private readonly watchers = new Map<string, NodeJS.Timeout>();
  private readonly unsubscribe: (() => void)[] = [];
  private readonly tlcListeners = new Set<(channelId: string, notice: TlcNotice) => void>();
  private readonly tlcRecorders = new Set<(channelId: string, notice: TlcNotice) => void>();
  /** TLC commands waiting for a channel's round to end (the next round's batch), by temporary id. */
  private readonly tlcQueue = new TlcQueue();
  private stopped = false;
  /**
   * Peers whose session is being dropped because a channel step with them could not be stored:
   * the messages of theirs already queued are skipped (handled out of order they would look like
   * protocol errors); the reconnection's reestablish replays them.
   */
  private readonly storageStalled = new Set<string>();
  /** Periodic TLC expiry check; its hooks are the payments layer's (set once it is wired). */
  readonly expiry: ExpiryMonitor;
  private readonly ackTimeout: AckTimeout;
  private readonly externalWatch: ExternalFundingWatch;
  /**
   * Cells promised to a funding tx not on chain yet, by channel (temp id): an external funder's
   * CKB cells, and the token cells of a UDT funding (ours or the funder's). Another opening must
   * not pick them (its funding tx would conflict and never confirm). The wallet keeps its own
   * reservations for the plain CKB cells it funds with.
   */
  private readonly promisedCells = new Map<string, string[]>();
  /** External fundings run one at a time, so two never pick the same cells of a funder. */
  private funderQueue: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: ChannelServiceOptions) {
    this.store = new StagedChannelStore(new ChannelStore(o.db));
    this.log = o.logger ?? NOOP_LOG;
    this.env = {
      chainHash: o.chainHash,
      fundingLock: o.scripts.fundingLock,
      commitmentLock: o.scripts.commitmentLock,
      now: o.now ?? Date.now,
    };
    this.expiry = new ExpiryMonitor(
      {
        list: () => this.store.list(),
        forceClose: (id) => this.shutdownChannel(id, { force: true }),
        removeTlc: (id, tlcId, reason, opts) => this.removeTlc(id, tlcId, reason, opts),
      },
      o.expiry ?? { msPerEpoch: MS_PER_EPOCH_MAINNET, checkIntervalMs: CHECK_CHANNELS_INTERVAL_MS },
      this.log,
      this.env.now,
    );
    this.ackTimeout = new AckTimeout(o.peerResponseTimeoutMs ?? PEER_RESPONSE_TIMEOUT_MS, {
      isConnected: (pk) => o.peers.isConnected(pk),
      drop: (pk, reason) => o.peers.drop?.(pk, reason),
      log: this.log,
    });
    this.externalWatch = new ExternalFundingWatch(
      (o.externalFundingTimeoutSeconds ?? 300) * 1000,
      (tempId) => this.onExternalDeadline(tempId),
      this.env.now,
    );
  }

  /** Subscribes to the channel messages and resumes confirmation tracking of stored channels. */
  start(): void {
    for (const kind of Object.keys(CHANNEL_CODECS) as ChannelMessageKind[]) {
      this.unsubscribe.push(this.o.peers.onMessage(kind, (pk, m) => this.onWire(pk, m)));
    }
    this.monitorFunding();
    const onConnected = (peer: { pubkey: string }) => {
      this.storageStalled.delete(peer.pubkey);
      this.ackTimeout.reconnected(peer.pubkey);
      this.reestablish(peer.pubkey);
    };
    this.o.peers.on('connected', onConnected);
    this.unsubscribe.push(() => this.o.peers.off('connected', onConnected));
    for (const ch of this.store.list()) {
      this.externalWatch.observe(ch);
      const signed = ch.state === 'AWAITING_TX_SIGNATURES' && ch.flags.includes('OUR_TX_SIGNATURES_SENT');
      if ((ch.state === 'AWAITING_CHANNEL_READY' || signed) && ch.fundingTxHash) this.watch(ch);
      if (
        ch.state === 'SHUTTING_DOWN' &&
        ch.shutdownTxHash &&
        ch.flags.includes('WAITING_COMMITMENT_CONFIRMATION')
      )
        this.watchTx(ch.tempId, ch.shutdownTxHash, 1, { type: 'closeConfirmed' });
      if (ch.state === 'CLOSED' && ch.flags.includes('WAITING_ONCHAIN_SETTLEMENT')) this.settleLater(ch);
      this.ackTimeout.observe(ch);
    }
    this.expiry.start();
  }

  async stop(): Promise<void> {
    // States staged for the group commit are committed now (their messages go out as usual).
    this.flush();
    this.stopped = true;
    this.expiry.stop();
    this.ackTimeout.stop();
    this.externalWatch.stop();
    for (const u of this.unsubscribe.splice(0)) u();
    for (const t of this.watchers.values()) clearInterval(t);
    this.watchers.clear();
    this.tlcQueue.rejectAll(() => new DomainError(WAITING_ACK));
    await Promise.allSettled([...this.queues.values()]);
  }

  /** Strand's channel rules with a peer that asked for them in `Init`, fnn's with any other. */
  private rulesOf(pubkey: string): ChannelRules {
    const features = this.o.peers.peerInit(pubkey)?.features;
    return features && hasFeatureBit(features, STRAND_CHANNEL_RULES_BIT) ? 'strand' : 'fnn';
  }

  // ---- RPC-facing operations ---------------------------------------------------------------------

  async openChannel(r: OpenRequest): Promise<{ temporaryChannelId: string }> {
    const pk = r.pubkey;
    if (!this.o.peers.isConnected(pk)) {
      throw new DomainError(
        `Invalid parameter: Peer Pubkey(${pk})'s feature not found, waiting for peer to send Init message`,
      );
    }
    const udt = r.fundingUdtTypeScript ? this.whitelisted(r.fundingUdtTypeScript) : null;
    if (r.fundingUdtTypeScript && !udt) throw new DomainError('Invalid parameter: Invalid UDT type script');
    const shutdown = ccc.Script.from(r.shutdownScript ?? this.o.defaultShutdownScript);
    const reserve = reserveFor(shutdown, udt, this.rulesOf(pk));
    // A UDT channel's funding amount is in tokens; our reserve comes in CKB beside it.
    if (udt && r.fundingAmount <= 0n)
      throw new DomainError('Invalid parameter: The funding amount (0) should be greater than 0');
    const minimum = reserve > SIDE_FLOOR ? reserve : SIDE_FLOOR;
    if (!udt && r.fundingAmount < minimum) {
      throw new DomainError(
        `Invalid parameter: The funding amount (${r.fundingAmount}) should be greater than or equal to ${minimum}`,
      );
    }
    const fundingFeeRate = r.fundingFeeRate ?? 1000n;
    const commitmentFeeRate = r.commitmentFeeRate ?? 1000n;
    if (fundingFeeRate < 1000n)
      throw new DomainError('Invalid parameter: Funding fee rate is less than 1000');
    if (commitmentFeeRate < 1000n)
      throw new DomainError('Invalid parameter: Commitment fee rate is less than 1000');
    const delay = r.commitmentDelayEpoch ?? DEFAULT_DELAY;
    const epochs = delay & 0xff_ffffn;
    if (epochs < 1n)
      throw new DomainError(
        `Invalid parameter: Commitment delay epoch ${delay} is less than the minimal value 1`,
      );
    if (epochs > 84n)
      throw new DomainError(
        `Invalid parameter: Commitment delay epoch ${delay} is greater than the maximal value 84`,
      );
    const maxTlcNumber = r.maxTlcNumberInFlight ?? 125n;
    if (maxTlcNumber > 253n)
      throw new DomainError(
        `Invalid parameter: Max TLC number in flight ${maxTlcNumber} is greater than the system maximal value 253`,
      );
    const delta = r.tlcExpiryDelta ?? this.o.tlc.expiryDelta;
    checkExpiryDelta(delta, this.o.minTlcExpiryDelta);
    const seed = newChannelSeed(this.o.nodeSecret, this.store.nextCount());
    const tempId = bytesToHex(tempChannelId(deriveChannelKeys(seed).tlcBasepoint));
    const s = openChannel(
      {
        peer: pk,
        rules: this.rulesOf(pk),
        seed,
        tempId,
        isPublic: r.isPublic ?? true,
        fundingAmount: udt ? r.fundingAmount : r.fundingAmount - reserve,
        reserve,
        shutdownScript: scriptData(shutdown),
        udt,
        udtCellDeps: udt ? this.udtDeps(udt) : [],
        fundingFeeRate,
        commitmentFeeRate,
        delayEpoch: delay,
        maxTlcValueInFlight: r.maxTlcValueInFlight ?? (1n << 128n) - 1n,
        maxTlcNumberInFlight: maxTlcNumber,
        tlcExpiryDelta: delta,
        tlcMinValue: r.tlcMinValue ?? this.o.tlc.minValue,
        tlcFeeProportionalMillionths: r.tlcFeeProportionalMillionths ?? this.o.tlc.feeProportionalMillionths,
        external: r.external
          ? {
              lock: scriptData(r.external.lock),
              cellDeps: (r.external.cellDeps ?? []).map(cellDepData),
            }
          : undefined,
      },
      this.env,
    );
    await this.enqueue(tempId, () => this.commit(s));
    return { temporaryChannelId: tempId };
  }

  /**
   * `open_channel_with_external_funding`: opens like `openChannel`, our part paid from the cells
   * of `external.lock`; resolves once the peer accepted and the funding tx is frozen, with that
   * unsigned tx for the user to sign (`external-funding.ts`).
   */
  async openChannelWithExternalFunding(
    r: OpenRequest & { external: NonNullable<OpenRequest['external']> },
  ): Promise<{ channelId: string; unsignedFundingTx: ccc.Transaction }> {
    if (!this.o.peers.isConnected(r.pubkey))
      throw new DomainError(`Invalid parameter: Peer Pubkey(${r.pubkey}) is not connected`);
    const { temporaryChannelId } = await this.openChannel(r);
    const ch = this.store.get(temporaryChannelId) as Channel;
    const { channelId, tx } = await this.externalWatch.waitForUnsignedTx(ch);
    return { channelId, unsignedFundingTx: tx };
  }

  /** `submit_signed_funding_tx`: the user's signed funding tx for an externally funded channel. */
  async submitSignedFundingTx(
    id: string,
    signed: ccc.Transaction,
  ): Promise<{ channelId: string; fundingTxHash: string }> {
    const key = id.toLowerCase();
    const ch0 = this.store.get(key);
    if (!ch0) throw new DomainError(`Channel not found error: ${hash256(key)}`);
    const sighash = this.o.wallet.lockScript;
    await this.command(ch0.tempId, {
      type: 'submitFunding',
      tx: signed,
      sighashCodeHash: sighash.hashType === 'type' ? sighash.codeHash : undefined,
    });
    return { channelId: ch0.id, fundingTxHash: signed.hash() };
  }

  /** The signed tx did not come in time: abort the opening (TxAbort), nothing was spent. */
  private onExternalDeadline(tempId: string): void {
    void this.enqueue(tempId, () => {
      if (this.stopped) return;
      const ch = this.store.get(tempId);
      if (!ch) return;
      if (!this.externalWatch.due(ch)) {
        this.externalWatch.observe(ch);
        return;
      }
      this.log.warn({ channel: ch.id }, 'external funding timed out');
      this.commit(fail(ch, EXTERNAL_TIMEOUT_REASON));
    }).catch((e) =>
      this.log.error({ channel: tempId, err: (e as Error).message }, 'external funding abort failed'),
    );
  }

  async acceptChannel(r: AcceptRequest): Promise<{ channelId: string }> {
    const tempId = r.temporaryChannelId.toLowerCase();
    const notFound = () =>
      new DomainError(`Invalid parameter: No channel with temp id ${hash256(tempId)} found`);
    const ch0 = this.store.get(tempId);
    if (!ch0 || ch0.tempId !== tempId || !ch0.isAcceptor || ch0.state !== 'NEGOTIATING_FUNDING')
      throw notFound();
    const shutdown = ccc.Script.from(r.shutdownScript ?? this.o.defaultShutdownScript);
    const reserve = reserveFor(shutdown, ch0.udt ? toScript(ch0.udt) : null, ch0.rules ?? 'strand');
    const minimum = reserve > SIDE_FLOOR ? reserve : SIDE_FLOOR;
    if (!ch0.udt && r.fundingAmount < minimum) {
      throw new DomainError(
        `Invalid parameter: The funding amount (${r.fundingAmount}) should be greater than or equal to ${minimum}`,
      );
    }
    if (r.tlcExpiryDelta !== undefined) checkExpiryDelta(r.tlcExpiryDelta, this.o.minTlcExpiryDelta);
    let id = '';
    await this.enqueue(tempId, () => {
      const ch = this.store.get(tempId);
      if (ch?.state !== 'NEGOTIATING_FUNDING') throw notFound();
      const s = acceptChannel(
        { ...ch, local: { ...ch.local, reserve, shutdownScript: scriptData(shutdown) } },
        {
          fundingAmount: ch.udt ? r.fundingAmount : r.fundingAmount - reserve,
          maxTlcValueInFlight: r.maxTlcValueInFlight,
          maxTlcNumberInFlight: r.maxTlcNumberInFlight,
          tlcExpiryDelta: r.tlcExpiryDelta,
          tlcMinValue: r.tlcMinValue,
          tlcFeeProportionalMillionths: r.tlcFeeProportionalMillionths,
        },
        this.env,
      );
      id = s.ch.id;
      return this.commit(s);
    });
    return { channelId: id };
  }

  async abandonChannel(id: string): Promise<void> {
    const key = id.toLowerCase();
    const ch0 = this.store.get(key);
    if (!ch0) throw new DomainError(`Invalid parameter: Channel ${hash256(key)} not found`);
    await this.enqueue(ch0.tempId, () => {
      const ch = this.store.get(key) as Channel;
      const late =
        ch.state === 'CHANNEL_READY' ||
        ch.state === 'SHUTTING_DOWN' ||
        ch.state === 'CLOSED' ||
        ch.state === 'AWAITING_CHANNEL_READY' ||
        (ch.state === 'AWAITING_TX_SIGNATURES' && ch.flags.includes('OUR_TX_SIGNATURES_SENT'));
      if (late) {
        throw new DomainError(
          `Invalid parameter: Channel ${hash256(key)} is in state ${v08StateName(ch.state)}, cannot be abandoned, please shutdown the channel instead`,
        );
      }
      const r = fail(ch, 'abandoned by the user');
      return this.commit({
        ch: { ...r.ch, flags: ['ABANDONED'] },
        effects: r.effects.filter((e) => e.type === 'send'),
      });
    });
  }

  async updateChannel(
    id: string,
    u: {
      enabled?: boolean;
      tlcExpiryDelta?: bigint;
      tlcMinimumValue?: bigint;
      tlcFeeProportionalMillionths?: bigint;
    },
  ): Promise<void> {
    const key = id.toLowerCase();
    const ch0 = this.store.get(key);
    if (!ch0 || ch0.state === 'CLOSED') throw new DomainError('Messaging failed because channel is closed');
    if (!ch0.isPublic) throw new DomainError('Invalid state: Only public channel can be updated');
    if (u.tlcExpiryDelta !== undefined) checkExpiryDelta(u.tlcExpiryDelta, this.o.minTlcExpiryDelta);
    await this.enqueue(ch0.tempId, () => {
      const ch = this.store.get(key) as Channel;
      const next: Channel = {
        ...ch,
        // Only what is given changes (the reference's handle_update_command).
        enabled: u.enabled ?? ch.enabled,
        tlcExpiryDelta: u.tlcExpiryDelta ?? ch.tlcExpiryDelta,
        tlcMinValue: u.tlcMinimumValue ?? ch.tlcMinValue,
        tlcFeeProportionalMillionths: u.tlcFeeProportionalMillionths ?? ch.tlcFeeProportionalMillionths,
      };
      const effects: Effect[] = [];
      if (next.state === 'CHANNEL_READY') {
        effects.push({
          type: 'send',
          msg: {
            type: 'UpdateTlcInfo',
            value: {
              channelId: hexToBytes(next.id),
              timestamp: BigInt(this.env.now()),
              channelFlags: next.enabled ? 0 : 1,
              tlcExpiryDelta: next.tlcExpiryDelta,
              tlcMinimumValue: next.tlcMinValue,
              tlcFeeProportionalMillionths: next.tlcFeeProportionalMillionths,
            },
          },
        });
      }
      return this.commit({ ch: next, effects }, () => {
        if (next.state === 'CHANNEL_READY' && this.o.onPolicyUpdated)
          Promise.resolve(this.o.onPolicyUpdated(next)).catch((err) =>
            this.log.warn({ channel: next.id, err: (err as Error).message }, 'channel update not broadcast'),
          );
      });
    });
  }

  /** `shutdown_channel`: cooperative, or `force` (our latest commitment on chain). */
  async shutdownChannel(
    id: string,
    cmd: { closeScript?: ccc.ScriptLike; feeRate?: bigint; force?: boolean },
  ): Promise<void> {
    const key = id.toLowerCase();
    const ch0 = this.store.get(key);
    if (!ch0) throw new DomainError('Messaging failed because channel is closed');
    if (cmd.force && (cmd.closeScript || cmd.feeRate !== undefined))
      throw new DomainError('close_script and fee_rate should not be set when force is true');
    await this.command(ch0.tempId, {
      type: 'shutdown',
      cmd: {
        closeScript: cmd.closeScript ? scriptData(cmd.closeScript) : undefined,
        feeRate: cmd.feeRate,
        force: cmd.force,
      },
    });
  }

  // ---- the TLC API (for payments and the dev module) -----------------------------------------

  /**
   * Offers a TLC on a ready channel; resolves with its id once the AddTlc is on its way. While a
   * round is in progress it waits up to `waitMs` (default 10 s) and goes out with the next
   * round's batch; with `waitMs: 0` it fails at once with the reference's "waiting TLC ACK" text
   * (the dev RPC does that).
   */
  async addTlc(
    channelId: string,
    cmd: AddTlcCommand,
    opts: { waitMs?: number } = {},
  ): Promise<{ tlcId: bigint }> {
    const ch0 = this.known(channelId);
    const tlcId = await this.tlcCommand(ch0.tempId, { type: 'addTlc', cmd }, opts.waitMs);
    return { tlcId: tlcId as bigint };
  }

  /**
   * Fulfils (preimage) or fails (error packet) a TLC the peer offered us; waits like `addTlc`.
   * `waitMs: Infinity` waits for the round however long it takes: a removal refused while the
   * peer reconnects would otherwise wait for the next expiry check to be sent again.
   */
  async removeTlc(
    channelId: string,
    tlcId: bigint,
    reason: RemoveReason,
    opts: { waitMs?: number } = {},
  ): Promise<void> {
    const ch0 = this.known(channelId);
    await this.tlcCommand(ch0.tempId, { type: 'removeTlc', id: tlcId, reason }, opts.waitMs);
  }

  /**
   * A TLC command, inside the channel's actor: run at once on an idle channel, else queued for
   * the batch of the next round (`drainTlcs`, from `commit` when the round ends). With
   * `waitMs: 0` a busy channel refuses it at once (the machine's WAITING_ACK).
   */
  private tlcCommand(tempId: string, cmd: TlcCommand, waitMs = 10_000): Promise<bigint | undefined> {
    return new Promise((resolve, reject) => {
      const w: WaitingTlc = { cmd, resolve, reject };
      this.enqueue(tempId, () => {
        const ch = this.store.get(tempId);
        if (!ch) throw new DomainError('Messaging failed because channel is closed');
        if (ch.round && waitMs > 0) this.tlcQueue.add(tempId, w, waitMs);
        else this.runTlcBatch(ch, [w]);
      }).catch(reject);
    });
  }

  /** The round ended: everything queued meanwhile goes out as the updates of one new round. */
  private drainTlcs(ch: Channel): void {
    if (ch.state === 'CLOSED') {
      for (const w of this.tlcQueue.take(ch.tempId))
        w.reject(new DomainError('Messaging failed because channel is closed'));
      return;
    }
    if (ch.round) return;
    const ws = this.tlcQueue.take(ch.tempId);
    if (ws.length) this.runTlcBatch(ch, ws);
  }

  private runTlcBatch(ch: Channel, ws: WaitingTlc[]): void {
    let s: Step;
    try {
      s = step(ch, { type: 'tlcBatch', cmds: ws.map((w) => w.cmd) }, this.env);
    } catch (e) {
      const err = e instanceof ChannelError ? new DomainError(e.message) : (e as Error);
      for (const w of ws) w.reject(err);
      return;
    }
    // The owners learn their TLC ids once the state holding them is durable.
    this.commit(s, () =>
      settleOutcomes(ws, s.outcomes, () => new DomainError('Messaging failed because channel is closed')),
    ).catch((e) => {
      for (const w of ws) w.reject(e as Error);
    });
  }

  /** dev `commitment_signed`: a round without updates. */
  async commitmentSigned(channelId: string): Promise<void> {
    await this.command(this.known(channelId).tempId, { type: 'signCommitment' });
  }

  /** dev `submit_commitment_transaction`: our latest commitment on chain (the force-close path). */
  async submitCommitmentTransaction(channelId: string): Promise<{ txHash: string }> {
    const ch = this.known(channelId);
    if (!ch.latestCommitmentTx) throw new DomainError('Commitment transaction not found');
    if (ch.flags.includes('LOCAL_STATE_OUTDATED'))
      throw new DomainError('Invalid state: the channel state is outdated: our latest commitment is revoked');
    // fnn mode: our partial is added only by a force close, which counts its nonce's use.
    if (ch.fnn?.own)
      throw new DomainError('Invalid state: fnn-mode commitment not completed; force-close instead');
    const tx = ccc.Transaction.fromBytes(ch.latestCommitmentTx);
    tx.cellDeps = this.o.scripts.fundingLock.cellDeps.map((d) => ccc.CellDep.from(d));
    return { txHash: await this.o.chain.sendTransaction(tx) };
  }

  /** dev `check_channel_shutdown`: looks at the close transaction now instead of at the next poll. */
  async checkChannelShutdown(channelId: string): Promise<void> {
    const ch = this.known(channelId);
    if (ch.state !== 'SHUTTING_DOWN' || !ch.shutdownTxHash) return;
    const c = await txConfirmation(this.o.chain, ch.shutdownTxHash);
    if (c.status === 'committed') await this.deliver(ch.tempId, { type: 'closeConfirmed' });
  }

  /** Subscribes to TLC news: received (committed in both commitments), fulfilled, failed. */
  onTlc(listener: (channelId: string, notice: TlcNotice) => void): () => void {
    this.tlcListeners.add(listener);
    return () => this.tlcListeners.delete(listener);
  }

  /**
   * Subscribes a recorder of TLC news that must not be lost: it runs inside the SQLite
   * transaction that saves the channel state the news comes from, so that both are on disk or
   * neither (a removed TLC's preimage exists nowhere else once the round is saved). It must only
   * write to the node's database, synchronously; acting on the news is for `onTlc`.
   */
  onTlcRecord(recorder: (channelId: string, notice: TlcNotice) => void): () => void {
    this.tlcRecorders.add(recorder);
    return () => this.tlcRecorders.delete(recorder);
  }

  private announcementInfo(ch: Channel): AnnouncementInfo {
    const r = ch.remote as NonNullable<Channel['remote']>;
    return {
      chainHash: hexToBytes(this.o.chainHash),
      channelOutpoint: { txHash: hexToBytes(ch.fundingTxHash as string), index: 0 },
      localPubkey: secp256k1.getPublicKey(this.o.nodeSecret, true),
      remotePubkey: hexToBytes(`0x${ch.peer}`),
      fundingXOnlyKey: aggregateXOnly(
        sorted2(hexToBytes(ch.local.fundingPubkey), hexToBytes(r.fundingPubkey)),
      ),
      capacity: ch.local.fundingAmount + r.fundingAmount,
      udtTypeScript: ch.udt,
    };
  }

  private known(channelId: string): Channel {
    const ch = this.store.get(channelId.toLowerCase());
    if (!ch) throw new DomainError(`Channel not found: ${hash256(channelId.toLowerCase())}`);
    return ch;
  }

  list(): Channel[] {
    return this.store.list();
  }

  get(id: string): Channel | undefined {
    return this.store.get(id.toLowerCase());
  }

  /** node_info: ready channels, and channels still opening. */
  counts(): { channelCount: number; pendingChannelCount: number } {
    let ready = 0;
    let pending = 0;
    for (const ch of this.store.list()) {
      if (ch.state === 'CHANNEL_READY' || ch.state === 'SHUTTING_DOWN') ready++;
      else if (PENDING_STATES.includes(ch.state)) pending++;
    }
    return { channelCount: ready, pendingChannelCount: pending };
  }

  // ---- the actor ---------------------------------------------------------------------------------

  private enqueue(key: string, fn: () => void | Promise<void>): Promise<void> {
    const prev = this.queues.get(key) ?? Promise.resolve();
    const next = prev.then(fn);
    const settled = next.catch(() => undefined);
    this.queues.set(key, settled);
    void settled.then(() => {
      if (this.queues.get(key) === settled) this.queues.delete(key);
    });
    return next;
  }

  /** An RPC command: the machine's refusal becomes the RPC error, nothing changes. */
  private command(tempId: string, ev: Event, after?: (ch: Channel) => void): Promise<void> {
    return this.enqueue(tempId, () => {
      const ch = this.store.get(tempId);
      if (!ch) throw new DomainError('Messaging failed because channel is closed');
      let s: Step;
      try {
        s = step(ch, ev, this.env);
      } catch (e) {
        if (e instanceof ChannelError) throw new DomainError(e.message);
        throw e;
      }
      // The RPC answers once the state is durable and its messages are out.
      return this.commit(s, after && (() => after(s.ch)));
    });
  }

  /** Feeds one event to a channel's machine, inside its actor. */
  private deliver(tempId: string, ev: Event): Promise<void> {
    return this.enqueue(tempId, () => {
      if (this.stopped) return;
      const ch = this.store.get(tempId);
      if (!ch || this.storageStalled.has(ch.peer)) return;
      let s: Step;
      try {
        s = step(ch, ev, this.env);
      } catch (e) {
        if (!(e instanceof ChannelError)) throw e;
        this.log.warn({ channel: ch.id, err: e.message, event: ev.type }, 'channel protocol error');
        if (!abortable(ch)) return;
        s = fail(ch, e.message);
      }
      // A failed commit stalls the peer (`flush`); nothing of this step was sent.
      void this.commit(s);
    }).catch((e) => this.log.error({ channel: tempId, err: (e as Error).message }, 'channel event failed'));
  }

  /**
   * A received step could not be stored (disk full, I/O error): nothing of it was kept or sent,
   * so the peer's message is as if never received. The session is dropped; each reconnection
   * reestablishes the channel from the stored state, which succeeds once the store can write.
   */
  private stallOnStorage(ch: Channel, failure: StorageError): void {
    this.log.error(
      { channel: ch.id, peer: ch.peer, err: failure.message, code: failure.code },
      'channel step not stored: storage failure, the peer session is dropped until it can be',
    );
    this.storageStalled.add(ch.peer);
    this.o.peers.drop?.(ch.peer, failure.message);
  }

  /**
   * Persist, then act: nothing leaves the node before the state it depends on is committed. The
   * state is staged now (reads see it at once) and committed with every state staged in the same
   * turn of the event loop, in one transaction (`staged-store.ts`); then, in order, each step's
   * effects and `then`. Resolves after that; rejects if the commit failed (nothing was sent).
   */
  private commit(s: Step, then?: () => void): Promise<void> {
    this.store.stage(s.ch);
    const done = new Promise<void>((resolve, reject) => this.batch.push({ s, then, resolve, reject }));
    done.catch(() => undefined); // a caller that does not wait has nothing to do on failure
    if (!this.flushing) {
      this.flushing = true;
      // Once the current job and the promise jobs queued before this one have run: the steps
      // of one burst share the commit, and no message waits for another turn of the event loop.
      queueMicrotask(() => this.flush());
    }
    return done;
  }

  /** The group commit: every staged state and the TLC outcomes of its steps, then their effects. */
  private flush(): void {
    this.flushing = false;
    const batch = this.batch.splice(0);
    if (!batch.length) return;
    try {
      this.store.commitStaged(() => {
        if (!this.tlcRecorders.size) return;
        for (const { s } of batch)
          for (const e of s.effects)
            if (e.type === 'tlc') for (const r of this.tlcRecorders) r(s.ch.id, e.notice);
      });
    } catch (e) {
      const failure = StorageError.from(e);
      const peers = new Map(batch.map((b) => [b.s.ch.peer, b.s.ch]));
      for (const ch of peers.values()) {
        if (failure) this.stallOnStorage(ch, failure);
        else this.log.error({ channel: ch.id, err: (e as Error).message }, 'channel states not committed');
      }
      for (const b of batch) b.reject(e as Error);
      return;
    }
    for (const b of batch) {
      try {
        this.afterCommit(b.s);
        b.then?.();
        b.resolve();
      } catch (e) {
        this.log.error({ channel: b.s.ch.id, err: (e as Error).message }, 'channel effects failed');
        b.reject(e as Error);
      }
    }
  }

  private afterCommit(s: Step): void {
    const { ch } = s;
    if (ch.state === 'CLOSED' || ch.state === 'CHANNEL_READY') this.promisedCells.delete(ch.tempId);
    // An opening dropped before its funding went out gives the wallet its cells back.
    if (ch.state === 'CLOSED' && ch.fundingTx && (hasFlag(ch, 'FUNDING_ABORTED') || hasFlag(ch, 'ABANDONED')))
      this.o.wallet.release(fundingTxOf(ch));
    if (ch.external) this.externalWatch.observe(ch);
    this.o.onChange?.(ch);
    this.ackTimeout.observe(ch);
    for (const e of s.effects) this.perform(ch, e);
    // The queued TLC commands go out on the channel as it is now (a later step may be staged).
    void this.enqueue(ch.tempId, () => {
      const cur = this.store.get(ch.tempId);
      if (cur) this.drainTlcs(cur);
    }).catch((e) => this.log.warn({ channel: ch.id, err: (e as Error).message }, 'TLC batch failed'));
  }

  private perform(ch: Channel, e: Effect): void {
    switch (e.type) {
      case 'send':
        try {
          this.o.peers.send(ch.peer, toFiberMessage(e.msg));
        } catch (err) {
          this.log.warn(
            { channel: ch.id, type: e.msg.type, err: (err as Error).message },
            'channel message not sent',
          );
        }
        return;
      case 'fund':
        void (
          ch.external?.lock && !ch.isAcceptor
            ? this.fundExternal(ch, e.tx, e.udtContribution)
            : this.fund(ch, e.tx, e.contribution, e.udtContribution)
        ).then(
          (tx) => this.deliver(ch.tempId, { type: 'funded', tx }),
          (err) => this.deliver(ch.tempId, { type: 'fundingFailed', reason: (err as Error).message }),
        );
        return;
      case 'signFunding':
        // An external funder's "signature" is the witnesses of the tx the user submitted.
        void (
          ch.external && !ch.isAcceptor
            ? Promise.resolve(withFunderWitnesses(ch, e.tx))
            : this.signFunding(e.tx, e.broadcast)
        ).then(
          (tx) => this.deliver(ch.tempId, { type: 'fundingSigned', tx }),
          (err) => this.deliver(ch.tempId, { type: 'fundingFailed', reason: (err as Error).message }),
        );
        return;
      case 'watchFunding':
        this.watch(ch);
        return;
      case 'renamed':
        return;
      case 'broadcast': {
        const tx = e.tx.clone();
        if (e.withFundingDeps)
          tx.cellDeps = this.o.scripts.fundingLock.cellDeps.map((d) => ccc.CellDep.from(d));
        this.o.chain.sendTransaction(tx).catch((err) => {
          // Both sides broadcast the same close: the second one is a duplicate, not a failure.
          const msg = (err as Error).message;
          if (/Duplicated|already exists/.test(msg)) return;
          this.log.warn({ channel: ch.id, tx: tx.hash(), err: msg }, 'broadcast refused');
        });
        return;
      }
      case 'watchClose':
        this.watchTx(ch.tempId, e.txHash, 1, { type: 'closeConfirmed' });
        return;
      case 'settleAfterDelay':
        this.settleLater(ch);
        return;
      case 'announce': {
        const hooks = this.o.announcements;
        if (!hooks) return;
        try {
          const digest = hooks.digest(this.announcementInfo(ch));
          const nodeSignature = secp256k1.sign(digest, this.o.nodeSecret, { prehash: false });
          void this.deliver(ch.tempId, { type: 'announcementDigest', digest, nodeSignature });
        } catch (err) {
          this.log.warn({ channel: ch.id, err: (err as Error).message }, 'channel announcement failed');
        }
        return;
      }
      case 'publishAnnouncement': {
        const { type: _t, ...sigs } = e;
        Promise.resolve(this.o.announcements?.publish(this.announcementInfo(ch), sigs)).catch((err) =>
          this.log.warn(
            { channel: ch.id, err: (err as Error).message },
            'channel announcement not published',
          ),
        );
        return;
      }
      case 'tlc':
        // A TLC without an onion (dev `add_tlc`) has no route to follow: like fnn, it stays
        // until removed by hand, so the payments layer is not told of it.
        if (e.notice.type === 'received' && e.notice.tlc.onion === '0x') return;
        for (const l of this.tlcListeners) {
          try {
            l(ch.id, e.notice);
          } catch (err) {
            this.log.error({ channel: ch.id, err: (err as Error).message }, 'TLC listener failed');
          }
        }
        return;
      case 'failed':
        this.log.warn({ channel: ch.id, reason: e.reason }, 'channel opening failed');
        return;
      case 'alarm':
        this.log.error({ channel: ch.id, peer: ch.peer, reason: e.reason }, 'channel state alarm');
        return;
      case 'warn':
        this.log.warn({ channel: ch.id, peer: ch.peer, reason: e.reason }, 'peer request ignored');
        return;
    }
  }

  private async fund(
    ch: Channel,
    tx: ccc.Transaction,
    contribution: bigint,
    udtAmount: bigint,
  ): Promise<ccc.Transaction> {
    const udtDeps = (ch.udtCellDeps ?? []).map((d) => ccc.CellDep.from(d));
    const addDeps = (t: ccc.Transaction) => {
      for (const d of udtDeps) if (!t.cellDeps.some((x) => x.eq(d))) t.cellDeps.push(d);
    };
    if (!ch.isAcceptor) {
      const t = await this.o.wallet.fund(tx.clone());
      if (udtAmount > 0n) await this.withUdtInputs(ch, t, udtAmount);
      addDeps(t);
      return t;
    }
    // The acceptor adds its part: its cells and change, and its amount into output 0.
    const lock = tx.outputs[0]?.lock;
    if (!lock) throw new ChannelError('funding tx without a funding cell');
    const part = await this.o.wallet.fund(
      ccc.Transaction.from({ version: 0, outputs: [{ lock, capacity: contribution }], outputsData: ['0x'] }),
    );
    if (udtAmount > 0n) await this.withUdtInputs(ch, part, udtAmount);
    const merged = tx.clone();
    (merged.outputs[0] as ccc.CellOutput).capacity += contribution;
    if (ch.udt) {
      const have = ccc.numLeFromBytes(ccc.bytesFrom(merged.outputsData[0] ?? '0x'));
      merged.outputsData[0] = ccc.hexFrom(ccc.numLeToBytes(have + udtAmount, 16));
    }
    for (const d of part.cellDeps) if (!merged.cellDeps.some((x) => x.eq(d))) merged.cellDeps.push(d);
    addDeps(merged);
    merged.inputs.push(...part.inputs);
    for (let i = 1; i < part.outputs.length; i++) {
      merged.outputs.push(part.outputs[i] as ccc.CellOutput);
      merged.outputsData.push(part.outputsData[i] ?? '0x');
    }
    merged.witnesses = [];
    return merged;
  }

  /**
   * The opener's part paid by an external funder: cells of `ch.external.lock` (and its tokens for
   * a UDT channel), change back to it; nothing signed. The cells stay promised to this channel.
   */
  private fundExternal(ch: Channel, tx0: ccc.Transaction, udtAmount: bigint): Promise<ccc.Transaction> {
    const run = this.funderQueue.then(() => this.fundExternalNow(ch, tx0, udtAmount));
    this.funderQueue = run.catch(() => undefined);
    return run;
  }

  private async fundExternalNow(
    ch: Channel,
    tx0: ccc.Transaction,
    udtAmount: bigint,
  ): Promise<ccc.Transaction> {
    const ext = ch.external as NonNullable<Channel['external']>;
    const lock = toScript(ext.lock as ScriptData);
    const wallet = this.o.wallet.lockScript;
    // The default lock's deps when the funder uses it; a custom lock brings its own.
    const deps =
      lock.codeHash === wallet.codeHash && lock.hashType === wallet.hashType
        ? [...(await this.o.wallet.cellDeps())]
        : [];
    for (const d of [...(ext.cellDeps ?? []), ...(ch.udtCellDeps ?? [])]) deps.push(ccc.CellDep.from(d));
    const tx = tx0.clone();
    const reserved = new Set([...this.promisedCells.values()].flat());
    const used = await fundFromLock({
      chain: this.o.chain,
      tx,
      lock,
      cellDeps: deps,
      feeRate: ch.fundingFeeRate,
      reserved,
    });
    this.promisedCells.set(ch.tempId, used);
    if (udtAmount > 0n) await this.addUdtInputs(ch, tx, udtAmount, lock);
    return tx;
  }

  /** `addUdtInputs` for a tx the wallet funded: its CKB inputs go back to it when tokens lack. */
  private async withUdtInputs(ch: Channel, tx: ccc.Transaction, amount: bigint): Promise<void> {
    try {
      await this.addUdtInputs(ch, tx, amount);
    } catch (e) {
      this.o.wallet.release(tx);
      throw e;
    }
  }

  /**
   * Our UDT cells for `amount` tokens (or the external funder's, under `lock`): inputs, and one
   * change cell keeping their capacity and the tokens left over. The bytes they add are paid
   * from the CKB change under the same lock (2000 shannons per cell).
   */
  private async addUdtInputs(
    ch: Channel,
    tx: ccc.Transaction,
    amount: bigint,
    lock: ccc.Script = this.o.wallet.lockScript,
  ): Promise<void> {
    const udt = toScript(ch.udt as ScriptData);
    const page = await this.o.chain.getCells(
      {
        script: scriptToJson(lock),
        script_type: 'lock',
        script_search_mode: 'exact',
        filter: { script: scriptToJson(udt) },
        with_data: true,
      },
      'asc',
      100,
    );
    let tokens = 0n;
    let capacity = 0n;
    let used = 0;
    const promised = new Set([...this.promisedCells.values()].flat());
    const picked: string[] = [];
    for (const c of page.objects) {
      if (tokens >= amount) break;
      const data = ccc.bytesFrom(c.output_data ?? '0x');
      const key = `${c.out_point.tx_hash}:${Number(c.out_point.index)}`;
      if (data.length < 16 || promised.has(key)) continue;
      picked.push(key);
      tx.inputs.push(
        ccc.CellInput.from({
          previousOutput: { txHash: c.out_point.tx_hash, index: c.out_point.index },
          since: 0n,
        }),
      );
      tokens += ccc.numLeFromBytes(data.subarray(0, 16));
      capacity += BigInt(c.output.capacity);
      used++;
    }
    if (tokens < amount)
      throw new DomainError(`insufficient UDT in the wallet: need ${amount}, have ${tokens}`);
    // Promised in the same turn as picked: a concurrent opening cannot take them in between.
    this.promisedCells.set(ch.tempId, [...(this.promisedCells.get(ch.tempId) ?? []), ...picked]);
    tx.addOutput({ lock, type: udt, capacity }, ccc.numLeToBytes(tokens - amount, 16));
    const change = tx.outputs.findIndex((o, i) => i > 0 && o.lock.eq(lock) && !o.type);
    if (change < 0) throw new DomainError('no CKB change to pay for the UDT inputs');
    (tx.outputs[change] as ccc.CellOutput).capacity -= 2000n * BigInt(used);
  }

  /** Signs every input of ours (secp256k1 sighash-all under the wallet lock). */
  private async signFunding(tx0: ccc.Transaction, broadcast: boolean): Promise<ccc.Transaction> {
    // Broadcasting is the machine's decision (after the fully signed tx is persisted).
    void broadcast;
    const tx = tx0.clone();
    const key = this.o.walletSecretKey;
    if (!key) return this.o.wallet.sign(tx);
    const lock = this.o.wallet.lockScript;
    const ours: number[] = [];
    for (const [i, input] of tx.inputs.entries()) {
      const live = (await this.o.chain.getLiveCell(input.previousOutput, false)) as {
        status: string;
        cell?: { output?: { lock?: { code_hash: string; hash_type: string; args: string } } };
      };
      const l = live.cell?.output?.lock;
      if (
        l &&
        ccc.Script.from({ codeHash: l.code_hash, hashType: l.hash_type as ccc.HashType, args: l.args }).eq(
          lock,
        )
      )
        ours.push(i);
    }
    if (ours.length) signSighashAll(tx, ours, key);
    return tx;
  }

  private watch(ch: Channel): void {
    if (!ch.fundingTxHash) return;
    this.watchTx(ch.tempId, ch.fundingTxHash, this.o.confirmations ?? 4, { type: 'fundingConfirmed' });
  }

  /**
   * Polls the chain until `hash` is `need` blocks deep, then feeds `ev` to the channel. While the
   * chain does not know the tx (a lost broadcast, `rebroadcast.ts`), the same bytes go out again
   * every `RESEND_EVERY` such polls (not on the first: the broadcast itself may be on its way).
   */
  private watchTx(tempId: string, hash: string, need: number, ev: Event): void {
    const key = `${tempId}:${hash}`;
    if (this.watchers.has(key)) return;
    let busy = false;
    let missing = 0;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      txConfirmation(this.o.chain, hash)
        .then((c) => {
          if (c.status === 'committed' && c.depth >= need) {
            clearInterval(timer);
            this.watchers.delete(key);
            return this.deliver(tempId, ev);
          }
          if (c.status !== 'unknown' && c.status !== 'rejected') return;
          if (++missing % RESEND_EVERY !== 0) return;
          const ch = this.store.get(tempId);
          const tx = ch && resendable(ch, hash);
          if (!tx) return;
          this.log.warn(
            { channel: ch.id, tx: hash, status: c.status },
            'the chain does not know our tx: sending it again',
          );
          return this.o.chain.sendTransaction(tx).then(
            () => undefined,
            (err) => {
              const msg = (err as Error).message;
              if (!/Duplicated|already exists/.test(msg))
                this.log.warn({ channel: ch.id, tx: hash, err: msg }, 'resend refused');
            },
          );
        })
        .catch((e) =>
          this.log.warn({ channel: tempId, err: (e as Error).message }, 'confirmation check failed'),
        )
        .finally(() => {
          busy = false;
        });
    }, this.o.pollMs ?? 1000);
    timer.unref?.();
    this.watchers.set(key, timer);
  }

  /**
   * After a force close: once the commitment delay has passed, our share (balance + reserve)
   * goes to our shutdown script. Retried each poll while the chain says "immature" or while the
   * other side must settle first (see `partySettlementTx`).
   */
  private settleLater(ch0: Channel): void {
    const key = `${ch0.tempId}:settle`;
    if (this.watchers.has(key)) return;
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      this.trySettle(ch0.tempId)
        .then((hash) => {
          if (!hash) return;
          clearInterval(timer);
          this.watchers.delete(key);
          return this.deliver(ch0.tempId, { type: 'settled', txHash: hash });
        })
        .catch((e) =>
          this.log.info({ channel: ch0.id, err: (e as Error).message }, 'settlement not possible yet'),
        )
        .finally(() => {
          busy = false;
        });
    }, this.o.pollMs ?? 1000);
    timer.unref?.();
    this.watchers.set(key, timer);
  }

  private async trySettle(tempId: string): Promise<string | null> {
    const ch = this.store.get(tempId);
    if (!ch?.latestCommitmentTx || !ch.flags.includes('WAITING_ONCHAIN_SETTLEMENT')) return null;
    const settleKey = deriveChannelKeys(hexToBytes(ch.seed)).tlcBaseKey;
    const base = {
      settleKey,
      to: toScript(ch.local.shutdownScript),
      fee: 1000n,
      cellDeps: this.o.scripts.commitmentLock.cellDeps,
      delayEpoch: ch.delayEpoch,
    };
    if (ch.flags.includes('LOCAL_STATE_OUTDATED')) return this.outdatedSettled(ch);
    const peers = ch.flags.includes('UNCOOPERATIVE_REMOTE');
    const { script } = buildCommitment(ch, peers, this.env);
    // With TLCs pending, a share taken first lets the other side take the TLCs with its own.
    if (ch.udt || script[0] !== 0) return this.towerSettled(ch, peers);
    // From the commitment cell, or from what the peer's settlement left of it if it went first.
    return this.settleFromCells(ch, base, !peers);
  }

  /**
   * The share of a UDT channel, or of a commitment with TLCs pending, is the watchtower's to
   * settle (`share-settled.ts`): done once it is out.
   */
  private async towerSettled(ch: Channel, peers: boolean): Promise<string | null> {
    const hash = peers ? ch.shutdownTxHash : ch.latestCommitmentTxHash;
    if (!hash) return null;
    const { args } = buildCommitment(ch, peers, this.env);
    const done = await shareSettled(this.o.chain, this.o.scripts.commitmentLock, hash, args, !peers);
    return done ? hash : null;
  }

  /**
   * Our share of the peer's commitment (unlock 0xFF), from the commitment cell or from what the
   * peer's own settlement left of it. A commitment whose settlement script is not the one we
   * signed last (an old, revoked one) is left to the watchtower.
   */
  private async settleFromCells(
    ch: Channel,
    base: Omit<Parameters<typeof partySettlementTx>[0], 'cell' | 'script' | 'holder'>,
    holder: boolean,
  ): Promise<string | null> {
    // The version in the args (bytes 28..36) may be one below our counter (the peer's
    // commitment): search by the key hash and delay only, and recognise the cell by its
    // settlement script hash.
    const { script, args } = buildCommitment(ch, !holder, this.env);
    const lock = {
      codeHash: this.o.scripts.commitmentLock.codeHash,
      hashType: this.o.scripts.commitmentLock.hashType,
      args: ccc.hexFrom(args.subarray(0, 28)),
    };
    const page = await this.o.chain.getCells(
      { script: scriptToJson(lock), script_type: 'lock', script_search_mode: 'prefix' },
      'desc',
      10,
    );
    for (const c of page.objects) {
      const cellArgs = ccc.bytesFrom(c.output.lock.args);
      // The fresh commitment cell, or the continuation the other side's settlement left (its
      // block zeroed: the holder's is the first of the two, the other's the second).
      const zeroed = holder
        ? [...script.subarray(0, script.length - 36), ...new Uint8Array(36)]
        : [
            ...script.subarray(0, script.length - 72),
            ...new Uint8Array(36),
            ...script.subarray(script.length - 36),
          ];
      const candidates = [script, Uint8Array.from(zeroed)];
      const s = candidates.find((x) => ccc.hexFrom(blake160(x)) === ccc.hexFrom(cellArgs.subarray(36, 56)));
      if (!s) continue;
      const tx = partySettlementTx({
        ...base,
        cell: {
          outPoint: { txHash: c.out_point.tx_hash, index: BigInt(c.out_point.index) },
          output: ccc.CellOutput.from({
            capacity: BigInt(c.output.capacity),
            lock: ccc.Script.from({
              codeHash: c.output.lock.code_hash,
              hashType: c.output.lock.hash_type as ccc.HashType,
              args: c.output.lock.args,
            }),
          }),
        },
        script: s,
        holder,
      });
      return this.o.chain.sendTransaction(tx);
    }
    return null;
  }

  /**
   * An outdated channel closed by the peer: our state cannot rebuild the settlement script of the
   * peer's newer commitment, so the built-in watchtower takes our share once the peer's own
   * settlement reveals it on chain. Settled when no cell is left under the commitment lock of
   * the peer's commitments (found by the key hash and delay, which do not change with versions).
   */
  private async outdatedSettled(ch: Channel): Promise<string | null> {
    if (!ch.shutdownTxHash) return null;
    const { args } = buildCommitment(ch, true, this.env);
    const lock = {
      codeHash: this.o.scripts.commitmentLock.codeHash,
      hashType: this.o.scripts.commitmentLock.hashType,
      args: ccc.hexFrom(args.subarray(0, 28)),
    };
    const page = await this.o.chain.getCells(
      { script: scriptToJson(lock), script_type: 'lock', script_search_mode: 'prefix' },
      'desc',
      1,
    );
    const done =
      page.objects.length === 0 &&
      (await txConfirmation(this.o.chain, ch.shutdownTxHash)).status === 'committed';
    return done ? ch.shutdownTxHash : null;
  }

  /**
   * Notices a force close by the peer: the funding cell of a ready channel spent by a transaction
   * that is neither our close nor our commitment.
   */
  private async checkFundingSpent(ch: Channel): Promise<void> {
    if (!ch.fundingTxHash) return;
    const live = (await this.o.chain.getLiveCell({ txHash: ch.fundingTxHash, index: 0 }, false)) as {
      status: string;
    };
    if (live.status === 'live') return;
    const fundingLockScript = fundingTxOf(ch).outputs[0]?.lock;
    if (!fundingLockScript) return;
    const txs = await this.o.chain.call<{ objects: { tx_hash: string; io_type: string }[] }>(
      'get_transactions',
      [
        { script: scriptToJson(fundingLockScript), script_type: 'lock', script_search_mode: 'exact' },
        'desc',
        '0xa',
      ],
    );
    const spender = txs.objects.find((t) => t.io_type === 'input')?.tx_hash;
    if (!spender || spender === ch.shutdownTxHash || spender === ch.latestCommitmentTxHash) return;
    await this.deliver(ch.tempId, { type: 'remoteCommitment', txHash: spender });
  }

  /** `funding_timeout_seconds`: openings stuck before their funding was signed are dropped. */
  private abortStaleOpenings(channels: Channel[]): void {
    const seconds = this.o.fundingTimeoutSeconds ?? DEFAULT_FUNDING_TIMEOUT_SECONDS;
    for (const c of channels) {
      if (!fundingTimedOut(c, this.env.now(), seconds * 1000)) continue;
      void this.enqueue(c.tempId, () => {
        const cur = this.store.get(c.tempId);
        if (!cur || !fundingTimedOut(cur, this.env.now(), seconds * 1000)) return;
        this.log.warn({ channel: cur.id, state: cur.state }, 'funding timed out');
        this.commit(fail(cur, fundingTimeoutReason(seconds)));
      }).catch((e) => this.log.error({ channel: c.id, err: (e as Error).message }, 'funding abort failed'));
    }
  }

  private monitorFunding(): void {
    let busy = false;
    const timer = setInterval(
      () => {
        if (busy || this.stopped) return;
        busy = true;
        const all = this.store.list();
        this.abortStaleOpenings(all);
        const open = all.filter(
          (c) => c.state === 'CHANNEL_READY' || (c.state === 'SHUTTING_DOWN' && !c.shutdown?.force),
        );
        Promise.all(
          open.map((c) =>
            this.checkFundingSpent(c).catch((e) =>
              this.log.warn({ channel: c.id, err: (e as Error).message }, 'funding check failed'),
            ),
          ),
        ).finally(() => {
          busy = false;
        });
      },
      (this.o.pollMs ?? 1000) * 2,
    );
    timer.unref?.();
    this.watchers.set('funding-monitor', timer);
  }

  /**
   * On every (re)connection: our counters for each open channel with that peer. An opening not
   * yet signed by us is dropped instead: a message of it may have been lost with the old session
   * (the peer may never have seen our OpenChannel), and the peer drops it too on our reestablish
   * or our TxAbort, so both ends agree without waiting for the funding timeout.
   */
  private reestablish(pubkey: string): void {
    for (const ch of this.store.list()) {
      if (ch.peer !== pubkey || ch.state === 'CLOSED') continue;
      void this.enqueue(ch.tempId, () => {
        const cur = this.store.get(ch.tempId);
        if (!cur || cur.state === 'CLOSED') return;
        if (abortable(cur))
          return this.commit(fail(cur, 'the peer reconnected before the funding was signed'));
        this.perform(cur, { type: 'send', msg: reestablishMessage(cur) });
      }).catch((e) => this.log.warn({ channel: ch.id, err: (e as Error).message }, 'reestablish failed'));
    }
  }

  // ---- the wire ----------------------------------------------------------------------------------

  private onWire(pubkey: string, raw: FiberMessage): void {
    let msg: ChannelMessage | null;
    try {
      msg = fromFiberMessage(raw);
    } catch (e) {
      this.log.warn({ pubkey, type: raw.type, err: (e as Error).message }, 'malformed channel message');
      return;
    }
    if (!msg) return;
    if (msg.type === 'OpenChannel') {
      const m = msg.value;
      const tempId = bytesToHex(m.channelId);
      void this.enqueue(tempId, () => this.onOpen(pubkey, m)).catch((e) =>
        this.log.error({ pubkey, err: (e as Error).message }, 'OpenChannel handling failed'),
      );
      return;
    }
    const id = bytesToHex(msg.value.channelId);
    const ch = this.store.get(id);
    if (!ch || ch.peer !== pubkey) {
      this.log.warn({ pubkey, type: msg.type, channel: id }, 'message for an unknown channel');
      return;
    }
    void this.deliver(ch.tempId, { type: 'peer', msg });
  }

  private onOpen(pubkey: string, m: import('./wire.ts').OpenChannel): void {
    const tempId = bytesToHex(m.channelId);
    if (this.store.get(tempId)) return; // a replay of an open we already have
    const refuse = (reason: string) => {
      this.log.warn({ pubkey, channel: tempId, reason }, 'refusing OpenChannel');
      this.o.peers.send(
        pubkey,
        toFiberMessage({
          type: 'TxAbort',
          value: { channelId: m.channelId, message: new TextEncoder().encode(reason) },
        }),
      );
    };
    const err = checkOpenChannel(m, this.env);
    if (err) {
      refuse(err);
      return;
    }
    const udt = m.fundingUdtTypeScript ? this.whitelisted(m.fundingUdtTypeScript) : null;
    if (m.fundingUdtTypeScript && !udt) {
      refuse('Invalid UDT type script');
      return;
    }
    const shutdown = ccc.Script.from(this.o.defaultShutdownScript);
    const reserve = reserveFor(shutdown, udt ? toScript(udt) : null, this.rulesOf(pubkey));
    const seed = newChannelSeed(this.o.nodeSecret, this.store.nextCount());
    const ch = receiveOpen(
      m,
      {
        peer: pubkey,
        rules: this.rulesOf(pubkey),
        seed,
        shutdownScript: scriptData(shutdown),
        reserve,
        udtCellDeps: udt ? this.udtDeps(udt) : [],
      },
      this.env,
      {
        tlcExpiryDelta: this.o.tlc.expiryDelta,
        tlcMinValue: this.o.tlc.minValue,
        tlcFeeProportionalMillionths: this.o.tlc.feeProportionalMillionths,
      },
    );
    const { minCkbFundingAmount, ckbFundingAmount } = this.o.autoAccept;
    if (udt) {
      // A whitelisted token with `auto_accept_amount`: accepted with our reserve and no tokens.
      const min = this.whitelistEntry(udt)?.autoAcceptAmount;
      if (min !== undefined && min !== null && m.fundingAmount >= min) {
        this.commit(acceptChannel(ch, { fundingAmount: 0n }, this.env));
      } else {
        this.commit({ ch, effects: [] });
      }
      return;
    }
    // As fnn: the opener's funding amount alone (its reserve aside) meets the minimum, and we
    // have an amount to add that covers our reserve.
    if (m.fundingAmount >= minCkbFundingAmount && ckbFundingAmount > 0n && ckbFundingAmount >= reserve) {
      this.commit(acceptChannel(ch, { fundingAmount: ckbFundingAmount - reserve }, this.env));
    } else {
      this.commit({ ch, effects: [] });
    }
  }

  private whitelistEntry(s: ScriptData): UdtWhitelistEntry | undefined {
    return this.o.udtWhitelist?.match(toScript(s));
  }

  /** The whitelist's out-point cell deps of a token. */
  private udtDeps(s: ScriptData): ccc.CellDepLike[] {
    return UdtWhitelist.cellDeps(this.whitelistEntry(s));
  }

  /** The token's script when the whitelist has it (args exact or matching a pattern), else null. */
  private whitelisted(s: ccc.ScriptLike): ScriptData | null {
    return this.o.udtWhitelist?.match(s) ? scriptData(s) : null;
  }
}

function checkExpiryDelta(delta: bigint, min = MIN_TLC_EXPIRY_DELTA): void {
  if (delta < min)
    throw new DomainError(
      `Invalid parameter: TLC expiry delta is too small, expect larger than ${min}, got ${delta}`,
    );
  if (delta > MAX_TLC_EXPIRY_DELTA)
    throw new DomainError(
      `Invalid parameter: TLC expiry delta is too large, expected to be smaller than ${MAX_TLC_EXPIRY_DELTA}, got ${delta}`,
    );
}

/** Fiber v0.8's state names, for the error texts that quote them. */
export function v08StateName(s: Channel['state']): string {
  return s
    .toLowerCase()
    .split('_')
    .map((w) => w[0]?.toUpperCase() + w.slice(1))
    .join('');
}

export { toScript };
