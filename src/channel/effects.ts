/**
 * Performing a committed step's effects (`channel/service.ts` calls `perform` once the state they
 * depend on is durable): messages to the peer, the wallet's funding and signatures, broadcasts and
 * chain watches, the channel announcement, TLC news for the payments layer, and the log.
 */
import { ccc } from '@ckb-ccc/core';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '../codec/index.ts';
import type { ChainWatch, ChannelLogger } from './chain-watch.ts';
import { withFunderWitnesses } from './external-funding.ts';
import { HeldSends } from './held-sends.ts';
import { aggregateXOnly, sorted2 } from './musig.ts';
import type { AnnouncementInfo, ChannelServiceOptions } from './service-options.ts';
import type { Channel } from './state.ts';
import type { Effect, Event } from './step.ts';
import type { TlcNotice } from './tlc.ts';
import type { WalletFunding } from './wallet-funding.ts';
import { toFiberMessage } from './wire.ts';

export interface ChannelEffectsOptions {
  /** The channel service's options (peers, chain, scripts, node key, announcement hooks). */
  service: ChannelServiceOptions;
  log: ChannelLogger;
  funding: WalletFunding;
  chainWatch: ChainWatch;
  /** The `onTlc` subscribers. */
  tlcListeners: ReadonlySet<(channelId: string, notice: TlcNotice) => void>;
  /** Feeds an event to the channel (through its queue). */
  deliver(tempId: string, ev: Event): Promise<void>;
}

export class ChannelEffects {
  private readonly o: ChannelServiceOptions;
  private readonly log: ChannelLogger;
  private readonly funding: WalletFunding;
  private readonly chainWatch: ChainWatch;
  private readonly tlcListeners: ChannelEffectsOptions['tlcListeners'];
  private readonly deliver: ChannelEffectsOptions['deliver'];
  /** Messages that wait for our next one to the same peer (`held-sends.ts`). */
  readonly held: HeldSends;

  constructor(c: ChannelEffectsOptions) {
    this.o = c.service;
    this.log = c.log;
    this.funding = c.funding;
    this.chainWatch = c.chainWatch;
    this.tlcListeners = c.tlcListeners;
    this.deliver = c.deliver;
    this.held = new HeldSends(this.o.peers, (peer, m, err) =>
      this.log.warn({ peer, type: m.type, err: err.message }, 'held channel message not sent'),
    );
  }

  perform(ch: Channel, e: Effect): void {
    switch (e.type) {
      case 'send':
        try {
          if (e.mayWait) this.held.hold(ch.peer, toFiberMessage(e.msg));
          else this.held.send(ch.peer, toFiberMessage(e.msg));
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
        if (
          (e.notice.type === 'received' || e.notice.type === 'announced') &&
          e.notice.tlc.onion.length === 0
        )
          return;
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
}
