/**
 * The channel shell: one actor (a promise queue) per channel, persist-before-send
 * (`group-commit.ts`), then the step's effects (`effects.ts`); openings in `opening.ts`, TLC
 * commands in `tlc-commands.ts`. All decisions are the pure machine's (`machine.ts`); this file
 * only moves bytes and waits.
 */
import { ccc } from '@ckb-ccc/core';
import type { ChainClient } from '../chain/index.ts';
import { txConfirmation } from '../chain/index.ts';
import { bytesToHex, type StorageError } from '../codec/index.ts';
import type { FiberMessage } from '../p2p/index.ts';
import { AckTimeout } from './ack-timeout.ts';
import { ChainWatch, type ChannelLogger } from './chain-watch.ts';
import { fundingTxOf } from './commitment.ts';
import { DeferredSign, PIPELINED_SIGN_DELAY_MS } from './deferred-sign.ts';
import { ChannelEffects } from './effects.ts';
import { ChannelError, hash256 } from './errors.ts';
import { CHECK_CHANNELS_INTERVAL_MS, MS_PER_EPOCH_MAINNET } from './expiry.ts';
import { ExpiryMonitor } from './expiry-monitor.ts';
import { ExternalFundingWatch } from './external-funder.ts';
import { FundingMonitor } from './funding-monitor.ts';
import { GroupCommit } from './group-commit.ts';
import { step } from './machine.ts';
import { madeAheadOr } from './nonce-pool.ts';
import { ChannelOpening } from './opening.ts';
import { type PolicyUpdate, policyUpdate } from './policy-update.ts';
import { PreimageFirst } from './preimage-first.ts';
import { abortable } from './reestablish.ts';
import { type AcceptRequest, checkExpiryDelta, type OpenRequest } from './requests.ts';
import { scriptData, toScript } from './script-data.ts';
import type { ChannelServiceOptions } from './service-options.ts';
import { StagedChannelStore } from './staged-store.ts';
import { type Channel, hasFlag, PENDING_STATES } from './state.ts';
import { type Event, fail, type MachineEnv, type Step } from './step.ts';
import { ChannelStore } from './store.ts';
import type { AddTlcCommand, RemoveReason, TlcNotice } from './tlc.ts';
import { TlcCommands } from './tlc-commands.ts';
import type { ScriptInfo } from './tx.ts';
import { WalletFunding } from './wallet-funding.ts';
import { CHANNEL_CODECS, type ChannelMessage, type ChannelMessageKind, fromFiberMessage } from './wire.ts';

const NOOP_LOG: ChannelLogger = { info() {}, warn() {}, error() {} };
/** The reference's PEER_CHANNEL_RESPONSE_TIMEOUT. */
const PEER_RESPONSE_TIMEOUT_MS = 30_000;

/**
 * The funding and commitment lock scripts with their cell deps: the chain client resolves them
 * (the network's preset and `fiber.scripts`, or the dev chain's `get_dev_scripts`).
 */
export async function loadChannelScripts(
  chain: ChainClient,
): Promise<{ fundingLock: ScriptInfo; commitmentLock: ScriptInfo }> {
  return chain.channelScripts();
}

export class ChannelService {
  /** Channel states: the durable store, with the states staged for the next group commit. */
  readonly store: StagedChannelStore;
  private readonly log: ChannelLogger;
  private readonly env: MachineEnv;
  private readonly queues = new Map<string, Promise<void>>();
  private readonly chainWatch: ChainWatch;
  private readonly unsubscribe: (() => void)[] = [];
  private readonly tlcListeners = new Set<(channelId: string, notice: TlcNotice) => void>();
  private readonly tlcRecorders = new Set<(channelId: string, notice: TlcNotice) => void>();
  private stopped = false;
  /**
   * Peers whose session is being dropped because a channel step with them could not be stored:
   * the messages of theirs already queued are skipped (handled out of order they would look like
   * protocol errors); the reconnection's reestablish replays them.
   */
  private readonly storageStalled = new Set<string>();
  /** The peer's CommitmentSigned waits for the claims of the preimages it gave (`preimage-first.ts`). */
  private readonly preimageFirst: PreimageFirst;
  /** Periodic TLC expiry check; its hooks are the payments layer's (set once it is wired). */
  readonly expiry: ExpiryMonitor;
  private readonly ackTimeout: AckTimeout;
  /** Pipelined channels: the CommitmentSigned only the peer's fulfils wait for (`deferred-sign.ts`). */
  private readonly deferredSign: DeferredSign;
  private readonly externalWatch: ExternalFundingWatch;
  /** Our part of each funding tx: wallet cells, an external funder's, tokens; its signatures. */
  private readonly funding: WalletFunding;
  /** Persist, then act: the group commit of staged states (`group-commit.ts`). */
  private readonly commits: GroupCommit;
  /** What a committed step does (`effects.ts`). */
  private readonly effects: ChannelEffects;
  /** Opening channels, ours and the peer's (`opening.ts`). */
  private readonly opening: ChannelOpening;
  /** TLC commands, run at once or batched into the next round (`tlc-commands.ts`). */
  private readonly tlcCommands: TlcCommands;
  /** Stale openings and spent funding cells, checked on a timer (`funding-monitor.ts`). */
  private readonly fundingMonitor: FundingMonitor;

  constructor(private readonly o: ChannelServiceOptions) {
    this.store = new StagedChannelStore(new ChannelStore(o.db));
    this.log = o.logger ?? NOOP_LOG;
    this.env = {
      chainHash: o.chainHash,
      fundingLock: o.scripts.fundingLock,
      commitmentLock: o.scripts.commitmentLock,
      now: o.now ?? Date.now,
      ...(o.nonces ? { nonce: madeAheadOr(o.nonces) } : {}),
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
      (tempId) => this.opening.onExternalDeadline(tempId),
      this.env.now,
    );
    // What the parts of the shell (`group-commit.ts`, `effects.ts`, `opening.ts`, …) use of it.
    const shell = {
      service: o,
      store: this.store,
      env: this.env,
      log: this.log,
      chainWatch: this.chainWatch,
      stopped: () => this.stopped,
      enqueue: (key: string, fn: () => void | Promise<void>) => this.enqueue(key, fn),
      commit: (s: Step, then?: () => void) => this.commit(s, then),
      deliver: (tempId: string, ev: Event) => this.deliver(tempId, ev),
    };
    this.preimageFirst = new PreimageFirst(o.durable ?? (() => Promise.resolve()));
    this.commits = new GroupCommit({
      ...shell,
      tlcRecorders: this.tlcRecorders,
      afterCommit: (s) => this.afterCommit(s),
      stallOnStorage: (ch, failure) => this.stallOnStorage(ch, failure),
      requestFlush: o.requestFlush,
    });
    this.effects = new ChannelEffects({ ...shell, funding: this.funding, tlcListeners: this.tlcListeners });
    this.opening = new ChannelOpening({
      ...shell,
      externalWatch: this.externalWatch,
      command: (tempId, ev) => this.command(tempId, ev),
    });
    this.tlcCommands = new TlcCommands(shell);
    this.deferredSign = new DeferredSign(o.pipelinedSignDelayMs ?? PIPELINED_SIGN_DELAY_MS, (tempId) => {
      this.command(tempId, { type: 'signCommitment' }).catch((e) =>
        this.log.warn({ channel: tempId, err: (e as Error).message }, 'deferred CommitmentSigned failed'),
      );
    });
    this.fundingMonitor = new FundingMonitor({ ...shell, opening: this.opening });
  }

  /** Subscribes to the channel messages and resumes confirmation tracking of stored channels. */
  start(): void {
    for (const kind of Object.keys(CHANNEL_CODECS) as ChannelMessageKind[]) {
      this.unsubscribe.push(this.o.peers.onMessage(kind, (pk, m) => this.onWire(pk, m)));
    }
    this.fundingMonitor.start();
    const onConnected = (peer: { pubkey: string }) => {
      this.effects.held.drop(peer.pubkey);
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

  /**
   * Commits the states staged in this turn now, and runs their effects (before a WAL flush, so
   * that it covers them and their messages leave with it instead of waiting for the next one).
   * Whether there was anything staged.
   */
  commitStaged(): boolean {
    return this.commits.flush();
  }

  /**
   * The TLC batches of idle channels scheduled for the end of this turn, run now where the
   * channel's actor is idle: called before a flush (`beforeFlush`), so that their states are
   * committed before it and their messages leave with it, instead of one flush later.
   */
  runScheduledTlcBatches(): void {
    this.tlcCommands.runScheduled((tempId) => !this.queues.has(tempId));
  }

  async stop(): Promise<void> {
    // States staged for the group commit are committed now (their messages go out as usual).
    this.commits.flush();
    this.stopped = true;
    this.expiry.stop();
    this.ackTimeout.stop();
    this.deferredSign.stop();
    this.effects.held.clear();
    this.externalWatch.stop();
    for (const u of this.unsubscribe.splice(0)) u();
    this.chainWatch.stop();
    this.fundingMonitor.stop();
    this.tlcCommands.stop();
    await Promise.allSettled([...this.queues.values()]);
  }

  // ---- RPC-facing operations ---------------------------------------------------------------------

  /** `open_channel` (`ChannelOpening.openChannel`). */
  openChannel(r: OpenRequest): Promise<{ temporaryChannelId: string }> {
    return this.opening.openChannel(r);
  }

  /** `open_channel_with_external_funding` (`ChannelOpening.openChannelWithExternalFunding`). */
  openChannelWithExternalFunding(
    r: OpenRequest & { external: NonNullable<OpenRequest['external']> },
  ): Promise<{ channelId: string; unsignedFundingTx: ccc.Transaction }> {
    return this.opening.openChannelWithExternalFunding(r);
  }

  /** `submit_signed_funding_tx` (`ChannelOpening.submitSignedFundingTx`). */
  submitSignedFundingTx(
    id: string,
    signed: ccc.Transaction,
  ): Promise<{ channelId: string; fundingTxHash: string }> {
    return this.opening.submitSignedFundingTx(id, signed);
  }

  /** `accept_channel` (`ChannelOpening.acceptChannel`). */
  acceptChannel(r: AcceptRequest): Promise<{ channelId: string }> {
    return this.opening.acceptChannel(r);
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

  /** `update_channel`: our forwarding policy of a public channel (`policy-update.ts`). */
  async updateChannel(id: string, u: PolicyUpdate): Promise<void> {
    const key = id.toLowerCase();
    const ch0 = this.store.get(key);
    if (!ch0 || ch0.state === 'CLOSED')
      throw new ChannelError('ChannelClosed', 'Messaging failed because channel is closed');
    if (!ch0.isPublic)
      throw new ChannelError('InvalidState', 'Invalid state: Only public channel can be updated');
    if (u.tlcExpiryDelta !== undefined) checkExpiryDelta(u.tlcExpiryDelta, this.o.minTlcExpiryDelta);
    await this.enqueue(ch0.tempId, () => {
      const s = policyUpdate(this.store.get(key) as Channel, u, this.env.now());
      return this.commit(s, () => {
        if (s.ch.state === 'CHANNEL_READY' && this.o.onPolicyUpdated)
          Promise.resolve(this.o.onPolicyUpdated(s.ch)).catch((err) =>
            this.log.warn({ channel: s.ch.id, err: (err as Error).message }, 'channel update not broadcast'),
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
    const tlcId = await this.tlcCommands.tlcCommand(ch0.tempId, { type: 'addTlc', cmd }, opts.waitMs);
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
    await this.tlcCommands.tlcCommand(ch0.tempId, { type: 'removeTlc', id: tlcId, reason }, opts.waitMs);
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
    return this.enqueue(tempId, async () => {
      if (this.stopped) return;
      const wait = ev.type === 'peer' ? this.preimageFirst.before(tempId, ev.msg.type) : undefined;
      if (wait) await wait;
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
      this.preimageFirst.stepped(tempId, s);
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
   * Persist, then act: nothing leaves the node before the state it depends on is committed
   * (`GroupCommit.commit`).
   */
  private commit(s: Step, then?: () => void): Promise<void> {
    return this.commits.commit(s, then);
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
    this.deferredSign.observe(ch);
    for (const e of s.effects) this.effects.perform(ch, e);
    // The queued TLC commands go out on the channel as it is now (a later step may be staged).
    void this.enqueue(ch.tempId, () => {
      const cur = this.store.get(ch.tempId);
      if (cur) this.tlcCommands.drainTlcs(cur);
    }).catch((e) => this.log.warn({ channel: ch.id, err: (e as Error).message }, 'TLC batch failed'));
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
        return this.commit(step(cur, { type: 'reconnected' }, this.env));
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
      void this.enqueue(tempId, () => this.opening.onOpen(pubkey, m)).catch((e) =>
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
