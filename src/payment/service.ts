/**
 * Payment sessions: `send_payment` validates the request, finds a route, stores the session
 * (status `Created`) and dispatches the first TLC; the channel layer reports the TLC's outcome,
 * which ends the session (`Success` with the preimage, or `Failed` with the reason) or retries
 * over another route, up to the session's try limit. Every state is committed before the step
 * that depends on it, and announced as a `PutPaymentSession` store change. A session that can
 * no longer change is kept settled, in its compact form (`settled.ts`); `get_payment` and
 * `list_payments` answer from either (`record.ts`).
 *
 * Over 600 lines: one class, the life of a session (send, route, attempt, outcome, retry, resume);
 * what stands alone is in its own file (MPP `mpp-session.ts`, trampolines `trampoline.ts`, the
 * restart rules `resume.ts`, the records `record.ts`).
 */
import { randomBytes } from 'node:crypto';
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import type { PaymentFailure, PaymentHistory, SessionRouteNode } from '../graph/index.ts';
import { directionOf, type FindRouteRequest, PathFindError, type RouterHop } from '../graph/index.ts';
import type { Invoice } from '../invoice/index.ts';
import type { StoreChange } from '../store/index.ts';
import { PaymentError, SendPaymentError } from './errors.ts';
import { partAmount, usesMpp } from './mpp.ts';
import { MppSessions } from './mpp-session.ts';
import { TRAMPOLINE_RECORD_KEY } from './onion/hop-data.ts';
import { buildOnion, decodeErrorPacket } from './onion/packet.ts';
import { buildPaymentHops, paymentFailureOf, routeFee, sessionRouteOf } from './onion/route-hops.ts';
import type { SessionKeySource } from './onion/session-key-pool.ts';
import { type PaymentRecord, paymentRecord, sessionChange } from './record.ts';
import {
  type PaymentRequest,
  type SendPaymentParams,
  type ValidateContext,
  validateSendPayment,
} from './request.ts';
import { type AttemptFate, NEVER_SENT_ERROR, onionKeyOf, reconcileSession } from './resume.ts';
import {
  type Attempt,
  attemptFailed,
  attemptSucceeded,
  inflightAttempts,
  isFinal,
  newSession,
  type PaymentSession,
  type PaymentStatus,
  sessionFailed,
  startAttempt,
} from './session.ts';
import { type PaymentView, viewOf } from './settled.ts';
import type { PaymentStore } from './store.ts';
import {
  localForwardingFee,
  planTrampoline,
  type TrampolineContext,
  TrampolinePlanError,
  type TrampolinePlanInput,
  trampolineBudgetLeft,
  trampolineHopsUnsupported,
  trampolineOnion,
} from './trampoline.ts';

/** The request's custom records as the onion carries them. */
function recordsOf(r: PaymentRequest): Map<number, Uint8Array> | null {
  return r.customRecords
    ? new Map(Object.entries(r.customRecords).map(([k, v]) => [Number(k), hexToBytes(v)]))
    : null;
}

export interface PaymentRouter {
  /** Throws PathFindError when there is no route. */
  findRoute(req: FindRouteRequest): RouterHop[];
  /** MPP: a route for the amount, or for the largest part down to `lowBound` (`findPathInRange`). */
  findRouteInRange?(
    req: FindRouteRequest & { amount: bigint },
    lowBound: bigint | null,
  ): { route: RouterHop[]; amount: bigint };
  /** MPP: what the widest route carries (`maxRoutableAmount`). */
  maxRoutableAmount?(req: Omit<FindRouteRequest, 'amount'>): bigint;
  /** The features a node announced; undefined for a node that announced none. */
  nodeFeatures?(node: string): Uint8Array | undefined;
}

export interface OutgoingTlc {
  attemptId: string;
  paymentHash: string;
  /** Our channel to the first hop (OutPointHex). */
  channelOutpoint: string;
  amount: bigint;
  expiry: bigint;
  hashAlgorithm: 0 | 1;
  onionPacket: Uint8Array;
}

/** The channel layer, seen from payments. */
export interface TlcOutbox {
  /** Offers the TLC on the channel; rejects when the channel refuses it at once. */
  sendTlc(tlc: OutgoingTlc): Promise<void>;
}

export interface InvoiceLookup {
  parseInvoice(invoice: string): Invoice;
  verifyInvoice(invoice: Invoice): boolean;
  payeeOf(invoice: Invoice): string | undefined;
}

/** The router's memory of what worked (the graph service's payment history). */
export interface RouteFeedback {
  success(nodes: SessionRouteNode[]): void;
  /** Resolves to whether another route may be tried (the reference's failure table). */
  failure(nodes: SessionRouteNode[], failure: PaymentFailure): Promise<boolean>;
}

export interface PaymentServiceOptions {
  store: PaymentStore;
  nodePubkey: string;
  router: PaymentRouter;
  tlc: TlcOutbox;
  invoices: InvoiceLookup;
  history?: PaymentHistory;
  /** When given, failures and successes are judged and remembered by the router. */
  feedback?: RouteFeedback;
  onChange?: (change: StoreChange) => void;
  /** Our fee rate (ppm) on one of our channels: a trampoline's fee on its first hop. */
  localFeeRate?: (channelOutpoint: string) => bigint | undefined;
  /** The node's least TLC expiry delta (`codec/epoch-rules.ts`); 9,600,000 ms when absent. */
  minTlcExpiryDelta?: bigint;
  /** Onion session keys with their first layer made ahead (`onion/session-key-pool.ts`). */
  sessionKeys?: SessionKeySource;
  now?: () => number;
  logger?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

/** Failures at the final node that another route cannot fix. */
const FINAL_ERRORS = new Set([
  'IncorrectOrUnknownPaymentDetails',
  'InvoiceExpired',
  'InvoiceCancelled',
  'FinalIncorrectExpiryDelta',
  'FinalIncorrectTlcAmount',
  'HoldTlcTimeout',
  'RequiredNodeFeatureMissing',
  'PermanentNodeFailure',
  'ExpiryTooSoon',
  'ExpiryTooFar',
]);

export class PaymentService {
  private readonly now: () => number;
  /** attempt id → payment hash, for outcomes reported by the channel layer. */
  private readonly attempts = new Map<string, string>();
  /** One queue per payment hash: outcomes and retries of a session never interleave. */
  private readonly queues = new Map<string, Promise<unknown>>();

  private readonly mpp: MppSessions;
  private trampolineEnd?: (s: PaymentSession) => void;

  constructor(private readonly o: PaymentServiceOptions) {
    this.now = o.now ?? Date.now;
    this.mpp = new MppSessions({
      nodePubkey: o.nodePubkey,
      router: o.router,
      ...(o.feedback ? { feedback: o.feedback } : {}),
      ...(o.onChange ? { onChange: o.onChange } : {}),
      now: () => this.now(),
      routeRequest: (r, now) => this.routeRequest(r, now),
      prepareAttempt: (s, route, amount) => this.prepareAttempt(s, route, amount),
      dispatch: (hash, tlc) => this.dispatch(hash, tlc),
      save: (s) => this.save(s),
      enqueue: (hash, job) => this.enqueue(hash, job),
      judgeFailure: (s, a, f) => this.judgeFailure(s, a, f),
      sessionRoute: (a, amount) => this.sessionRoute(a, amount),
      forget: (id) => this.attempts.delete(id),
      budgetLeft: (r) =>
        r.trampoline
          ? (maxFee, route, routeFee) => trampolineBudgetLeft(maxFee, this.localFee(route), routeFee)
          : undefined,
    });
  }

  send(params: SendPaymentParams): PaymentRecord {
    const request = this.validate(params);
    if (request.targetPubkey === this.o.nodePubkey && !request.allowSelfPayment) {
      throw new SendPaymentError(
        'Send payment error: Failed to build route, Feature not enabled: allow_self_payment is not enable, can not pay self',
      );
    }
    this.refuseDuplicate(request);
    try {
      if (usesMpp(request)) {
        const { session, parts } = this.mpp.start(request);
        return request.dryRun ? this.dryRunRecord(session, parts) : this.record(session);
      }
      return this.start(request, this.route(request, this.now()));
    } catch (e) {
      // As the reference, which stores the session before building its routes: a payment no
      // route can carry stays on record as Failed with the reason (and may be sent again).
      if (!request.dryRun && e instanceof SendPaymentError) {
        const now = this.now();
        this.save(sessionFailed(newSession(request, now), e.message, now));
      }
      throw e;
    }
  }

  /**
   * `send_payment_with_router`: the caller's route, amount and target from its last hop. Such a
   * session never retries (the reference's rule for explicit routers).
   */
  sendWithRouter(
    params: Omit<SendPaymentParams, 'target_pubkey' | 'amount'>,
    router: RouterHop[],
  ): PaymentRecord {
    const last = router.at(-1);
    if (!last) throw new PaymentError('NoHopRequirements', 'InvalidParameter: No hop requirements provided');
    const request = this.validate({
      ...params,
      target_pubkey: last.target,
      amount: last.amountReceived,
      allow_self_payment: last.target === this.o.nodePubkey,
    });
    this.refuseDuplicate(request);
    return this.start(request, router, 1);
  }

  /**
   * A trampoline's own payment for an incoming TLC (the reference's `forward_trampoline_packet`):
   * to `next` for `amount` within the `budget` the sender gave, the rest of the inner onion on
   * its last hop (on every part, when the sender allowed `maxParts` > 1). One no route can carry
   * is on record as Failed at once, which fails the incoming TLC (`onTrampolineEnd`). Throws
   * only when it cannot start: a session for the hash already there.
   */
  forwardTrampoline(f: {
    paymentHash: string;
    next: string;
    amount: bigint;
    budget: bigint;
    finalTlcExpiryDelta: bigint;
    tlcExpiryLimit: bigint;
    hashAlgorithm: 0 | 1;
    maxParts?: bigint | null;
    udtTypeScript?: PaymentRequest['udtTypeScript'];
    context: Omit<TrampolineContext, 'upstreamSettled'>;
  }): PaymentRecord {
    const parts = f.maxParts ?? 1n;
    const request: PaymentRequest = {
      targetPubkey: f.next,
      amount: f.amount,
      paymentHash: f.paymentHash,
      preimage: null,
      finalTlcExpiryDelta: f.finalTlcExpiryDelta,
      tlcExpiryLimit: f.tlcExpiryLimit,
      maxFeeAmount: f.budget,
      maxParts: parts,
      allowMpp: parts > 1n,
      keysend: false,
      udtTypeScript: f.udtTypeScript ?? null,
      allowSelfPayment: false,
      customRecords: null,
      hopHints: [],
      hashAlgorithm: f.hashAlgorithm === 1 ? 'sha256' : 'ckb_hash',
      invoice: null,
      dryRun: false,
      timeout: null,
      trampoline: { ...f.context, upstreamSettled: false },
    };
    this.refuseDuplicate(request);
    try {
      if (usesMpp(request)) return this.record(this.mpp.start(request).session);
      return this.start(request, this.route(request, this.now()));
    } catch (e) {
      if (!(e instanceof SendPaymentError)) throw e;
      // As the reference's trampoline, whose payment session starts and then fails.
      const now = this.now();
      const failed = sessionFailed(newSession(request, now), e.message, now);
      this.save(failed);
      return this.record(failed);
    }
  }

  /** Tells `listener` of each trampoline session that ended, to settle its incoming TLC. */
  onTrampolineEnd(listener: (s: PaymentSession) => void): void {
    this.trampolineEnd = listener;
  }

  /** The incoming TLC of a trampoline session was settled. */
  markUpstreamSettled(paymentHash: string): void {
    const s = this.o.store.get(paymentHash);
    const ctx = s?.request.trampoline;
    if (!s || !ctx) return;
    this.save({ ...s, request: { ...s.request, trampoline: { ...ctx, upstreamSettled: true } } });
  }

  /** The incoming TLC a trampoline session for `paymentHash` pays onward for, if there is one. */
  trampolineOf(paymentHash: string): { channelId: string; tlcId: bigint } | undefined {
    const ctx = this.o.store.get(paymentHash)?.request.trampoline;
    return ctx ? { channelId: ctx.prevChannelId, tlcId: ctx.prevTlcId } : undefined;
  }

  /** Trampoline sessions that ended before their incoming TLC was settled (a stop between). */
  unsettledTrampolines(): PaymentSession[] {
    return this.o.store.unsettledTrampolines();
  }

  private validate(params: SendPaymentParams): PaymentRequest {
    const ctx: ValidateContext = { nowMs: this.now(), minTlcExpiryDelta: this.o.minTlcExpiryDelta };
    if (params.invoice !== undefined) {
      let inv: Invoice;
      try {
        inv = this.o.invoices.parseInvoice(params.invoice);
      } catch {
        throw new PaymentError(
          'InvalidRequest',
          'InvalidParameter: Failed to validate payment request: "invoice is invalid"',
        );
      }
      ctx.invoice = inv;
      ctx.invoiceSignatureValid = this.o.invoices.verifyInvoice(inv);
      ctx.invoicePayee = this.o.invoices.payeeOf(inv);
    }
    return validateSendPayment(params, ctx);
  }

  /** Only a Failed session with nothing in flight (a settled Failed payment) may be sent again. */
  private refuseDuplicate(request: PaymentRequest): void {
    const live = this.o.store.get(request.paymentHash);
    const existing = live ?? this.o.store.settled(request.paymentHash);
    if (
      existing &&
      !request.dryRun &&
      !(existing.status === 'Failed' && (!live || inflightAttempts(live).length === 0))
    ) {
      throw new PaymentError(
        'SessionExists',
        `InvalidParameter: Payment session already exists: Hash256(${request.paymentHash}) with payment session status: ${existing.status}`,
      );
    }
  }

  /** A new session for `request`, whose duplicate check the caller has made. */
  private start(request: PaymentRequest, route: RouterHop[], tryLimit?: number): PaymentRecord {
    let session = newSession(request, this.now());
    if (tryLimit !== undefined) session = { ...session, tryLimit };
    if (request.dryRun) return this.dryRunRecord(session, [{ route, amount: request.amount }]);
    const attempt = this.prepareAttempt(session, route);
    session = startAttempt(session, attempt.record, this.now());
    // Reported as Created until the channel has taken the TLC (the seed's first answer).
    session = { ...session, status: 'Created' };
    this.save(session);
    this.enqueue(session.paymentHash, () => this.dispatch(session.paymentHash, attempt.tlc));
    return this.record(session);
  }

  private record(s: PaymentSession | PaymentView): PaymentRecord {
    return paymentRecord('attempts' in s ? viewOf(s) : s, this.o.nodePubkey);
  }

  /** What a dry run answers: the routes and their fee, nothing stored or sent. */
  private dryRunRecord(s: PaymentSession, parts: { route: RouterHop[]; amount: bigint }[]): PaymentRecord {
    const attempts: Attempt[] = parts.map((p, i) => ({
      id: '',
      n: i + 1,
      status: 'Inflight',
      route: p.route,
      fee: routeFee(p.route, p.amount),
      sharedSecrets: [],
      error: null,
    }));
    return this.record({ ...s, attempts, fee: attempts.reduce((a, x) => a + x.fee, 0n) });
  }

  get(paymentHash: string): PaymentRecord {
    const s = this.o.store.view(paymentHash);
    if (!s)
      throw new PaymentError(
        'SessionNotFound',
        `InvalidParameter: Payment session not found: Hash256(${paymentHash})`,
      );
    return this.record(s);
  }

  list(opts: { status?: PaymentStatus; limit: number; after?: string }): {
    payments: PaymentRecord[];
    last_cursor: string | null;
  } {
    const rows = this.o.store.list(opts);
    return { payments: rows.map((s) => this.record(s)), last_cursor: rows.at(-1)?.paymentHash ?? null };
  }

  /**
   * The channel layer: the first hop's TLC of an attempt was fulfilled. `paymentHash` (from the
   * persisted TLC link) finds the session after a restart too.
   */
  tlcFulfilled(attemptId: string, preimage: Uint8Array, paymentHash?: string): Promise<void> {
    const hash = this.attempts.get(attemptId) ?? paymentHash;
    if (!hash) return Promise.resolve();
    return this.enqueue(hash, async () => {
      const s = this.o.store.get(hash);
      if (s && usesMpp(s.request)) return this.mpp.fulfilled(s, attemptId, preimage);
      if (!s || isFinal(s)) return;
      const done = attemptSucceeded(s, attemptId, bytesToHex(preimage), this.now());
      this.save(done);
      const attempt = s.attempts.find((a) => a.id === attemptId);
      if (attempt) this.o.feedback?.success(this.sessionRoute(attempt, s.request.amount));
      this.o.onChange?.({ PutPreimage: { payment_hash: hash, payment_preimage: bytesToHex(preimage) } });
      this.attempts.delete(attemptId);
    });
  }

  /**
   * The channel layer: the TLC failed, with the error packet from downstream (or a local reason).
   * Resolves once the session has taken the outcome (and saved it).
   */
  tlcFailed(
    attemptId: string,
    failure: { errorPacket?: Uint8Array; reason?: string },
    paymentHash?: string,
  ): Promise<void> {
    const hash = this.attempts.get(attemptId) ?? paymentHash;
    if (!hash) return Promise.resolve();
    this.attempts.delete(attemptId);
    return this.enqueue(hash, () => {
      const s = this.o.store.get(hash);
      if (s && usesMpp(s.request)) return this.mpp.failed(s, attemptId, failure);
      return this.onAttemptFailure(hash, attemptId, failure);
    });
  }

  private async onAttemptFailure(
    hash: string,
    attemptId: string,
    failure: { errorPacket?: Uint8Array; reason?: string },
  ) {
    const s = this.o.store.get(hash);
    if (!s || isFinal(s)) return;
    const attempt = s.attempts.find((a) => a.id === attemptId);
    // An outcome replayed after a restart may find the attempt already ended.
    if (attempt?.status !== 'Inflight') return;
    const { reason, retryable } = await this.judgeFailure(s, attempt, failure);
    const next = attemptFailed(s, attemptId, reason, !retryable, this.now());
    if (!retryable) {
      this.save(next);
      return;
    }
    await this.retry(next, reason);
  }

  /** A single-path session with nothing in flight: another route, unless the tries ran out. */
  private async retry(s: PaymentSession, reason: string): Promise<void> {
    let next = s;
    const hash = s.paymentHash;
    if (s.attempts.length >= s.tryLimit) {
      this.save(sessionFailed(next, reason, this.now()));
      return;
    }
    let route: RouterHop[];
    try {
      route = this.route(next.request, this.now());
    } catch (e) {
      this.save(sessionFailed(next, (e as Error).message, this.now()));
      return;
    }
    const retry = this.prepareAttempt(next, route);
    next = startAttempt(next, retry.record, this.now());
    this.save(next);
    await this.dispatch(hash, retry.tlc);
  }

  /** What went wrong with an attempt, and whether another route may be tried. */
  private async judgeFailure(
    s: PaymentSession,
    attempt: Attempt,
    failure: { errorPacket?: Uint8Array; reason?: string },
  ): Promise<{ reason: string; retryable: boolean }> {
    const amount = usesMpp(s.request) ? partAmount(attempt) : s.request.amount;
    let reason = failure.reason ?? 'TemporaryChannelFailure';
    let retryable = true;
    if (failure.errorPacket) {
      const decoded = decodeErrorPacket(
        failure.errorPacket,
        attempt.sharedSecrets.map((x) => hexToBytes(x)),
      );
      if (!decoded) {
        reason = 'InvalidOnionError';
      } else {
        reason = decoded.error.code;
        if (this.o.feedback) {
          retryable = await this.o.feedback.failure(
            this.sessionRoute(attempt, amount),
            paymentFailureOf(decoded.error),
          );
        } else {
          const atTarget = decoded.hopIndex === attempt.route.length - 1;
          // An error naming no node (a trampoline's failure past it, among others) stops the
          // payment, as the router's judgement does (`judgeFailure` in graph/history.ts).
          retryable =
            decoded.error.extra !== null &&
            !(atTarget && FINAL_ERRORS.has(reason)) &&
            reason !== 'IncorrectOrUnknownPaymentDetails';
          this.penalise(attempt, decoded.error.extra);
        }
      }
    }
    return { reason, retryable };
  }

  private sessionRoute(attempt: Attempt, amount: bigint): SessionRouteNode[] {
    return sessionRouteOf(
      this.o.nodePubkey,
      attempt.route.map((h) => ({ ...h, incomingTlcExpiry: 0 })),
      amount,
    );
  }

  /** Without router feedback: tells our own history about the failed channel. */
  private penalise(
    attempt: Attempt,
    extra: { type: string; channelOutpoint?: unknown; nodeId?: Uint8Array } | null,
  ) {
    if (!this.o.history || !extra || extra.type !== 'ChannelFailed' || !extra.nodeId) return;
    const from = bytesToHex(extra.nodeId, false);
    const i = attempt.route.findIndex((h) => h.target === from);
    const path = [this.o.nodePubkey, ...attempt.route.map((h) => h.target)];
    const at = i === -1 ? 0 : i + 1; // position of `from` in the path
    const hop = attempt.route[at];
    if (!hop || path[at] !== from) return;
    this.o.history.applyPairResult(
      hop.channelOutpoint,
      directionOf(from, hop.target),
      hop.amountReceived,
      false,
      this.now(),
    );
  }

  private route(request: PaymentRequest, now: number): RouterHop[] {
    try {
      const base = this.routeRequest(request, now);
      if (request.trampolineHops?.length) {
        const unsupported = trampolineHopsUnsupported(request.trampolineHops, this.o.nodePubkey, (n) =>
          this.o.router.nodeFeatures?.(n),
        );
        if (unsupported) throw new PathFindError('FeatureNotEnabled', `Feature not enabled: ${unsupported}`);
        // Only as far as the first trampoline, carrying the amount and the whole fee budget.
        const plan = planTrampoline(this.trampolineInput(request));
        return this.o.router.findRoute({
          ...base,
          target: request.trampolineHops[0]!,
          amount: plan.amountToFirst,
          finalTlcExpiryDelta: Number(plan.outerFinalDelta),
        });
      }
      const route = this.o.router.findRoute(base);
      if (request.trampoline) this.checkTrampolineBudget(request, route);
      return route;
    } catch (e) {
      if (e instanceof PathFindError)
        throw new SendPaymentError(`Send payment error: Failed to build route, ${e.message}`);
      if (e instanceof TrampolinePlanError)
        throw new SendPaymentError(
          `Send payment error: Failed to build route, Graph other error: ${e.message}`,
        );
      throw e;
    }
  }

  private trampolineInput(r: PaymentRequest): TrampolinePlanInput {
    return {
      hops: r.trampolineHops ?? [],
      target: r.targetPubkey,
      finalAmount: r.amount,
      maxFeeAmount: r.maxFeeAmount,
      finalTlcExpiryDelta: r.finalTlcExpiryDelta,
      tlcExpiryLimit: r.tlcExpiryLimit,
      hashAlgorithm: r.hashAlgorithm === 'sha256' ? 1 : 0,
      paymentPreimage: r.preimage ? hexToBytes(r.preimage) : null,
      customRecords: recordsOf(r),
      // The reference's `allow_mpp()` of the sender's request: the trampoline may split.
      maxParts: r.allowMpp && r.maxParts > 1n && !r.keysend ? r.maxParts : null,
    };
  }

  /**
   * A trampoline's own payment: this node's fee on its first channel
   * (`apply_trampoline_forwarding_fee`), then the route's fees, must fit the budget it was given.
   */
  private checkTrampolineBudget(r: PaymentRequest, route: RouterHop[]): void {
    if (route.length) trampolineBudgetLeft(r.maxFeeAmount, this.localFee(route), routeFee(route, r.amount));
  }

  /** Our fee on the first channel of `route`, at our rate there. */
  private localFee(route: RouterHop[]): bigint {
    const first = route[0];
    if (!first) return 0n;
    return localForwardingFee(first.amountReceived, this.o.localFeeRate?.(first.channelOutpoint) ?? 0n);
  }

  /** What the last hop of an attempt's onion carries. */
  private finalHop(r: PaymentRequest, route: RouterHop[], amount: bigint) {
    if (r.trampolineHops?.length) {
      const input = this.trampolineInput(r);
      const plan = planTrampoline(input);
      const inner = trampolineOnion(input, plan, hexToBytes(r.paymentHash));
      return {
        amount: route.at(-1)?.amountReceived ?? plan.amountToFirst,
        finalTlcExpiryDelta: Number(plan.outerFinalDelta),
        paymentPreimage: null,
        customRecords: new Map([[TRAMPOLINE_RECORD_KEY, inner]]),
      };
    }
    if (r.trampoline) {
      return {
        amount,
        finalTlcExpiryDelta: Number(r.finalTlcExpiryDelta),
        paymentPreimage: null,
        customRecords: new Map([[TRAMPOLINE_RECORD_KEY, hexToBytes(r.trampoline.onion)]]),
      };
    }
    return {
      amount,
      finalTlcExpiryDelta: Number(r.finalTlcExpiryDelta),
      paymentPreimage: r.preimage ? hexToBytes(r.preimage) : null,
      customRecords: recordsOf(r),
    };
  }

  private routeRequest(request: PaymentRequest, now: number): FindRouteRequest {
    return {
      source: this.o.nodePubkey,
      target: request.targetPubkey,
      amount: request.amount,
      maxFeeAmount: request.maxFeeAmount,
      udt: request.udtTypeScript ? JSON.stringify(request.udtTypeScript) : null,
      finalTlcExpiryDelta: Number(request.finalTlcExpiryDelta),
      tlcExpiryLimit: Number(request.tlcExpiryLimit),
      allowSelfPayment: request.allowSelfPayment,
      hopHints: request.hopHints.map((h) => ({
        pubkey: h.pubkey,
        channelOutpoint: h.channelOutpoint,
        feeRate: h.feeRate,
        tlcExpiryDelta: Number(h.tlcExpiryDelta),
      })),
      allowMpp: usesMpp(request),
      // Left out when we keep none, so that the router's own history applies.
      ...(this.o.history ? { history: this.o.history } : {}),
      now,
    };
  }

  /** An attempt over `route` delivering `amount` (the whole payment, or one MPP part). */
  private prepareAttempt(
    s: PaymentSession,
    route: RouterHop[],
    amount = s.request.amount,
  ): { record: Omit<Attempt, 'n' | 'status' | 'error'>; tlc: OutgoingTlc } {
    const r = s.request;
    const final = this.finalHop(r, route, amount);
    const hops = buildPaymentHops(route, {
      ...final,
      hashAlgorithm: r.hashAlgorithm === 'sha256' ? 1 : 0,
      now: this.now(),
    });
    // The path's first node is our peer (the sender's own instruction names it).
    const firstHop = hops[0]?.nextHop;
    const firstLayer = firstHop ? this.o.sessionKeys?.take(firstHop) : undefined;
    const onion = buildOnion(hops, hexToBytes(r.paymentHash), firstLayer ? { firstLayer } : {});
    const id = bytesToHex(randomBytes(16), false);
    this.attempts.set(id, s.paymentHash);
    const first = hops[0]!;
    return {
      record: {
        id,
        route: route.map((h) => ({
          target: h.target,
          channelOutpoint: h.channelOutpoint,
          amountReceived: h.amountReceived,
        })),
        // Through trampolines: the outer route's fees and the whole budget given to them.
        fee: routeFee(route, r.trampolineHops?.length ? r.amount : amount),
        sharedSecrets: onion.sharedSecrets.map((x) => bytesToHex(x)),
        onionKey: onionKeyOf(onion.packet),
      },
      tlc: {
        attemptId: id,
        paymentHash: r.paymentHash,
        channelOutpoint: route[0]!.channelOutpoint,
        amount: first.amount,
        expiry: first.expiry,
        hashAlgorithm: first.hashAlgorithm,
        onionPacket: onion.packet,
      },
    };
  }

  private async dispatch(hash: string, tlc: OutgoingTlc): Promise<void> {
    try {
      await this.o.tlc.sendTlc(tlc);
    } catch (e) {
      this.o.logger?.warn({ payment_hash: hash, err: (e as Error).message }, 'first hop refused the TLC');
      this.attempts.set(tlc.attemptId, hash);
      this.tlcFailed(tlc.attemptId, { reason: 'TemporaryChannelFailure' });
      return;
    }
    const s = this.o.store.get(hash);
    if (
      s &&
      s.status === 'Created' &&
      s.attempts.some((a) => a.id === tlc.attemptId && a.status === 'Inflight')
    ) {
      this.save({ ...s, status: 'Inflight', lastUpdatedAt: this.now() });
    }
  }

  private save(s: PaymentSession): void {
    this.o.store.put(s);
    this.o.onChange?.({
      PutPaymentSession: { payment_hash: s.paymentHash, payment_session: sessionChange(s) },
    });
    const ctx = s.request.trampoline;
    if (ctx && !ctx.upstreamSettled && isFinal(s)) this.trampolineEnd?.(s);
  }

  private enqueue(hash: string, job: () => Promise<void> | void): Promise<void> {
    const prev = this.queues.get(hash) ?? Promise.resolve();
    const next = prev
      .then(job)
      .catch((e) =>
        this.o.logger?.warn({ payment_hash: hash, err: (e as Error).message }, 'payment step failed'),
      );
    this.queues.set(hash, next);
    void next.then(() => {
      if (this.queues.get(hash) === next) this.queues.delete(hash);
    });
    return next;
  }

  /**
   * On start: every session left in flight is reconciled with the channels (`fateOf` judges each
   * attempt, see resume.ts) and carried on — attempts that never left are sent again within the
   * try limit, attempts in a channel keep waiting, a session with nothing in flight goes on.
   * The attempts are judged now, before the node handles any channel event.
   */
  resume(fateOf: (s: PaymentSession, a: Attempt) => AttemptFate): void {
    for (const s0 of this.o.store.unfinished()) {
      const { session, changed } = reconcileSession(s0, (a) => fateOf(s0, a), this.now());
      for (const a of inflightAttempts(session)) this.attempts.set(a.id, session.paymentHash);
      this.o.logger?.info(
        {
          payment_hash: session.paymentHash,
          status: session.status,
          inflight: inflightAttempts(session).length,
        },
        'payment session resumed',
      );
      if (changed) this.save(session);
      this.enqueue(session.paymentHash, () => this.carryOn(session.paymentHash));
    }
  }

  /** A session not final and with nothing in flight sends again (or fails per its try limit). */
  private async carryOn(hash: string): Promise<void> {
    const s = this.o.store.get(hash);
    if (!s || isFinal(s)) return;
    if (usesMpp(s.request)) return this.mpp.carryOn(s);
    if (inflightAttempts(s).length > 0) return;
    await this.retry(s, s.failedError ?? NEVER_SENT_ERROR);
  }

  /** Waits until the queued steps of a payment have run (tests, shutdown). */
  async settled(hash: string): Promise<void> {
    while (this.queues.has(hash)) await this.queues.get(hash);
  }
}
