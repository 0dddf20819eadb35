/**
 * The cross-chain hub (fnn v0.8's `CchActor`): takes orders (`send_btc`: Fiber → Lightning,
 * `receive_btc`: Lightning → Fiber), follows both legs and drives each order through
 * `order.ts`'s machine. Every step of one order runs in that order's queue, so events from the
 * two networks never interleave; the order is saved before its actions run, and the actions of
 * its status are run again on start, so an order resumes where a stop left it.
 */

import type { StoreChange } from '../store/index.ts';
import type { CchConfig } from './config.ts';
import { CchError } from './errors.ts';
import { errorText, type FiberAgent } from './fiber-agent.ts';
import {
  isPermanentPaymentError,
  isPermanentSettleError,
  type LightningBackend,
  type LndCallError,
  type PaymentUpdate,
} from './lnd.ts';
import {
  actionsOnEntering,
  actionsOnStarting,
  applyEvent,
  type CchAction,
  type CchEvent,
  type CchOrder,
  CchTransitionError,
  isExpiredAt,
  isFinal,
} from './order.ts';
import {
  BTC_BLOCK_SECONDS,
  type Currency,
  checkReceiveBtc,
  checkSendBtc,
  maxOutgoingSeconds,
} from './rules.ts';
import { type CchOrderStore, CchStoreError } from './store.ts';

export type { Currency } from './rules.ts';

export interface CchLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface CchServiceOptions {
  config: CchConfig;
  store: CchOrderStore;
  lightning: LightningBackend;
  fiber: FiberAgent;
  /** The Fiber network this hub serves; the Bitcoin network follows from it. */
  currency: Currency;
  log: CchLogger;
  /** ms since the epoch. */
  now?: () => number;
  /** First retry delay of a failed action (fnn: 1 s, doubling up to 10 min). */
  retryBaseMs?: number;
  /** How often orders are checked against their expiry. */
  expiryCheckMs?: number;
}

const RETRY_MAX_MS = 600_000;
/** fnn's SendPaymentV2 `timeout_seconds`. */
const BTC_PAYMENT_TIMEOUT_SECONDS = 60;
const MAX_PAYMENT_TLC_EXPIRY_LIMIT = 1_209_600_000;

const hasLightningIncoming = (o: CchOrder) => 'Lightning' in o.incomingInvoice;

/*
 * The Fiber node the hub drives may be fnn, whose JSON-RPC errors carry only a text (fnn's hub
 * sorts them by these same texts); Strand's own refusals keep fnn's texts for that reason, so one
 * rule reads both. These texts come from another process, not from an error class of ours.
 */
/** Errors of a `settle_invoice` that retrying cannot fix (fnn's list). */
const PERMANENT_FIBER_SETTLE =
  /not found|hash mismatch|still open|already cancelled|already expired|already paid/i;
/** Errors of a `send_payment` that retrying cannot fix (fnn's list). */
const PERMANENT_FIBER_SEND =
  /InvalidParameter|invalid payment request|invoice expired|payment hash mismatch|no path found/i;

export class CchService {
  private readonly queues = new Map<string, Promise<void>>();
  private readonly invoiceTrackers = new Map<string, () => void>();
  private readonly paymentTrackers = new Map<string, () => void>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Consecutive failures of an order's LND streams, for the retries' backoff. */
  private readonly streamFailures = new Map<string, number>();
  private unsubscribe?: () => void;
  private expiryTimer?: NodeJS.Timeout;
  private stopped = false;
  private readonly now: () => number;

  constructor(private readonly o: CchServiceOptions) {
    this.now = o.now ?? Date.now;
  }

  /** Resumes every unfinished order, then follows the Fiber node's store changes. */
  start(): void {
    const nowS = this.nowSeconds();
    for (const order of this.o.store.unfinished()) {
      if (!isFinal(order) && isExpiredAt(order, nowS)) {
        this.enqueue(order.paymentHash, () => this.expire(order.paymentHash, 'Order expired on startup'));
        continue;
      }
      this.o.log.info({ payment_hash: order.paymentHash, status: order.status }, 'cch order resumed');
      this.enqueue(order.paymentHash, () => this.run(order.paymentHash, actionsOnStarting(order)));
    }
    this.unsubscribe = this.o.fiber.subscribe(
      (c) => this.onStoreChange(c),
      () => this.reconcileFiber(),
    );
    this.expiryTimer = setInterval(() => this.expireDue(), this.o.expiryCheckMs ?? 30_000);
    this.expiryTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearInterval(this.expiryTimer);
    for (const t of this.timers) clearTimeout(t);
    for (const stop of [...this.invoiceTrackers.values(), ...this.paymentTrackers.values()]) stop();
    this.invoiceTrackers.clear();
    this.paymentTrackers.clear();
    await Promise.allSettled([...this.queues.values()]);
    this.o.lightning.close();
  }

  getOrder(paymentHash: string): CchOrder {
    const order = this.o.store.get(paymentHash);
    if (!order) throw new CchError('OrderNotFound', `Store error: Key not found: ${paymentHash}`);
    return order;
  }

  // ------------------------------------------------------------------ send_btc: Fiber → Lightning

  async sendBtc(btcPayReq: string, currency: Currency): Promise<CchOrder> {
    const nowS = this.nowSeconds();
    const { config } = this.o;
    const inv = checkSendBtc(btcPayReq, currency, this.o.currency, config, nowS);
    const { amountSats, feeSats, expirySeconds } = inv;
    this.refuseDuplicate(inv.paymentHash);

    let created: { invoice_address: string };
    try {
      created = await this.o.fiber.call('new_invoice', {
        amount: `0x${amountSats.toString(16)}`,
        currency,
        payment_hash: inv.paymentHash,
        hash_algorithm: 'sha256',
        expiry: `0x${expirySeconds.toString(16)}`,
        final_expiry_delta: `0x${(config.ckbFinalTlcExpiryDeltaSeconds * 1000).toString(16)}`,
        udt_type_script: config.wrappedBtcTypeScript,
        description: 'cch: send_btc',
      });
    } catch (e) {
      throw new CchError('FiberNodeFailed', `Fiber node error: ${errorText(e)}`);
    }
    const order: CchOrder = {
      createdAt: nowS,
      expiryDeltaSeconds: config.orderExpiryDeltaSeconds,
      wrappedBtcTypeScript: config.wrappedBtcTypeScript,
      outgoingPayReq: btcPayReq,
      incomingInvoice: { Fiber: created.invoice_address },
      paymentHash: inv.paymentHash,
      amountSats,
      feeSats,
      status: 'Pending',
    };
    return this.accept(order);
  }

  // --------------------------------------------------------------- receive_btc: Lightning → Fiber

  async receiveBtc(fiberPayReq: string): Promise<CchOrder> {
    const nowS = this.nowSeconds();
    const { config } = this.o;
    const want = config.wrappedBtcTypeScript;
    const { paymentHash, amountSats, feeSats, expirySeconds, totalMsat } = checkReceiveBtc(
      fiberPayReq,
      this.o.currency,
      config,
      nowS,
    );
    this.refuseDuplicate(paymentHash);

    let payReq: string;
    try {
      payReq = await this.o.lightning.addHoldInvoice({
        paymentHash,
        valueMsat: totalMsat,
        expirySeconds,
        cltvExpiry: config.btcFinalTlcExpiryDeltaBlocks,
      });
    } catch (e) {
      throw new CchError('LndFailed', `Lnd RPC error: ${(e as Error).message}`);
    }
    const order: CchOrder = {
      createdAt: nowS,
      expiryDeltaSeconds: config.orderExpiryDeltaSeconds,
      wrappedBtcTypeScript: want,
      outgoingPayReq: fiberPayReq,
      incomingInvoice: { Lightning: payReq },
      paymentHash,
      amountSats,
      feeSats,
      status: 'Pending',
    };
    return this.accept(order);
  }

  private refuseDuplicate(paymentHash: string): void {
    if (this.o.store.get(paymentHash))
      throw new CchError('OrderExists', `Store error: Inserting duplicated key: ${paymentHash}`);
  }

  private accept(order: CchOrder): CchOrder {
    try {
      this.o.store.insert(order);
    } catch (e) {
      if (e instanceof CchStoreError) throw new CchError('StoreFailed', e.message);
      throw e;
    }
    this.o.log.info({ payment_hash: order.paymentHash }, 'cch order created');
    this.enqueue(order.paymentHash, () => this.run(order.paymentHash, actionsOnEntering(order)));
    return order;
  }

  // ------------------------------------------------------------------------------ the machine

  private nowSeconds(): number {
    return Math.floor(this.now() / 1000);
  }

  private enqueue(hash: string, job: () => Promise<void> | void): void {
    if (this.stopped) return;
    const prev = this.queues.get(hash) ?? Promise.resolve();
    const next = prev
      .then(job)
      .catch((e) => this.o.log.error({ payment_hash: hash, err: (e as Error).message }, 'cch step failed'));
    this.queues.set(hash, next);
    void next.then(() => {
      if (this.queues.get(hash) === next) this.queues.delete(hash);
    });
  }

  /** An event from either network: applied in the order's queue. */
  private dispatch(hash: string, event: CchEvent): void {
    this.enqueue(hash, () => this.apply(hash, event));
  }

  private async apply(hash: string, event: CchEvent): Promise<void> {
    const order = this.o.store.get(hash);
    if (!order || isFinal(order)) return;
    let next: CchOrder | undefined;
    try {
      next = applyEvent(order, event);
    } catch (e) {
      if (!(e instanceof CchTransitionError)) throw e;
      this.o.log.warn({ payment_hash: hash, event, err: e.message }, 'cch event ignored');
      return;
    }
    if (!next) return;
    this.o.store.update(next);
    this.o.log.info(
      { payment_hash: hash, status: next.status, reason: next.failureReason },
      'cch order status changed',
    );
    if (isFinal(next)) this.untrack(hash);
    await this.run(hash, actionsOnEntering(next));
  }

  private untrack(hash: string): void {
    this.streamFailures.delete(hash);
    this.invoiceTrackers.get(hash)?.();
    this.invoiceTrackers.delete(hash);
    this.paymentTrackers.get(hash)?.();
    this.paymentTrackers.delete(hash);
  }

  private async run(hash: string, actions: CchAction[], retry = 0): Promise<void> {
    for (const action of actions) {
      const order = this.o.store.get(hash);
      if (!order) return;
      try {
        await this.execute(order, action);
      } catch (e) {
        this.retryLater(hash, action, retry, (e as Error).message);
      }
    }
  }

  private retryLater(hash: string, action: CchAction, retry: number, reason: string): void {
    const delay = Math.min((this.o.retryBaseMs ?? 1000) * 2 ** Math.min(retry, 20), RETRY_MAX_MS);
    this.o.log.warn(
      { payment_hash: hash, action, retry, delay_ms: delay, reason },
      'cch action failed, retrying',
    );
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.enqueue(hash, () => this.run(hash, [action], retry + 1));
    }, delay);
    this.timers.add(t);
  }

  private async execute(order: CchOrder, action: CchAction): Promise<void> {
    const hash = order.paymentHash;
    switch (action) {
      case 'TrackIncomingInvoice':
        if (isFinal(order)) return;
        if (hasLightningIncoming(order)) this.trackLightningInvoice(hash);
        else await this.pollFiberInvoice(order);
        return;
      case 'SendOutgoingPayment':
        if (order.status !== 'IncomingAccepted') return;
        return this.sendOutgoing(order);
      case 'TrackOutgoingPayment':
        if (isFinal(order)) return;
        if (hasLightningIncoming(order)) await this.pollFiberPayment(order);
        else if (!this.paymentTrackers.has(hash)) {
          // Also the retry of a Lightning payment whose stream broke: sent again if LND never took
          // it (AlreadyExists turns into tracking), tracked if it is in flight.
          if (order.status === 'IncomingAccepted') await this.sendOutgoing(order);
          else if (order.status === 'OutgoingInFlight')
            this.followLightningPayment(hash, (u, onErr) => this.o.lightning.trackPayment(hash, u, onErr));
        }
        return;
      case 'SettleIncomingInvoice':
        if (order.status !== 'OutgoingSuccess' || !order.paymentPreimage) return;
        return this.settleIncoming(order, order.paymentPreimage);
      case 'CancelIncomingInvoice':
        return this.cancelIncoming(order);
    }
  }

  private maxOutgoingSeconds(order: CchOrder): number | string {
    return maxOutgoingSeconds(order, this.o.config, this.nowSeconds());
  }

  private async sendOutgoing(order: CchOrder): Promise<void> {
    const hash = order.paymentHash;
    const max = this.maxOutgoingSeconds(order);
    if (typeof max === 'string') {
      this.dispatch(hash, { kind: 'outgoing', status: 'Failed', failureReason: max });
      return;
    }
    if (!hasLightningIncoming(order)) {
      // Fiber → Lightning: pay the BOLT 11 invoice through LND.
      const cltvLimit = Math.floor(max / BTC_BLOCK_SECONDS);
      this.followLightningPayment(hash, (onUpdate, onError) =>
        this.o.lightning.sendPayment(
          { payReq: order.outgoingPayReq, cltvLimit, timeoutSeconds: BTC_PAYMENT_TIMEOUT_SECONDS },
          onUpdate,
          onError,
        ),
      );
      return;
    }
    // Lightning → Fiber: the hub's node pays the user's Fiber invoice.
    const tlcExpiryLimit = Math.min(max * 1000, MAX_PAYMENT_TLC_EXPIRY_LIMIT);
    let status: string;
    try {
      const r = await this.o.fiber.call('send_payment', {
        invoice: order.outgoingPayReq,
        tlc_expiry_limit: `0x${tlcExpiryLimit.toString(16)}`,
      });
      status = r.status;
    } catch (e) {
      const text = errorText(e);
      if (text.includes('Payment session already exists')) status = 'Inflight';
      else if (PERMANENT_FIBER_SEND.test(text)) {
        this.dispatch(hash, {
          kind: 'outgoing',
          status: 'Failed',
          failureReason: `SendFiberOutgoingPaymentExecutor failure: ${text}`,
        });
        return;
      } else throw new Error(`send_payment failed: ${text}`);
    }
    // Success here carries no preimage: its PutPreimage follows on the store-change feed.
    if (status === 'Created' || status === 'Inflight' || status === 'Failed')
      this.dispatch(hash, { kind: 'outgoing', status });
  }

  /** Follows a Lightning payment (sent now or before) until it ends. */
  private followLightningPayment(
    hash: string,
    start: (onUpdate: (u: PaymentUpdate) => void, onError: (e: LndCallError) => void) => () => void,
  ): void {
    this.paymentTrackers.get(hash)?.();
    const stop = start(
      (u) => {
        this.streamFailures.delete(hash);
        this.dispatch(hash, { kind: 'outgoing', ...u });
      },
      (e) => {
        this.paymentTrackers.delete(hash);
        // LND already has a payment for this hash: follow it instead (fnn: AlreadyExists → in flight).
        if (e.code === 6) {
          this.dispatch(hash, { kind: 'outgoing', status: 'Inflight' });
          this.followLightningPayment(hash, (u, onErr) => this.o.lightning.trackPayment(hash, u, onErr));
        } else if (isPermanentPaymentError(e))
          this.dispatch(hash, {
            kind: 'outgoing',
            status: 'Failed',
            failureReason: `SendLightningOutgoingPaymentExecutor failure: ${e.message}`,
          });
        else this.retryLater(hash, 'TrackOutgoingPayment', this.failedAgain(hash), e.message);
      },
    );
    this.paymentTrackers.set(hash, stop);
  }

  private failedAgain(hash: string): number {
    const n = this.streamFailures.get(hash) ?? 0;
    this.streamFailures.set(hash, n + 1);
    return n;
  }

  private trackLightningInvoice(hash: string): void {
    if (this.invoiceTrackers.has(hash)) return;
    const stop = this.o.lightning.trackInvoice(
      hash,
      (status) => {
        this.streamFailures.delete(hash);
        this.dispatch(hash, { kind: 'incoming', status });
      },
      (e) => {
        this.invoiceTrackers.delete(hash);
        this.retryLater(hash, 'TrackIncomingInvoice', this.failedAgain(hash), e.message);
      },
    );
    this.invoiceTrackers.set(hash, stop);
  }

  private async settleIncoming(order: CchOrder, preimage: string): Promise<void> {
    const hash = order.paymentHash;
    const cancelled = (why: string) =>
      this.dispatch(hash, { kind: 'incoming', status: 'Cancelled', failureReason: why });
    if (hasLightningIncoming(order)) {
      try {
        await this.o.lightning.settleInvoice(preimage);
      } catch (e) {
        const err = e as LndCallError;
        if (isPermanentSettleError(err))
          cancelled(`SettleLightningIncomingInvoiceExecutor error: ${err.message}`);
        else throw err;
      }
      return;
    }
    try {
      await this.o.fiber.call('settle_invoice', { payment_hash: hash, payment_preimage: preimage });
    } catch (e) {
      const text = errorText(e);
      if (PERMANENT_FIBER_SETTLE.test(text)) cancelled(`SettleFiberIncomingInvoiceExecutor failure: ${text}`);
      else throw new Error(`settle_invoice failed: ${text}`);
    }
    // Paid arrives as a store change; read it too, in case the feed is down.
    await this.pollFiberInvoice(this.o.store.get(hash) ?? order);
  }

  /**
   * Strand: a failed order whose outgoing side paid nothing fails the held incoming payment back
   * at once (LND CancelInvoice / Fiber cancel_invoice), rather than leaving it to time out.
   */
  private async cancelIncoming(order: CchOrder): Promise<void> {
    if (order.incomingCancelled || order.paymentPreimage) return;
    const hash = order.paymentHash;
    try {
      if (hasLightningIncoming(order)) await this.o.lightning.cancelInvoice(hash);
      else await this.o.fiber.call('cancel_invoice', { payment_hash: hash });
    } catch (e) {
      const text = errorText(e);
      // Already settled, cancelled or gone: nothing is held any more.
      if (!/already|not found|cannot cancel|canceled|cancelled|expired/i.test(text))
        throw new Error(`cancelling the incoming invoice failed: ${text}`);
    }
    const latest = this.o.store.get(hash) ?? order;
    this.o.store.update({ ...latest, incomingCancelled: true });
    this.o.log.info({ payment_hash: hash }, 'cch incoming invoice cancelled (payer refunded)');
  }

  // ----------------------------------------------------------------------- the Fiber node's feed

  private onStoreChange(c: StoreChange): void {
    if ('PutCkbInvoiceStatus' in c) {
      const { payment_hash: hash, invoice_status: status } = c.PutCkbInvoiceStatus;
      const order = this.o.store.get(hash);
      if (order && !hasLightningIncoming(order))
        this.dispatch(hash, { kind: 'incoming', status: status as never });
    } else if ('PutPaymentSession' in c) {
      const { payment_hash: hash, payment_session } = c.PutPaymentSession;
      const status = (payment_session as { status?: string }).status;
      const order = this.o.store.get(hash);
      // Success waits for its PutPreimage, which carries what the incoming side needs.
      if (order && hasLightningIncoming(order) && status && status !== 'Success')
        this.dispatch(hash, { kind: 'outgoing', status: status as never });
    } else if ('PutPreimage' in c) {
      const { payment_hash: hash, payment_preimage: preimage } = c.PutPreimage;
      const order = this.o.store.get(hash);
      if (order && hasLightningIncoming(order))
        this.dispatch(hash, { kind: 'outgoing', status: 'Success', preimage });
    }
  }

  /** On (re)connection to the node: what changed while the feed was down is read back. */
  private reconcileFiber(): void {
    for (const order of this.o.store.unfinished()) {
      if (isFinal(order)) continue;
      const hash = order.paymentHash;
      this.enqueue(hash, async () => {
        const o = this.o.store.get(hash);
        if (!o || isFinal(o)) return;
        if (hasLightningIncoming(o)) await this.pollFiberPayment(o);
        else await this.pollFiberInvoice(o);
      });
    }
  }

  private async pollFiberInvoice(order: CchOrder): Promise<void> {
    try {
      const r = await this.o.fiber.call('get_invoice', { payment_hash: order.paymentHash });
      // Received once the order moved on is old news, not a step back.
      const stale = r.status === 'Received' && order.status !== 'Pending';
      if (r.status !== 'Open' && !stale)
        await this.apply(order.paymentHash, { kind: 'incoming', status: r.status });
    } catch (e) {
      this.o.log.warn({ payment_hash: order.paymentHash, err: errorText(e) }, 'get_invoice failed');
    }
  }

  /**
   * A Fiber payment that ended while unobserved. A success needs its preimage: from the feed, or
   * read from the node's store when the hub runs inside it.
   */
  private async pollFiberPayment(order: CchOrder): Promise<void> {
    if (order.status !== 'OutgoingInFlight' && order.status !== 'IncomingAccepted') return;
    try {
      const r = await this.o.fiber.call('get_payment', { payment_hash: order.paymentHash });
      const preimage = r.status === 'Success' ? this.o.fiber.paymentPreimage?.(order.paymentHash) : undefined;
      if (preimage) await this.apply(order.paymentHash, { kind: 'outgoing', status: 'Success', preimage });
      else if (r.status === 'Failed' || r.status === 'Inflight')
        await this.apply(order.paymentHash, {
          kind: 'outgoing',
          status: r.status,
          ...(r.status === 'Failed'
            ? { failureReason: `outgoing payment failed: ${r.failed_error ?? 'Failed'}` }
            : {}),
        });
    } catch {
      // No payment yet: SendOutgoingPayment makes it.
    }
  }

  // --------------------------------------------------------------------------------- expiry

  private expireDue(): void {
    const nowS = this.nowSeconds();
    for (const order of this.o.store.unfinished())
      if (!isFinal(order) && isExpiredAt(order, nowS))
        this.enqueue(order.paymentHash, () => this.expire(order.paymentHash, 'Order expired'));
  }

  private async expire(hash: string, reason: string): Promise<void> {
    const order = this.o.store.get(hash);
    if (!order || isFinal(order)) return;
    // Past Pending, an outgoing payment may be in flight: cancelling the incoming side could
    // refund a payment the hub ends up paying out.
    const failed: CchOrder = {
      ...order,
      status: 'Failed',
      failureReason: reason,
      ...(order.status === 'Pending' ? {} : { keepIncoming: true }),
    };
    this.o.store.update(failed);
    this.untrack(hash);
    this.o.log.info({ payment_hash: hash }, 'cch order expired');
    await this.run(hash, actionsOnEntering(failed));
  }
}
