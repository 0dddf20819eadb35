/**
 * Opening channels, the channel service's part (`service.ts` runs the queues and commits): ours
 * (`open_channel`, with external funding and its signed tx), the peer's (`OpenChannel` from the
 * wire, auto-accepted from the config or left for `accept_channel`), the channel rules chosen by
 * the peer's `Init`, the UDT whitelist, and the openings dropped when their time runs out.
 */
import { ccc } from '@ckb-ccc/core';
import { UdtWhitelist, type UdtWhitelistEntry } from '../chain/index.ts';
import { bytesToHex } from '../codec/index.ts';
import { hasFeatureBit, STRAND_CHANNEL_RULES_BIT, STRAND_PIPELINED_BIT } from '../p2p/index.ts';
import type { ChannelLogger } from './chain-watch.ts';
import { ChannelError, hash256 } from './errors.ts';
import type { ExternalFundingWatch } from './external-funder.ts';
import { EXTERNAL_TIMEOUT_REASON } from './external-funding.ts';
import { DEFAULT_FUNDING_TIMEOUT_SECONDS, fundingTimedOut, fundingTimeoutReason } from './funding-timeout.ts';
import { deriveChannelKeys, newChannelSeed, tempChannelId } from './keys.ts';
import { acceptChannel, checkOpenChannel, openChannel, receiveOpen } from './open.ts';
import {
  type AcceptRequest,
  acceptTerms,
  autoAcceptFunding,
  type OpenRequest,
  openTerms,
} from './requests.ts';
import { type ChannelRules, reserveFor } from './reserve.ts';
import { scriptData, toScript } from './script-data.ts';
import type { ChannelServiceOptions } from './service-options.ts';
import type { StagedChannelStore } from './staged-store.ts';
import type { Channel, ScriptData } from './state.ts';
import { type Event, fail, type MachineEnv, type Step } from './step.ts';
import { toFiberMessage } from './wire.ts';

export interface ChannelOpeningOptions {
  /** The channel service's options (peers, wallet, node key, policies, whitelist). */
  service: ChannelServiceOptions;
  store: StagedChannelStore;
  env: MachineEnv;
  log: ChannelLogger;
  externalWatch: ExternalFundingWatch;
  /** Whether the service stopped. */
  stopped(): boolean;
  /** Runs `fn` in the channel's queue (`ChannelService.enqueue`). */
  enqueue(key: string, fn: () => void | Promise<void>): Promise<void>;
  /** Persist, then act (`ChannelService.commit`). */
  commit(s: Step, then?: () => void): Promise<void>;
  /** An RPC command to the channel's machine (`ChannelService.command`). */
  command(tempId: string, ev: Event): Promise<void>;
}

/** How long `open_channel` waits for the Init of a peer whose session is already open. */
const INIT_WAIT_MS = 5_000;

export class ChannelOpening {
  private readonly o: ChannelServiceOptions;
  private readonly store: StagedChannelStore;
  private readonly env: MachineEnv;
  private readonly log: ChannelLogger;
  private readonly externalWatch: ExternalFundingWatch;

  constructor(private readonly c: ChannelOpeningOptions) {
    this.o = c.service;
    this.store = c.store;
    this.env = c.env;
    this.log = c.log;
    this.externalWatch = c.externalWatch;
  }

  private get stopped(): boolean {
    return this.c.stopped();
  }

  private enqueue(key: string, fn: () => void | Promise<void>): Promise<void> {
    return this.c.enqueue(key, fn);
  }

  private commit(s: Step, then?: () => void): Promise<void> {
    return this.c.commit(s, then);
  }

  private command(tempId: string, ev: Event): Promise<void> {
    return this.c.command(tempId, ev);
  }

  /** Strand's channel rules with a peer that asked for them in `Init`, fnn's with any other. */
  private rulesOf(pubkey: string): ChannelRules {
    const features = this.o.peers.peerInit(pubkey)?.features;
    return features && hasFeatureBit(features, STRAND_CHANNEL_RULES_BIT) ? 'strand' : 'fnn';
  }

  /**
   * Pipelined updates (`pipelined.ts`) when this node offers them and the peer's `Init` does
   * too: each side decides from the other's bit, so both decide alike. They start once the
   * channel is ready (`maybeReady`).
   */
  private withPipelined(pubkey: string, s: Step): Step {
    const features = this.o.peers.peerInit(pubkey)?.features;
    if (!this.o.pipelinedUpdates || !features) return s;
    if (!hasFeatureBit(features, STRAND_PIPELINED_BIT) || this.rulesOf(pubkey) !== 'strand') return s;
    return { ...s, ch: { ...s.ch, pipelinedUpdates: true } };
  }

  /**
   * Waits (up to `INIT_WAIT_MS`) for the peer's `Init` on a session that is open but has not
   * carried it yet: `connect_peer` answers once the session is up, and an `open_channel` right
   * after it used to run before the Init came. Its features choose the channel's rules, and the
   * Init's arrival counts as the session's (re)connection, which drops openings not yet signed
   * (`reestablish`): an opening made before it was aborted at once (seen on CI).
   */
  private initOf(pk: string, noInit: () => Error): Promise<void> {
    if (this.o.peers.peerInit(pk)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        this.o.peers.off('connected', onConnected);
        if (err) reject(err);
        else resolve();
      };
      const onConnected = (p: { pubkey: string }) => {
        if (p.pubkey.toLowerCase() === pk.toLowerCase()) done();
      };
      const timer = setTimeout(() => done(noInit()), INIT_WAIT_MS);
      this.o.peers.on('connected', onConnected);
    });
  }

  async openChannel(r: OpenRequest): Promise<{ temporaryChannelId: string }> {
    const pk = r.pubkey;
    const noInit = () =>
      new ChannelError(
        'PeerFeaturesUnknown',
        `Invalid parameter: Peer Pubkey(${pk})'s feature not found, waiting for peer to send Init message`,
      );
    if (!this.o.peers.isConnected(pk)) throw noInit();
    await this.initOf(pk, noInit);
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
    const s = this.withPipelined(
      pk,
      openChannel({ ...t, peer: pk, rules, seed, tempId, udtCellDeps }, this.env),
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
  onExternalDeadline(tempId: string): void {
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

  /** `funding_timeout_seconds`: openings stuck before their funding was signed are dropped. */
  abortStaleOpenings(channels: Channel[]): void {
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

  onOpen(pubkey: string, m: import('./wire.ts').OpenChannel): void {
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
    const ch0 = receiveOpen(
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
    const ch = this.withPipelined(pubkey, { ch: ch0, effects: [] }).ch;
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
