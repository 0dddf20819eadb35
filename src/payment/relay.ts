/**
 * What a node does with the TLCs its channels report (fiber-routing-protocol.md §2.3):
 * - an incoming TLC is peeled; at the final hop it is checked against the invoice (or its keysend
 *   preimage) and fulfilled — or held, for a hold invoice, until `settle_invoice`; otherwise it is
 *   forwarded on the next channel once the fee and expiry checks pass;
 * - the outcome of an outgoing TLC goes back where it came from: to the incoming TLC it was
 *   forwarded for (an error packet gets this hop's layer), or to the payment session that sent it.
 * Failures carry the reference's TlcErrorCode, in an error packet the sender can read.
 */
import { ChannelError } from '../channel/index.ts';
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import type { Invoice, InvoiceService } from '../invoice/index.ts';
import { allowsMpp, expiresAtMs, findAttr } from '../invoice/index.ts';
import { invoiceAsset, scriptAsset } from './asset.ts';
import { MAX_TLC_EXPIRY_LIMIT, MIN_TLC_EXPIRY_DELTA } from './expiry-limits.ts';
import type { HeldTlc, TlcLink, TlcLinks, TlcOutcome } from './links.ts';
import { MPP_HOLD_TIMEOUT_MS } from './mpp.ts';
import { decodeMppRecord, MPP_RECORD_KEY, TRAMPOLINE_RECORD_KEY } from './onion/hop-data.ts';
import { createErrorPacket, OnionError, peelOnion, relayErrorPacket } from './onion/packet.ts';
import type { TlcErr, TlcErrorCodeName } from './onion/tlc-error.ts';
import { peelTrampolineOnion } from './onion/trampoline.ts';
import { type PaymentRequest, preimageMatches } from './request.ts';
import { type AttemptFate, attemptFate, onionKeyOf, receivedFate } from './resume.ts';
import type { OutgoingTlc, PaymentService } from './service.ts';
import type { Attempt, PaymentSession } from './session.ts';
import { decideTlcSet } from './tlc-set.ts';
import {
  checkTrampolineFinal,
  checkTrampolineForward,
  trampolineFailureCode,
  trampolineForwardAcceptable,
} from './trampoline.ts';

type UdtTypeScript = NonNullable<PaymentRequest['udtTypeScript']>;

export interface IncomingTlc {
  channelId: string;
  tlcId: bigint;
  amount: bigint;
  paymentHash: string;
  expiry: bigint;
  hashAlgorithm: number;
  onion: Uint8Array;
}

export interface ForwardPolicy {
  /** Our fee on this channel, ppm. */
  feeRate: bigint;
  tlcMinValue: bigint;
  tlcExpiryDelta: bigint;
  enabled: boolean;
  /** Canonical UDT of the channel, or null for CKB. */
  udt: string | null;
  /** The channel's UDT type script as send_payment names one (`udt_type_script`), null for CKB. */
  udtScript: UdtTypeScript | null;
  channelOutpoint: string;
}

/** The channel layer as the relay sees it. */
export interface ChannelTlcPort {
  /** Our channel whose funding transaction is `fundingTxHash` (its output 0), if any. */
  channelByFundingTx(fundingTxHash: string): { channelId: string; policy: ForwardPolicy } | undefined;
  policyOf(channelId: string): ForwardPolicy | undefined;
  /** Offers a TLC; resolves with its id once it is in the channel; rejects with a TlcErrorCode name. */
  addTlc(
    channelId: string,
    tlc: { amount: bigint; paymentHash: string; expiry: bigint; hashAlgorithm: number; onion: Uint8Array },
  ): Promise<bigint>;
  fulfilTlc(channelId: string, tlcId: bigint, preimage: Uint8Array): Promise<void>;
  failTlc(channelId: string, tlcId: bigint, errorPacket: Uint8Array): Promise<void>;
  /**
   * The TLCs we offered on the channel of `channelOutpoint` (in any state) that it still holds
   * or will re-send; `onionKey` is the onion's session key (`onionKeyOf`).
   */
  offeredTlcs(
    channelOutpoint: string,
  ): { channelId: string; tlcId: bigint; paymentHash: string; amount: bigint; onionKey: string }[];
  /**
   * The TLCs the peers offered us that both commitments hold, that carry an onion, and whose
   * removal nothing has started (not even one stepped back to be re-sent), on channels that can
   * still remove them: what the relay may have left unhandled when the node stopped.
   */
  unresolvedReceived(): IncomingTlc[];
}

export interface RelayOptions {
  nodeSecretKey: Uint8Array;
  nodePubkey: string;
  channels: ChannelTlcPort;
  links: TlcLinks;
  invoices: InvoiceService;
  payments: PaymentService;
  now?: () => number;
  /** How long MPP parts wait for the rest of the total (the reference's 120 s). */
  mppHoldTimeoutMs?: number;
  /** The node's least TLC expiry delta (`codec/epoch-rules.ts`); 9,600,000 ms when absent. */
  minTlcExpiryDelta?: bigint;
  logger?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /** This node is failing a TLC it received, with this onion error code (the event log). */
  onFailing?: (channelId: string, tlcId: bigint, code: string) => void;
}

const MAX_EXPIRY = MAX_TLC_EXPIRY_LIMIT;

export class PaymentRelay {
  private readonly now: () => number;

  /** Trampoline sessions whose incoming TLC is being settled now. */
  private readonly settling = new Set<string>();

  /** Received TLCs (`channel/tlc`) being failed near their expiry. */
  private readonly failingExpired = new Set<string>();

  /** The least TLC expiry delta: a forward expiring sooner fails with ExpiryTooSoon. */
  private readonly minDelta: bigint;

  constructor(private readonly o: RelayOptions) {
    this.now = o.now ?? Date.now;
    this.minDelta = o.minTlcExpiryDelta ?? MIN_TLC_EXPIRY_DELTA;
    o.payments.onTrampolineEnd((s) => void this.settleUpstream(s));
  }

  /**
   * The channel layer hands every TLC the peer added (after the round committed). `resumed`: the
   * TLC is handed again after a restart (`resume`), the node may have accepted it before.
   */
  async onIncoming(tlc: IncomingTlc, opts: { resumed?: boolean } = {}): Promise<void> {
    let peeled: ReturnType<typeof peelOnion>;
    try {
      peeled = peelOnion(tlc.onion, this.o.nodeSecretKey, hexToBytes(tlc.paymentHash));
    } catch (e) {
      if (!(e instanceof OnionError)) throw e;
      // Nothing to encrypt with: a plaintext error the sender can still read.
      return this.fail(tlc, { code: 'InvalidOnionPayload', extra: null }, null);
    }
    const { current, next, sharedSecret } = peeled;
    if (!next) return this.receive(tlc, current, sharedSecret, !!opts.resumed);

    const failHere = (code: TlcErrorCodeName, channelOutpoint?: string) =>
      this.fail(
        tlc,
        channelOutpoint ? this.channelFailed(code, channelOutpoint) : { code, extra: null },
        sharedSecret,
      );
    const incoming = this.o.channels.policyOf(tlc.channelId);
    if (incoming && tlc.expiry < current.expiry + incoming.tlcExpiryDelta)
      return failHere('IncorrectTlcExpiry');
    if (tlc.amount < current.amount) return failHere('IncorrectOrUnknownPaymentDetails');
    const out = this.o.channels.channelByFundingTx(bytesToHex(current.fundingTxHash));
    if (!out) return failHere('UnknownNextPeer');
    const p = out.policy;
    if (!p.enabled) return failHere('ChannelDisabled', p.channelOutpoint);
    const now = BigInt(this.now());
    if (current.expiry <= now + this.minDelta) return failHere('ExpiryTooSoon', p.channelOutpoint);
    if (current.expiry >= now + MAX_EXPIRY) return failHere('ExpiryTooFar', p.channelOutpoint);
    if (p.tlcMinValue > 0n && current.amount < p.tlcMinValue)
      return failHere('AmountBelowMinimum', p.channelOutpoint);
    const fee = tlc.amount - current.amount;
    if (fee < (current.amount * p.feeRate + 999_999n) / 1_000_000n)
      return failHere('FeeInsufficient', p.channelOutpoint);
    if (incoming && incoming.udt !== p.udt) return failHere('IncorrectOrUnknownPaymentDetails');
    let outId: bigint;
    try {
      outId = await this.o.channels.addTlc(out.channelId, {
        amount: current.amount,
        paymentHash: tlc.paymentHash,
        expiry: current.expiry,
        hashAlgorithm: tlc.hashAlgorithm,
        onion: next,
      });
    } catch (e) {
      return failHere(asCode(e), p.channelOutpoint);
    }
    this.o.links.put(out.channelId, outId, {
      kind: 'forward',
      paymentHash: tlc.paymentHash,
      inChannelId: tlc.channelId,
      inTlcId: tlc.tlcId,
      sharedSecret: bytesToHex(sharedSecret),
    });
  }

  /**
   * An outgoing TLC was fulfilled by the peer. Called in the turn the channel state that removed
   * it was saved: the outcome is recorded before anything else, and cleared only once the
   * session (or the upstream TLC) has taken it, so that a crash in between replays it on start.
   */
  onFulfilled(channelId: string, tlcId: bigint, preimage: Uint8Array): Promise<void> {
    return this.onOutcome(channelId, tlcId, { preimage });
  }

  /** An outgoing TLC was failed by the peer with an error packet (recorded as `onFulfilled`). */
  onFailed(channelId: string, tlcId: bigint, errorPacket: Uint8Array): Promise<void> {
    return this.onOutcome(channelId, tlcId, { errorPacket });
  }

  /**
   * A preimage learned elsewhere — on chain, where a next hop claimed a TLC of ours: every
   * outgoing TLC with that hash ends as if fulfilled off chain (a forward fulfils its upstream
   * TLC, a payment of ours succeeds). All outcomes are recorded before this returns, so that a
   * stop before their delivery replays them on start.
   */
  preimageLearned(paymentHash: string, preimage: Uint8Array): Promise<void> {
    const outs = this.o.links.withHash(paymentHash);
    for (const x of outs)
      if (!this.o.links.hasOutcome(x.channelId, x.tlcId))
        this.o.links.recordOutcome(x.channelId, x.tlcId, { preimage });
    return outs.reduce(
      (done, x) => done.then(() => this.deliver(x.channelId, x.tlcId, x.link, { preimage })),
      Promise.resolve(),
    );
  }

  private onOutcome(channelId: string, tlcId: bigint, outcome: TlcOutcome): Promise<void> {
    const link = this.o.links.get(channelId, tlcId);
    if (!link) return Promise.resolve();
    // Usually recorded already, with the channel state that removed the TLC (`recordOutcome`).
    if (!this.o.links.hasOutcome(channelId, tlcId)) this.o.links.recordOutcome(channelId, tlcId, outcome);
    return this.deliver(channelId, tlcId, link, outcome);
  }

  /**
   * Records the outcome of an outgoing TLC of ours (a payment attempt or a forward) in the
   * transaction that saves the channel state which removed it: a crash between the two would
   * otherwise lose a preimage that exists nowhere else — a forward paid downstream and never
   * claimed upstream. Only writes; `onFulfilled` / `onFailed` act on it after.
   */
  recordOutcome(channelId: string, tlcId: bigint, outcome: TlcOutcome): void {
    if (this.o.links.get(channelId, tlcId)) this.o.links.recordOutcome(channelId, tlcId, outcome);
  }

  /**
   * A TLC the peer offered us was removed with its preimage: the invoice it paid is Paid (the
   * reference's `apply_remove_tlc_operation`). Called in the transaction that saves the channel
   * state which removed it, whatever fulfilled it — the final hop, a held set settled, a retry
   * after a refused fulfil or a restart, the expiry check — so that none leaves it Received.
   */
  recordReceivedFulfilled(paymentHash: string): void {
    const found = this.o.invoices.lookupForPayment(paymentHash);
    if (found && found.status !== 'Paid') this.o.invoices.markPaid(paymentHash);
  }

  private async deliver(channelId: string, tlcId: bigint, link: TlcLink, outcome: TlcOutcome): Promise<void> {
    if (link.kind === 'origin') {
      if ('preimage' in outcome)
        await this.o.payments.tlcFulfilled(link.attemptId, outcome.preimage, link.paymentHash);
      else
        await this.o.payments.tlcFailed(
          link.attemptId,
          { errorPacket: outcome.errorPacket },
          link.paymentHash,
        );
    } else {
      try {
        if ('preimage' in outcome) {
          // Kept, so that the periodic TLC check fulfils upstream again should this attempt fail.
          this.o.invoices.putPreimage(link.paymentHash, outcome.preimage);
          await this.o.channels.fulfilTlc(link.inChannelId, link.inTlcId, outcome.preimage);
        } else
          await this.o.channels.failTlc(
            link.inChannelId,
            link.inTlcId,
            relayErrorPacket(outcome.errorPacket, hexToBytes(link.sharedSecret)),
          );
      } catch (e) {
        // Replayed after a restart, the upstream TLC may be settled already, or its channel
        // closed (the TLC is then settled on chain: by preimage, kept above, or by expiry);
        // otherwise the outcome stays recorded for the next start.
        if (!ChannelError.is(e, 'TlcNotFound', 'ChannelClosed')) throw e;
      }
    }
    this.o.links.remove(channelId, tlcId);
    this.o.links.clearOutcome(channelId, tlcId);
  }

  /**
   * On start, before any channel event: outcomes recorded but not delivered are replayed, the
   * payment sessions left in flight are reconciled with the channels (`attemptFate`), and the
   * received TLCs the relay had not handled are handled now (`resumeReceived`).
   */
  resume(): void {
    for (const r of this.o.links.outcomes()) {
      const link = this.o.links.get(r.channelId, r.tlcId);
      if (!link) {
        this.o.links.clearOutcome(r.channelId, r.tlcId);
        continue;
      }
      this.deliver(r.channelId, r.tlcId, link, r.outcome).catch((e) =>
        this.o.logger?.warn({ err: (e as Error).message }, 'replaying a TLC outcome failed'),
      );
    }
    this.o.payments.resume((s, a) => this.attemptFate(s.paymentHash, a));
    for (const s of this.o.payments.unsettledTrampolines()) void this.settleUpstream(s);
    this.resumeReceived();
  }

  /**
   * Received TLCs a stop cut short between the channel's commit and the relay's handling: each
   * one the relay had not taken (`receivedFate`) is handed to it again as if it had just arrived;
   * one it had forwarded but not yet linked is linked now. MPP sets held when the node stopped
   * are examined again, in case the stop came before the set was.
   */
  private resumeReceived(): void {
    const warn = (what: string) => (e: unknown) => this.o.logger?.warn({ err: (e as Error).message }, what);
    for (const tlc of this.o.channels.unresolvedReceived()) {
      const trampoline = this.o.payments.trampolineOf(tlc.paymentHash);
      const taken = {
        forwarded: this.o.links.forwardedFrom(tlc.channelId, tlc.tlcId),
        held: this.o.links.isHeld(tlc.channelId, tlc.tlcId),
        trampolined: trampoline?.channelId === tlc.channelId && trampoline.tlcId === tlc.tlcId,
        forwardInChannel: false,
      };
      if (receivedFate(taken) === 'handled') continue;
      // Only now the onion is peeled, to look for the forward in the next channel.
      const forward = this.forwardInChannel(tlc);
      const fate = receivedFate({ ...taken, forwardInChannel: !!forward });
      const ids = { payment_hash: tlc.paymentHash, channel: tlc.channelId, tlc: tlc.tlcId.toString() };
      if (fate === 'relink' && forward) {
        this.o.links.put(forward.channelId, forward.tlcId, forward.link);
        this.o.logger?.info(ids, 'relinked a TLC forwarded before the restart');
        continue;
      }
      this.o.logger?.info(ids, 'handling a received TLC left unhandled by the restart');
      this.onIncoming(tlc, { resumed: true }).catch(warn('handling a received TLC again failed'));
    }
    for (const hash of this.o.links.heldHashes()) {
      const found = this.o.invoices.lookupForPayment(hash);
      if (found?.status === 'Open' && allowsMpp(found.invoice))
        this.settleHeldSet(hash).catch(warn('settling a held TLC set failed'));
    }
  }

  /**
   * The TLC an incoming one was forwarded as, when the next channel holds it (found by payment
   * hash and onion) but no link names it: the node stopped between the add and the link.
   */
  private forwardInChannel(
    tlc: IncomingTlc,
  ): { channelId: string; tlcId: bigint; link: Extract<TlcLink, { kind: 'forward' }> } | undefined {
    let peeled: ReturnType<typeof peelOnion>;
    try {
      peeled = peelOnion(tlc.onion, this.o.nodeSecretKey, hexToBytes(tlc.paymentHash));
    } catch (e) {
      if (e instanceof OnionError) return undefined;
      throw e;
    }
    if (!peeled.next) return undefined;
    const out = this.o.channels.channelByFundingTx(bytesToHex(peeled.current.fundingTxHash));
    if (!out) return undefined;
    const key = onionKeyOf(peeled.next);
    const hash = tlc.paymentHash.toLowerCase();
    const found = this.o.channels
      .offeredTlcs(out.policy.channelOutpoint)
      .find(
        (t) =>
          t.onionKey === key &&
          t.paymentHash.toLowerCase() === hash &&
          !this.o.links.get(t.channelId, t.tlcId),
      );
    if (!found) return undefined;
    return {
      channelId: found.channelId,
      tlcId: found.tlcId,
      link: {
        kind: 'forward',
        paymentHash: tlc.paymentHash,
        inChannelId: tlc.channelId,
        inTlcId: tlc.tlcId,
        sharedSecret: bytesToHex(peeled.sharedSecret),
      },
    };
  }

  /**
   * A trampoline session ended: its incoming TLC is fulfilled with the preimage, or failed with
   * the session's error code (the reference's `on_payment_actor_stopped`), then marked settled.
   */
  private async settleUpstream(s: PaymentSession): Promise<void> {
    const ctx = s.request.trampoline;
    if (!ctx || ctx.upstreamSettled || this.settling.has(s.paymentHash)) return;
    this.settling.add(s.paymentHash);
    try {
      if (s.status === 'Success' && s.preimage) {
        await this.o.channels.fulfilTlc(ctx.prevChannelId, ctx.prevTlcId, hexToBytes(s.preimage));
      } else {
        const code = trampolineFailureCode(s);
        this.o.logger?.info({ payment_hash: s.paymentHash, code }, 'trampoline payment failed');
        await this.o.channels.failTlc(
          ctx.prevChannelId,
          ctx.prevTlcId,
          createErrorPacket({ code, extra: null }, hexToBytes(ctx.sharedSecret)),
        );
      }
      this.o.payments.markUpstreamSettled(s.paymentHash);
    } catch (e) {
      if (ChannelError.is(e, 'TlcNotFound')) this.o.payments.markUpstreamSettled(s.paymentHash);
      else
        this.o.logger?.warn(
          { payment_hash: s.paymentHash, err: (e as Error).message },
          'settling a trampoline TLC failed',
        );
    } finally {
      this.settling.delete(s.paymentHash);
    }
  }

  /**
   * What became of an attempt's TLC, from what the node persisted. A TLC the channel took but
   * the link missed (a crash between the two) is found by its onion and linked now.
   */
  private attemptFate(paymentHash: string, a: Attempt): AttemptFate {
    const first = a.route[0];
    if (!first) return 'neverSent';
    const offered = this.o.channels.offeredTlcs(first.channelOutpoint);
    let at = this.o.links.ofAttempt(a.id);
    const linked = !!at;
    if (!at) {
      const mine = offered.filter(
        (t) => t.paymentHash === paymentHash && !this.o.links.get(t.channelId, t.tlcId),
      );
      // Sessions stored before attempts kept their onion key match on the amount alone.
      const found = a.onionKey
        ? mine.find((t) => t.onionKey === a.onionKey)
        : mine.length === 1 && mine[0]!.amount === first.amountReceived
          ? mine[0]
          : undefined;
      if (found) {
        this.o.links.put(found.channelId, found.tlcId, { kind: 'origin', paymentHash, attemptId: a.id });
        at = found;
      }
    }
    return attemptFate({
      linked,
      outcomeRecorded: !!at && this.o.links.hasOutcome(at.channelId, at.tlcId),
      inChannel: !!at && offered.some((t) => t.channelId === at.channelId && t.tlcId === at.tlcId),
    });
  }

  /**
   * An outgoing TLC never reached the peer's commitment (the channel dropped it): our payment
   * tries another route; a forward fails upstream as a temporary failure of that channel.
   */
  async onDropped(channelId: string, tlcId: bigint): Promise<void> {
    const link = this.o.links.get(channelId, tlcId);
    if (!link) return;
    if (link.kind === 'origin') {
      await this.o.payments.tlcFailed(
        link.attemptId,
        { reason: 'TemporaryChannelFailure' },
        link.paymentHash,
      );
    } else {
      const outpoint = this.o.channels.policyOf(channelId)?.channelOutpoint;
      const error = outpoint
        ? this.channelFailed('TemporaryChannelFailure', outpoint)
        : { code: 'TemporaryChannelFailure' as const, extra: null };
      await this.o.channels.failTlc(
        link.inChannelId,
        link.inTlcId,
        createErrorPacket(error, hexToBytes(link.sharedSecret)),
      );
    }
    this.o.links.remove(channelId, tlcId);
  }

  /** The payment layer's outbox: our own payments' first TLC. */
  outbox() {
    return {
      sendTlc: async (t: OutgoingTlc) => {
        const out = this.o.channels.channelByFundingTx(t.channelOutpoint.slice(0, 66));
        if (!out) throw new Error(`no channel ${t.channelOutpoint}`);
        const id = await this.o.channels.addTlc(out.channelId, {
          amount: t.amount,
          paymentHash: t.paymentHash,
          expiry: t.expiry,
          hashAlgorithm: t.hashAlgorithm,
          onion: t.onionPacket,
        });
        this.o.links.put(out.channelId, id, {
          kind: 'origin',
          paymentHash: t.paymentHash,
          attemptId: t.attemptId,
        });
      },
    };
  }

  /** `settle_invoice` stored the preimage of a hold invoice: fulfil what was held. */
  async settleHeld(paymentHash: string): Promise<void> {
    const preimage = this.o.invoices.getPreimage(paymentHash);
    if (!preimage) return;
    for (const h of this.o.links.held(paymentHash))
      await this.o.channels.fulfilTlc(h.channelId, h.tlcId, preimage).catch(this.notRemoved(h));
    this.o.links.release(paymentHash);
  }

  /** `cancel_invoice` on a held payment: fail what was held. */
  async cancelHeld(paymentHash: string): Promise<void> {
    for (const h of this.o.links.held(paymentHash))
      await this.failHeld(h, 'InvoiceCancelled').catch(this.notRemoved(h));
    this.o.links.release(paymentHash);
  }

  /**
   * settle_invoice and cancel_invoice answer before the held TLCs move: a removal the channel
   * refuses (closed meanwhile) is logged, not thrown at no one (an unhandled rejection ends the
   * node); the TLC is left to the expiry check.
   */
  private notRemoved(h: HeldTlc) {
    return (e: unknown) =>
      this.o.logger?.warn(
        {
          payment_hash: h.paymentHash,
          channel: h.channelId,
          tlc: String(h.tlcId),
          err: (e as Error).message,
        },
        'removing a held TLC failed',
      );
  }

  /**
   * MPP parts whose hold time ended without the total: every part held for that payment is failed
   * with HoldTlcTimeout (as the reference's periodic check). Once the invoice is Received the set
   * was complete, and the parts wait for settlement instead.
   */
  async expireHolds(now = this.now()): Promise<void> {
    for (const hash of this.o.links.expiredHolds(now)) {
      if (this.o.invoices.lookupForPayment(hash)?.status === 'Received') continue;
      const parts = this.o.links.held(hash);
      for (const h of parts) this.o.links.unhold(h.channelId, h.tlcId);
      for (const h of parts) await this.failHeld(h, 'HoldTlcTimeout');
    }
  }

  /**
   * Decides over the parts held for `paymentHash` (see `decideTlcSet`): fails the ones refused,
   * and once the set reaches its total marks the invoice Received and fulfils the set (a hold
   * invoice waits for settle_invoice). Reads and unholds before any await, so that two parts
   * arriving together never settle the same TLC twice.
   */
  private async settleHeldSet(paymentHash: string): Promise<void> {
    const found = this.o.invoices.lookupForPayment(paymentHash);
    const held = this.o.links.held(paymentHash);
    if (!found) {
      for (const h of held) this.o.links.unhold(h.channelId, h.tlcId);
      for (const h of held) await this.failHeld(h, 'InvoiceCancelled');
      return;
    }
    const decision = decideTlcSet({
      invoiceAmount: found.invoice.amount,
      allowMpp: allowsMpp(found.invoice),
      status: found.status,
      parts: held.map((h) => ({ ...h, totalAmount: h.totalAmount ?? null })),
    });
    const byKey = new Map(held.map((h) => [`${h.channelId}/${h.tlcId}`, h]));
    const heldOf = (p: { channelId: string; tlcId: bigint }) => byKey.get(`${p.channelId}/${p.tlcId}`)!;
    for (const f of decision.fail) this.o.links.unhold(f.part.channelId, f.part.tlcId);
    const preimage = found.preimage;
    if (decision.complete) {
      if (found.status === 'Open') {
        const total = decision.settle.reduce((a, p) => a + p.amount, 0n);
        this.o.invoices.markReceived(paymentHash, total);
      }
      if (preimage) for (const p of decision.settle) this.o.links.unhold(p.channelId, p.tlcId);
    }
    for (const f of decision.fail) await this.failHeld(heldOf(f.part), f.code);
    if (decision.complete && preimage) {
      for (const p of decision.settle) await this.o.channels.fulfilTlc(p.channelId, p.tlcId, preimage);
    }
  }

  private async failHeld(h: HeldTlc, code: TlcErrorCodeName): Promise<void> {
    this.o.logger?.info({ payment_hash: h.paymentHash, code }, 'failing held TLC');
    this.o.onFailing?.(h.channelId, h.tlcId, code);
    await this.o.channels.failTlc(
      h.channelId,
      h.tlcId,
      createErrorPacket({ code, extra: null }, h.sharedSecret ? hexToBytes(h.sharedSecret) : null),
    );
  }

  /** The last hop of the onion: ours to receive, or, with an inner onion, a trampoline's. */
  private async receive(
    tlc: IncomingTlc,
    payload: ReturnType<typeof peelOnion>['current'],
    secret: Uint8Array,
    resumed: boolean,
  ) {
    const inner = payload.customRecords?.get(TRAMPOLINE_RECORD_KEY);
    if (inner) return this.trampoline(tlc, payload, secret, inner, resumed);
    return this.receiveFinal(tlc, payload, secret, resumed);
  }

  /**
   * A TLC carrying a trampoline onion: for the final node, its Final payload is what the sender
   * meant for us (amount, preimage, records); for a trampoline, a Forward payload names the next
   * node, and this node pays it with its own payment session (`forwardTrampoline`), settling the
   * incoming TLC once that ends.
   */
  private async trampoline(
    tlc: IncomingTlc,
    payload: ReturnType<typeof peelOnion>['current'],
    secret: Uint8Array,
    inner: Uint8Array,
    resumed: boolean,
  ) {
    const me = hexToBytes(this.o.nodePubkey, 'node', 33);
    const nodeFail = (code: TlcErrorCodeName) =>
      this.fail(tlc, { code, extra: { type: 'NodeFailed', nodeId: me } }, secret);
    let peeled: ReturnType<typeof peelTrampolineOnion>;
    try {
      peeled = peelTrampolineOnion(inner, this.o.nodeSecretKey, hexToBytes(tlc.paymentHash));
    } catch (e) {
      if (!(e instanceof OnionError)) throw e;
      return nodeFail('TemporaryNodeFailure');
    }
    const p = peeled.payload;
    if (p.type === 'Final') {
      if (!checkTrampolineFinal(tlc.amount, payload.amount, p.finalAmount))
        return this.fail(tlc, { code: 'FinalIncorrectTlcAmount', extra: null }, secret);
      return this.receiveFinal(
        tlc,
        {
          amount: payload.amount,
          expiry: null,
          paymentPreimage: p.paymentPreimage,
          customRecords: p.customRecords,
        },
        secret,
        resumed,
      );
    }
    if (tlc.amount < payload.amount) return nodeFail('IncorrectOrUnknownPaymentDetails');
    const problem = checkTrampolineForward(payload.amount, p);
    if (problem) return nodeFail(problem);
    if (!peeled.next) return nodeFail('InvalidOnionPayload');
    if (!trampolineForwardAcceptable(p, this.minDelta)) return nodeFail('TemporaryNodeFailure');
    try {
      this.o.payments.forwardTrampoline({
        paymentHash: tlc.paymentHash,
        next: bytesToHex(p.nextNodeId, false),
        amount: p.amountToForward,
        budget: p.buildMaxFeeAmount,
        finalTlcExpiryDelta: p.tlcExpiryDelta,
        tlcExpiryLimit: p.tlcExpiryLimit,
        hashAlgorithm: p.hashAlgorithm,
        maxParts: p.maxParts,
        // Onward in the asset that came in (the reference takes the previous channel's UDT).
        udtTypeScript: this.o.channels.policyOf(tlc.channelId)?.udtScript ?? null,
        context: {
          onion: bytesToHex(peeled.next),
          prevChannelId: tlc.channelId,
          prevTlcId: tlc.tlcId,
          sharedSecret: bytesToHex(secret),
        },
      });
    } catch (e) {
      // A session for this hash already there (the reference's `start_payment_actor` refusing).
      const msg = (e as Error).message;
      this.o.logger?.info({ payment_hash: tlc.paymentHash, err: msg }, 'trampoline payment not started');
      return nodeFail('TemporaryNodeFailure');
    }
  }

  private async receiveFinal(
    tlc: IncomingTlc,
    payload: {
      amount: bigint;
      /** Null through a trampoline: the sender's inner Final payload names no expiry. */
      expiry: bigint | null;
      paymentPreimage: Uint8Array | null;
      customRecords: Map<number, Uint8Array> | null;
    },
    secret: Uint8Array,
    resumed = false,
  ) {
    const fail = (code: TlcErrorCodeName) => this.fail(tlc, { code, extra: null }, secret);
    if (tlc.amount !== payload.amount) return fail('FinalIncorrectTlcAmount');
    if (payload.expiry !== null && tlc.expiry < payload.expiry) return fail('FinalIncorrectExpiryDelta');
    const alg = tlc.hashAlgorithm === 1 ? 'sha256' : 'ckb_hash';
    const hash = hexToBytes(tlc.paymentHash);
    const recordBytes = payload.customRecords?.get(MPP_RECORD_KEY);
    const record = recordBytes ? decodeMppRecord(recordBytes) : null;
    const invoice = this.o.invoices.lookupForPayment(tlc.paymentHash);
    if (invoice) {
      if (invoice.status === 'Expired') return fail('InvoiceExpired');
      if (invoice.status === 'Cancelled') return fail('InvoiceCancelled');
      // Handed again after a restart, a TLC may belong to a payment the node accepted before it
      // stopped (the invoice Received, or Paid by the rest of its set): taken as then.
      const accepted = resumed && (invoice.status === 'Received' || invoice.status === 'Paid');
      if (invoice.status !== 'Open' && !accepted) return fail('IncorrectOrUnknownPaymentDetails');
      const delta = findAttr(invoice.invoice, 'FinalHtlcMinimumExpiryDelta');
      if (delta && tlc.expiry < BigInt(this.now()) + delta.value) return fail('FinalIncorrectExpiryDelta');
      const want = invoice.invoice.amount;
      const mpp = allowsMpp(invoice.invoice);
      if (record) {
        // The reference's FinalIncorrectMPPInfo: a total below the invoice, or another secret.
        if (record.totalAmount < (want ?? 0n)) return fail('IncorrectOrUnknownPaymentDetails');
        const invoiceSecret = findAttr(invoice.invoice, 'PaymentSecret')?.value;
        if (invoiceSecret && !Buffer.from(invoiceSecret).equals(Buffer.from(record.paymentSecret)))
          return fail('IncorrectOrUnknownPaymentDetails');
      }
      // One TLC must pay the whole invoice, unless it is a part of an MPP payment.
      if ((!record || !mpp) && want !== undefined && tlc.amount < want)
        return fail('FinalIncorrectTlcAmount');
      const preimage = invoice.preimage;
      if (preimage && !preimageMatches(preimage, hash, alg)) return fail('IncorrectOrUnknownPaymentDetails');
      // The asset the invoice asks for, whoever the payer is (the reference's "UDT type script not match").
      if (!this.paysInAsset(tlc.channelId, invoice.invoice)) return fail('IncorrectOrUnknownPaymentDetails');
      if (accepted)
        return this.receiveAccepted(tlc, invoice.status as 'Received' | 'Paid', preimage, record, secret);
      if (mpp) {
        // Held with the other parts until they reach the total (or the hold time ends).
        const invoiceEnd = expiresAtMs(invoice.invoice);
        this.o.links.hold({
          channelId: tlc.channelId,
          tlcId: tlc.tlcId,
          paymentHash: tlc.paymentHash,
          amount: tlc.amount,
          totalAmount: record?.totalAmount ?? null,
          holdExpireAt: preimage
            ? this.now() + (this.o.mppHoldTimeoutMs ?? MPP_HOLD_TIMEOUT_MS)
            : invoiceEnd === undefined
              ? null
              : Number(invoiceEnd),
          sharedSecret: bytesToHex(secret),
        });
        return this.settleHeldSet(tlc.paymentHash);
      }
      if (!preimage) {
        // A hold invoice: keep the TLC until settle_invoice (or cancel).
        this.o.invoices.markReceived(tlc.paymentHash, tlc.amount);
        this.o.links.hold({
          channelId: tlc.channelId,
          tlcId: tlc.tlcId,
          paymentHash: tlc.paymentHash,
          amount: tlc.amount,
        });
        return;
      }
      this.o.invoices.markReceived(tlc.paymentHash, tlc.amount);
      await this.o.channels.fulfilTlc(tlc.channelId, tlc.tlcId, preimage);
      return;
    }
    // An MPP part for an invoice this node does not know.
    if (record) return fail('IncorrectOrUnknownPaymentDetails');
    const keysend = payload.paymentPreimage;
    if (!keysend || !preimageMatches(keysend, hash, alg)) return fail('IncorrectOrUnknownPaymentDetails');
    this.o.invoices.putPreimage(tlc.paymentHash, keysend);
    await this.o.channels.fulfilTlc(tlc.channelId, tlc.tlcId, keysend);
  }

  /**
   * A TLC handed again after a restart, for a payment the node had accepted before it stopped
   * (stopped between accepting and settling): fulfilled when the preimage is known, or — a hold
   * invoice — held again until settle_invoice or cancel_invoice.
   */
  private async receiveAccepted(
    tlc: IncomingTlc,
    status: 'Received' | 'Paid',
    preimage: Uint8Array | undefined,
    record: { totalAmount: bigint } | null,
    secret: Uint8Array,
  ): Promise<void> {
    if (preimage) {
      await this.o.channels.fulfilTlc(tlc.channelId, tlc.tlcId, preimage);
      return;
    }
    if (status === 'Paid')
      return this.fail(tlc, { code: 'IncorrectOrUnknownPaymentDetails', extra: null }, secret);
    this.o.links.hold({
      channelId: tlc.channelId,
      tlcId: tlc.tlcId,
      paymentHash: tlc.paymentHash,
      amount: tlc.amount,
      totalAmount: record?.totalAmount ?? null,
      holdExpireAt: null,
      sharedSecret: bytesToHex(secret),
    });
  }

  /**
   * The preimage a received TLC may be fulfilled with on a retry: one the node already decided to
   * use — learned downstream or by keysend (no invoice), or the invoice's once the payment was
   * accepted (Received or Paid) and the TLC pays it in full.
   */
  preimageFor(channelId: string, tlc: { paymentHash: string; amount: bigint }): string | undefined {
    const preimage = this.o.invoices.getPreimage(tlc.paymentHash);
    if (!preimage) return undefined;
    const invoice = this.o.invoices.lookupForPayment(tlc.paymentHash);
    if (invoice) {
      if (invoice.status !== 'Received' && invoice.status !== 'Paid') return undefined;
      if (invoice.invoice.amount !== undefined && tlc.amount < invoice.invoice.amount) return undefined;
      if (!this.paysInAsset(channelId, invoice.invoice)) return undefined;
    }
    return bytesToHex(preimage);
  }

  /** Whether a TLC on the channel moves the asset the invoice asks for (CKB or its UDT). */
  private paysInAsset(channelId: string, inv: Invoice): boolean {
    const policy = this.o.channels.policyOf(channelId);
    return !!policy && scriptAsset(policy.udtScript) === invoiceAsset(inv);
  }

  /**
   * A received TLC we did not forward nears its expiry: failed back with ExpiryTooSoon. The fail
   * may wait for a reconnecting peer; meanwhile a later check does not fail the TLC again.
   */
  async failExpiring(tlc: IncomingTlc): Promise<void> {
    const key = `${tlc.channelId}/${tlc.tlcId}`;
    if (this.failingExpired.has(key)) return;
    this.failingExpired.add(key);
    let secret: Uint8Array | null = null;
    try {
      if (tlc.onion.length)
        secret = peelOnion(tlc.onion, this.o.nodeSecretKey, hexToBytes(tlc.paymentHash)).sharedSecret;
    } catch (e) {
      if (!(e instanceof OnionError)) throw e;
    }
    try {
      await this.fail(tlc, { code: 'ExpiryTooSoon', extra: null }, secret);
    } finally {
      this.failingExpired.delete(key);
    }
  }

  private channelFailed(code: TlcErrorCodeName, channelOutpoint: string): TlcErr {
    const op = hexToBytes(channelOutpoint, 'channel_outpoint', 36);
    return {
      code,
      extra: {
        type: 'ChannelFailed',
        channelOutpoint: {
          txHash: op.slice(0, 32),
          index: new DataView(op.buffer, op.byteOffset + 32, 4).getUint32(0, true),
        },
        channelUpdate: null,
        nodeId: hexToBytes(this.o.nodePubkey, 'node', 33),
      },
    };
  }

  private async fail(tlc: IncomingTlc, error: TlcErr, sharedSecret: Uint8Array | null): Promise<void> {
    this.o.logger?.info({ payment_hash: tlc.paymentHash, code: error.code }, 'failing incoming TLC');
    this.o.onFailing?.(tlc.channelId, tlc.tlcId, error.code);
    await this.o.channels.failTlc(tlc.channelId, tlc.tlcId, createErrorPacket(error, sharedSecret));
  }
}

/** The onion failure for the outgoing channel's refusal of a forwarded TLC (by its code). */
function asCode(e: unknown): TlcErrorCodeName {
  if (ChannelError.is(e, 'TlcAmountTooLow')) return 'AmountBelowMinimum';
  if (ChannelError.is(e, 'TlcExpiryTooSoon')) return 'ExpiryTooSoon';
  return 'TemporaryChannelFailure';
}
