/**
 * What a node does with the TLCs its channels report (fiber-routing-protocol.md §2.3):
 * - an incoming TLC is peeled; at the final hop it is checked against the invoice (or its keysend
 *   preimage) and fulfilled — or held, for a hold invoice, until `settle_invoice`; otherwise it is
 *   forwarded on the next channel once the fee and expiry checks pass;
 * - the outcome of an outgoing TLC goes back where it came from: to the incoming TLC it was
 *   forwarded for (an error packet gets this hop's layer), or to the payment session that sent it.
 * Failures carry the reference's TlcErrorCode, in an error packet the sender can read. The final
 * hop's part is `final-hop.ts`; what the relay is given, `relay-ports.ts`.
 */
import { ChannelError } from '../channel/index.ts';
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { allowsMpp } from '../invoice/index.ts';
import { MAX_TLC_EXPIRY_LIMIT, MIN_TLC_EXPIRY_DELTA } from './expiry-limits.ts';
import { FinalHop } from './final-hop.ts';
import type { TlcLink, TlcOutcome } from './links.ts';
import { createErrorPacket, OnionError, peelOnion, relayErrorPacket } from './onion/packet.ts';
import type { TlcErr, TlcErrorCodeName } from './onion/tlc-error.ts';
import type { IncomingTlc, RelayOptions } from './relay-ports.ts';
import { type AttemptFate, attemptFate, onionKeyOf, receivedFate } from './resume.ts';
import type { OutgoingTlc } from './service.ts';
import type { Attempt, PaymentSession } from './session.ts';
import { trampolineFailureCode } from './trampoline.ts';

/** The relay's ports, where `channel-port.ts` and the tests read them. */
export type { ChannelTlcPort, ForwardPolicy, IncomingTlc, RelayOptions } from './relay-ports.ts';

const MAX_EXPIRY = MAX_TLC_EXPIRY_LIMIT;

export class PaymentRelay {
  private readonly now: () => number;

  /** Trampoline sessions whose incoming TLC is being settled now. */
  private readonly settling = new Set<string>();

  /** Outgoing TLCs (`channelId:tlcId`) whose outcome is being delivered (`onOutcome`). */
  private readonly delivering = new Set<string>();

  /** Received TLCs (`channel/tlc`) being failed near their expiry. */
  private readonly failingExpired = new Set<string>();

  /** The least TLC expiry delta: a forward expiring sooner fails with ExpiryTooSoon. */
  private readonly minDelta: bigint;

  /** What the final hop does with a TLC: receive it, hold it, settle or fail its set. */
  private readonly finalHop: FinalHop;

  constructor(private readonly o: RelayOptions) {
    this.now = o.now ?? Date.now;
    this.minDelta = o.minTlcExpiryDelta ?? MIN_TLC_EXPIRY_DELTA;
    this.finalHop = new FinalHop(o, this.now, this.minDelta, (tlc, error, secret) =>
      this.fail(tlc, error, secret),
    );
    o.payments.onTrampolineEnd((s) => void this.settleUpstream(s));
  }

  /**
   * The channel layer hands every TLC the peer added (after the round committed). `resumed`: the
   * TLC is handed again after a restart (`resume`), the node may have accepted it before.
   */
  async onIncoming(tlc: IncomingTlc, opts: { resumed?: boolean } = {}): Promise<void> {
    let peeled: ReturnType<typeof peelOnion>;
    try {
      peeled =
        this.o.prePeeled?.take(tlc.onion, tlc.paymentHash) ??
        peelOnion(tlc.onion, this.o.nodeSecretKey, hexToBytes(tlc.paymentHash));
    } catch (e) {
      if (!(e instanceof OnionError)) throw e;
      // Nothing to encrypt with: a plaintext error the sender can still read.
      return this.fail(tlc, { code: 'InvalidOnionPayload', extra: null }, null);
    }
    const { current, next, sharedSecret } = peeled;
    if (!next) return this.finalHop.receive(tlc, current, sharedSecret, !!opts.resumed);

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
    const key = `${channelId}:${tlcId}`;
    // A preimage is delivered when the peer's RemoveTlc arrives; the end of its round reports it
    // again, perhaps while the first delivery still waits on the upstream channel.
    if (!link || this.delivering.has(key)) return Promise.resolve();
    // Usually recorded already, with the channel state that removed the TLC (`recordOutcome`).
    if (!this.o.links.hasOutcome(channelId, tlcId)) this.o.links.recordOutcome(channelId, tlcId, outcome);
    this.delivering.add(key);
    return this.deliver(channelId, tlcId, link, outcome).finally(() => this.delivering.delete(key));
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
        this.finalHop.settleHeldSet(hash).catch(warn('settling a held TLC set failed'));
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
      peeled =
        this.o.prePeeled?.take(tlc.onion, tlc.paymentHash) ??
        peelOnion(tlc.onion, this.o.nodeSecretKey, hexToBytes(tlc.paymentHash));
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
  settleHeld(paymentHash: string): Promise<void> {
    return this.finalHop.settleHeld(paymentHash);
  }

  /** `cancel_invoice` on a held payment: fail what was held. */
  cancelHeld(paymentHash: string): Promise<void> {
    return this.finalHop.cancelHeld(paymentHash);
  }

  /** MPP parts whose hold time ended without the total are failed (`FinalHop.expireHolds`). */
  expireHolds(now?: number): Promise<void> {
    return this.finalHop.expireHolds(now);
  }

  /** The preimage a received TLC may be fulfilled with on a retry (`FinalHop.preimageFor`). */
  preimageFor(channelId: string, tlc: { paymentHash: string; amount: bigint }): string | undefined {
    return this.finalHop.preimageFor(channelId, tlc);
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
