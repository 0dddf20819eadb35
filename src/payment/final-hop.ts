/**
 * The final hop of a payment (fiber-routing-protocol.md §2.3): a TLC whose onion ends here is
 * checked against its invoice (asset, amount, expiry, MPP set) or its keysend preimage, and
 * fulfilled — or held, for a hold invoice until `settle_invoice`, for an MPP part until its set
 * reaches the total — or failed back. A trampoline onion inside is peeled here too: its Final
 * payload is received as ours, a Forward payload starts this node's own payment to the next one.
 */
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import type { Invoice } from '../invoice/index.ts';
import { allowsMpp, expiresAtMs, findAttr } from '../invoice/index.ts';
import { invoiceAsset, scriptAsset } from './asset.ts';
import type { HeldTlc } from './links.ts';
import { MPP_HOLD_TIMEOUT_MS } from './mpp.ts';
import { decodeMppRecord, MPP_RECORD_KEY, TRAMPOLINE_RECORD_KEY } from './onion/hop-data.ts';
import { createErrorPacket, OnionError, type peelOnion } from './onion/packet.ts';
import type { TlcErr, TlcErrorCodeName } from './onion/tlc-error.ts';
import { peelTrampolineOnion } from './onion/trampoline.ts';
import type { IncomingTlc, RelayOptions } from './relay-ports.ts';
import { preimageMatches } from './request.ts';
import { decideTlcSet } from './tlc-set.ts';
import { checkTrampolineFinal, checkTrampolineForward, trampolineForwardAcceptable } from './trampoline.ts';

export class FinalHop {
  constructor(
    private readonly o: RelayOptions,
    private readonly now: () => number,
    /** The least TLC expiry delta (a trampoline forward must leave room for it). */
    private readonly minDelta: bigint,
    /** Fails a received TLC back with an onion error (the relay's). */
    private readonly fail: (
      tlc: IncomingTlc,
      error: TlcErr,
      sharedSecret: Uint8Array | null,
    ) => Promise<void>,
  ) {}

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
  async settleHeldSet(paymentHash: string): Promise<void> {
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
  async receive(
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
        this.holdPart(
          tlc,
          record,
          preimage
            ? this.now() + (this.o.mppHoldTimeoutMs ?? MPP_HOLD_TIMEOUT_MS)
            : invoiceEnd === undefined
              ? null
              : Number(invoiceEnd),
          secret,
        );
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
    this.holdPart(tlc, record, null, secret);
  }

  /** Holds a received TLC with its set (MPP record), until `holdExpireAt` (ms) or for good. */
  private holdPart(
    tlc: IncomingTlc,
    record: { totalAmount: bigint } | null,
    holdExpireAt: number | null,
    secret: Uint8Array,
  ): void {
    this.o.links.hold({
      channelId: tlc.channelId,
      tlcId: tlc.tlcId,
      paymentHash: tlc.paymentHash,
      amount: tlc.amount,
      totalAmount: record?.totalAmount ?? null,
      holdExpireAt,
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
}
