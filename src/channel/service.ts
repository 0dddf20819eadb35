/**
 * The channel shell: one actor (a promise queue) per channel, persist-before-send, the wallet
 * for funding, the chain for confirmations, auto-accept from the config. All decisions are the
 * pure machine's (`machine.ts`); this file only moves bytes and waits.
 */
import { ccc } from '@ckb-ccc/core';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import type { ChainClient } from '../chain/index.ts';
import { txConfirmation, UdtWhitelist, type UdtWhitelistEntry } from '../chain/index.ts';
import { bytesToHex, hexToBytes, StorageError } from '../codec/index.ts';
import { type FiberMessage, hasFeatureBit, STRAND_CHANNEL_RULES_BIT } from '../p2p/index.ts';
import { AckTimeout } from './ack-timeout.ts';
import { ChainWatch, type ChannelLogger } from './chain-watch.ts';
import { fundingTxOf } from './commitment.ts';
import { ChannelError } from './errors.ts';
import { CHECK_CHANNELS_INTERVAL_MS, MS_PER_EPOCH_MAINNET } from './expiry.ts';
import { ExpiryMonitor } from './expiry-monitor.ts';
import { ExternalFundingWatch } from './external-funder.ts';
import { EXTERNAL_TIMEOUT_REASON, withFunderWitnesses } from './external-funding.ts';
import { FundingSweep } from './funding-sweep.ts';
import { DEFAULT_FUNDING_TIMEOUT_SECONDS, fundingTimedOut, fundingTimeoutReason } from './funding-timeout.ts';
import { deriveChannelKeys, newChannelSeed, tempChannelId } from './keys.ts';
import { step } from './machine.ts';
import { aggregateXOnly, sorted2 } from './musig.ts';
import { acceptChannel, checkOpenChannel, openChannel, receiveOpen } from './open.ts';
import { abortable, reestablishMessage } from './reestablish.ts';
import {
  type AcceptRequest,
  acceptTerms,
  autoAcceptFunding,
  checkExpiryDelta,
  type OpenRequest,
  openTerms,
} from './requests.ts';
import { type ChannelRules, reserveFor } from './reserve.ts';
import { scriptData, toScript } from './script-data.ts';
import type { AnnouncementInfo, ChannelServiceOptions } from './service-options.ts';
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
import type { ScriptInfo } from './tx.ts';
import { WalletFunding } from './wallet-funding.ts';
import {
  CHANNEL_CODECS,
  type ChannelMessage,
  type ChannelMessageKind,
  fromFiberMessage,
  toFiberMessage,
} from './wire.ts';

const NOOP_LOG: ChannelLogger = { info() {}, warn() {}, error() {} };
/** The reference's PEER_CHANNEL_RESPONSE_TIMEOUT. */
const PEER_RESPONSE_TIMEOUT_MS = 30_000;
/** Polls of a watched tx the chain does not know between two sends of it. */

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
  private readonly chainWatch: ChainWatch;
  private fundingMonitor?: NodeJS.Timeout;
  private readonly fundingSweep = new FundingSweep();
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
  /** Our part of each funding tx: wallet cells, an external funder's, tokens; its signatures. */
  private readonly funding: WalletFunding;

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
    this.chainWatch = new ChainWatch({
      chain: o.chain,
      commitmentLock: o.scripts.commitmentLock,
      env: this.env,
      log: this.log,
      pollMs: o.pollMs ?? 1000,
      confirmations: o.confirmations ?? 4,
      channel: (tempId) => this.store.get(tempId),
      deliver: (tempId, ev) => this.deliver(tempId, ev),
    });
    this.funding = new WalletFunding({
      wallet: o.wallet,
      chain: o.chain,
      walletSecretKey: o.walletSecretKey,
    });
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
      if ((ch.state === 'AWAITING_CHANNEL_READY' || signed) && ch.fundingTxHash) this.chainWatch.funding(ch);
      if (
        ch.state === 'SHUTTING_DOWN' &&
        ch.shutdownTxHash &&
        ch.flags.includes('WAITING_COMMITMENT_CONFIRMATION')
      )
        this.chainWatch.tx(ch.tempId, ch.shutdownTxHash, 1, { type: 'closeConfirmed' });
      if (ch.state === 'CLOSED' && ch.flags.includes('WAITING_ONCHAIN_SETTLEMENT'))
        this.chainWatch.settlement(ch);
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
    this.chainWatch.stop();
    if (this.fundingMonitor) clearInterval(this.fundingMonitor);
    this.tlcQueue.rejectAll(() => new ChannelError('WaitingTlcAck', WAITING_ACK));
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
      throw new ChannelError(
        'PeerFeaturesUnknown',
        `Invalid parameter: Peer Pubkey(${pk})'s feature not found, waiting for peer to send Init message`,
      );
    }
    const udt = r.fundingUdtTypeScript ? this.whitelisted(r.fundingUdtTypeScript) : null;
    if (r.fundingUdtTypeScript && !udt)
      throw new ChannelError('InvalidParameter', 'Invalid parameter: Invalid UDT type script');
    const t = openTerms(r, {
      udt,
      rules: this.rulesOf(pk),
      defaultShutdownScript: this.o.defaultShutdownScript,
      tlc: this.o.tlc,
      minTlcExpiryDelta: this.o.minTlcExpiryDelta,
    });
    const seed = newChannelSeed(this.o.nodeSecret, this.store.nextCount());
    const tempId = bytesToHex(tempChannelId(deriveChannelKeys(seed).tlcBasepoint));
    const rules = this.rulesOf(pk);
    const udtCellDeps = udt ? this.udtDeps(udt) : [];
    const s = openChannel({ ...t, peer: pk, rules, seed, tempId, udtCellDeps }, this.env);
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
      throw new ChannelError(
        'PeerNotConnected',
        `Invalid parameter: Peer Pubkey(${r.pubkey}) is not connected`,
      );
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
    if (!ch0)
      throw new ChannelError('ChannelNotFound', `Channel not found error: ${hash256(key)}`, {
        channelId: key,
      });
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
      new ChannelError(
        'ChannelNotFound',
        `Invalid parameter: No channel with temp id ${hash256(tempId)} found`,
        { channelId: tempId },
      );
    const ch0 = this.store.get(tempId);
    if (!ch0 || ch0.tempId !== tempId || !ch0.isAcceptor || ch0.state !== 'NEGOTIATING_FUNDING')
      throw notFound();
    const t = acceptTerms(ch0, r, {
      defaultShutdownScript: this.o.defaultShutdownScript,
      minTlcExpiryDelta: this.o.minTlcExpiryDelta,
    });
    let id = '';
    await this.enqueue(tempId, () => {
      const ch = this.store.get(tempId);
      if (ch?.state !== 'NEGOTIATING_FUNDING') throw notFound();
      const s = acceptChannel({ ...ch, local: { ...ch.local, ...t.local } }, t.params(ch), this.env);
      id = s.ch.id;
      return this.commit(s);
    });
    return { channelId: id };
  }

  async abandonChannel(id: string): Promise<void> {
    const key = id.toLowerCase();
    const ch0 = this.store.get(key);
    if (!ch0)
      throw new ChannelError('ChannelNotFound', `Invalid parameter: Channel ${hash256(key)} not found`, {
        channelId: key,
      });
    await this.enqueue(ch0.tempId, () => {
      const ch = this.store.get(key) as Channel;
      const late =
        ch.state === 'CHANNEL_READY' ||
        ch.state === 'SHUTTING_DOWN' ||
        ch.state === 'CLOSED' ||
        ch.state === 'AWAITING_CHANNEL_READY' ||
        (ch.state === 'AWAITING_TX_SIGNATURES' && ch.flags.includes('OUR_TX_SIGNATURES_SENT'));
      if (late) {
        throw new ChannelError(
          'InvalidState',
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
    if (!ch0 || ch0.state === 'CLOSED')
      throw new ChannelError('ChannelClosed', 'Messaging failed because channel is closed');
    if (!ch0.isPublic)
      throw new ChannelError('InvalidState', 'Invalid state: Only public channel can be updated');
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
    if (!ch0) throw new ChannelError('ChannelClosed', 'Messaging failed because channel is closed');
    if (cmd.force && (cmd.closeScript || cmd.feeRate !== undefined))
      throw new ChannelError(
        'InvalidParameter',
        'close_script and fee_rate should not be set when force is true',
      );
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
        if (!ch) throw new ChannelError('ChannelClosed', 'Messaging failed because channel is closed');
        if (ch.round && waitMs > 0) this.tlcQueue.add(tempId, w, waitMs);
        else this.runTlcBatch(ch, [w]);
      }).catch(reject);
    });
  }

  /** The round ended: everything queued meanwhile goes out as the updates of one new round. */
  private drainTlcs(ch: Channel): void {
    if (ch.state === 'CLOSED') {
      for (const w of this.tlcQueue.take(ch.tempId))
        w.reject(new ChannelError('ChannelClosed', 'Messaging failed because channel is closed'));
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
      for (const w of ws) w.reject(e as Error);
      return;
    }
    // The owners learn their TLC ids once the state holding them is durable.
    this.commit(s, () =>
      settleOutcomes(
        ws,
        s.outcomes,
        () => new ChannelError('ChannelClosed', 'Messaging failed because channel is closed'),
      ),
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
    if (!ch.latestCommitmentTx)
      throw new ChannelError('CommitmentTxNotFound', 'Commitment transaction not found');
    if (ch.flags.includes('LOCAL_STATE_OUTDATED'))
      throw new ChannelError(
        'LocalStateOutdated',
        'Invalid state: the channel state is outdated: our latest commitment is revoked',
      );
    // fnn mode: our partial is added only by a force close, which counts its nonce's use.
    if (ch.fnn?.own)
      throw new ChannelError(
        'InvalidState',
        'Invalid state: fnn-mode commitment not completed; force-close instead',
      );
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
    if (!ch)
      throw new ChannelError('ChannelNotFound', `Channel not found: ${hash256(channelId.toLowerCase())}`, {
        channelId,
      });
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
      if (!ch) throw new ChannelError('ChannelClosed', 'Messaging failed because channel is closed');
      // The machine's refusal (a ChannelError) is the RPC error as is.
      const s = step(ch, ev, this.env);
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
    if (ch.state === 'CLOSED' || ch.state === 'CHANNEL_READY') this.funding.settled(ch.tempId);
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
            ? this.funding.fundExternal(ch, e.tx, e.udtContribution)
            : this.funding.fund(ch, e.tx, e.contribution, e.udtContribution)
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
            : this.funding.sign(e.tx)
        ).then(
          (tx) => this.deliver(ch.tempId, { type: 'fundingSigned', tx }),
          (err) => this.deliver(ch.tempId, { type: 'fundingFailed', reason: (err as Error).message }),
        );
        return;
      case 'watchFunding':
        this.chainWatch.funding(ch);
        return;
      case 'renamed':
        return;
      case 'broadcast': {
        const tx = e.tx.clone();
        if (e.withFundingDeps)
          tx.cellDeps = this.o.scripts.fundingLock.cellDeps.map((d) => ccc.CellDep.from(d));
        // Both sides broadcast the same close: the chain client takes the second one, a
        // duplicate, as sent (CKB's -1107); anything else is a refusal worth logging.
        this.o.chain.sendTransaction(tx).catch((err) => {
          this.log.warn({ channel: ch.id, tx: tx.hash(), err: (err as Error).message }, 'broadcast refused');
        });
        return;
      }
      case 'watchClose':
        this.chainWatch.tx(ch.tempId, e.txHash, 1, { type: 'closeConfirmed' });
        return;
      case 'settleAfterDelay':
        this.chainWatch.settlement(ch);
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
        const open = this.fundingSweep.take(
          all.filter(
            (c) => c.state === 'CHANNEL_READY' || (c.state === 'SHUTTING_DOWN' && !c.shutdown?.force),
          ),
        );
        Promise.all(
          open.map((c) =>
            this.chainWatch
              .fundingSpent(c)
              .catch((e) =>
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
    this.fundingMonitor = timer;
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
    const auto = autoAcceptFunding(m.fundingAmount, {
      ...this.o.autoAccept,
      reserve,
      udtMinimum: udt ? (this.whitelistEntry(udt)?.autoAcceptAmount ?? null) : undefined,
    });
    this.commit(auto === null ? { ch, effects: [] } : acceptChannel(ch, { fundingAmount: auto }, this.env));
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

/** Fiber v0.8's state names, for the error texts that quote them. */
export function v08StateName(s: Channel['state']): string {
  return s
    .toLowerCase()
    .split('_')
    .map((w) => w[0]?.toUpperCase() + w.slice(1))
    .join('');
}

export { toScript };
