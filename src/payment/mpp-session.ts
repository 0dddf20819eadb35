/**
 * The shell of multi-part payment sessions (the pure rules are in `mpp.ts`): plans the parts,
 * records each part's outcome, sends what is still missing over new parts, and settles the
 * session's status — Success once the fulfilled parts cover the amount, Failed when a part fails
 * for good with nothing else in flight, or when the tries (`max_parts × 3`) run out. The payment
 * service owns the store, the queue per payment hash and the TLC dispatch; it lends them here.
 */
import { bytesToHex } from '../codec/index.ts';
import type { FindRouteRequest, RouterHop, SessionRouteNode } from '../graph/index.ts';
import type { StoreChange } from '../store/index.ts';
import {
  activeAttempts,
  feePaid,
  mayAddParts,
  mppStatus,
  mppTryLimit,
  type PartRouter,
  type PlanInput,
  PlannedChannels,
  type PlannedPart,
  partAmount,
  planParts,
  remainAmount,
} from './mpp.ts';
import type { PaymentRequest } from './request.ts';
import type { OutgoingTlc, PaymentRouter, RouteFeedback } from './service.ts';
import {
  type Attempt,
  isFinal,
  newSession,
  type PaymentSession,
  sessionFailed,
  startAttempt,
} from './session.ts';

type TlcFailure = { errorPacket?: Uint8Array; reason?: string };

/** What the payment service lends to MPP sessions. */
export interface MppHost {
  nodePubkey: string;
  router: PaymentRouter;
  feedback?: RouteFeedback;
  onChange?: (change: StoreChange) => void;
  now(): number;
  routeRequest(r: PaymentRequest, now: number): FindRouteRequest;
  prepareAttempt(
    s: PaymentSession,
    route: RouterHop[],
    amount: bigint,
  ): { record: Omit<Attempt, 'n' | 'status' | 'error'>; tlc: OutgoingTlc };
  dispatch(hash: string, tlc: OutgoingTlc): Promise<void>;
  /** Persists the session (and announces it). */
  save(s: PaymentSession): void;
  enqueue(hash: string, job: () => Promise<void> | void): void;
  judgeFailure(s: PaymentSession, a: Attempt, f: TlcFailure): Promise<{ reason: string; retryable: boolean }>;
  sessionRoute(a: Attempt, amount: bigint): SessionRouteNode[];
  /** Forgets an attempt id whose outcome has arrived. */
  forget(attemptId: string): void;
  /** A trampoline's own payment: how each part spends its budget (see `trampolineBudgetLeft`). */
  budgetLeft?(r: PaymentRequest): PlanInput['budgetLeft'];
}

export class MppSessions {
  constructor(private readonly h: MppHost) {}

  /**
   * A new multi-part session: the parts planned at once (throws the reference's texts when they
   * cannot be), stored, then dispatched. A dry run returns the planned parts only.
   */
  start(request: PaymentRequest): { session: PaymentSession; parts: PlannedPart[] } {
    let session: PaymentSession = {
      ...newSession(request, this.h.now()),
      tryLimit: mppTryLimit(request.maxParts),
    };
    const parts = this.plan(session);
    if (request.dryRun) return { session, parts };
    const tlcs: OutgoingTlc[] = [];
    for (const part of parts) {
      const attempt = this.h.prepareAttempt(session, part.route, part.amount);
      session = startAttempt(session, attempt.record, this.h.now());
      tlcs.push(attempt.tlc);
    }
    // Reported as Created until the channels have taken the TLCs.
    session = { ...session, status: 'Created', fee: feePaid(session) };
    this.h.save(session);
    const hash = session.paymentHash;
    this.h.enqueue(hash, async () => {
      for (const tlc of tlcs) await this.h.dispatch(hash, tlc);
    });
    return { session, parts };
  }

  /**
   * Routes for what the session still has to send (`planParts`), around the channels its parts
   * in flight use. Our own first hops are left out of that count: their balance already excludes
   * the TLCs added.
   */
  private plan(s: PaymentSession): PlannedPart[] {
    const r = s.request;
    const source = this.h.nodePubkey;
    const stats = new PlannedChannels();
    for (const a of s.attempts) if (a.status === 'Inflight') stats.add(source, a.route, true);
    const base = this.h.routeRequest(r, this.h.now());
    const router = this.h.router;
    const remain = remainAmount(s);
    const parts: PartRouter = {
      maxRoutableAmount: (st) =>
        router.maxRoutableAmount ? router.maxRoutableAmount({ ...base, stats: st }) : remain,
      findRouteInRange: (amount, lowBound, maxFee, st) => {
        const req = { ...base, amount, maxFeeAmount: maxFee, stats: st };
        return router.findRouteInRange
          ? router.findRouteInRange(req, lowBound)
          : { route: router.findRoute(req), amount };
      },
    };
    const paid = feePaid(s);
    const budgetLeft = this.h.budgetLeft?.(r);
    return planParts(parts, {
      ...(budgetLeft ? { budgetLeft } : {}),
      source,
      remain,
      maxFee: r.maxFeeAmount > paid ? r.maxFeeAmount - paid : 0n,
      maxParts: Number(r.maxParts),
      activeParts: activeAttempts(s).length,
      selfPay: r.targetPubkey === source,
      stats,
    });
  }

  /** A part arrived: the session succeeds once the fulfilled parts cover the amount. */
  async fulfilled(s: PaymentSession, attemptId: string, preimage: Uint8Array): Promise<void> {
    const attempt = s.attempts.find((a) => a.id === attemptId);
    this.h.forget(attemptId);
    if (attempt?.status !== 'Inflight') return;
    const attempts = s.attempts.map((a) => (a.id === attemptId ? { ...a, status: 'Success' as const } : a));
    let next: PaymentSession = {
      ...s,
      attempts,
      preimage: bytesToHex(preimage),
      lastUpdatedAt: this.h.now(),
    };
    if (!isFinal(s)) {
      next = { ...next, status: mppStatus(next), fee: feePaid(next) };
      if (next.status === 'Success') next = { ...next, failedError: null };
    }
    this.h.save(next);
    this.h.feedback?.success(this.h.sessionRoute(attempt, partAmount(attempt)));
    if (next.status === 'Success' && s.status !== 'Success') {
      this.h.onChange?.({
        PutPreimage: { payment_hash: s.paymentHash, payment_preimage: bytesToHex(preimage) },
      });
    } else if (!isFinal(next) && next.status !== 'Inflight') {
      await this.topUp(next);
    }
  }

  /**
   * A part failed. A failure another route may fix sends the amount again (`topUp`); one it
   * cannot fails the session once no other part is in flight. A session already final still
   * records the part's end, so that the payment hash may be sent again.
   */
  async failed(s: PaymentSession, attemptId: string, failure: TlcFailure): Promise<void> {
    const attempt = s.attempts.find((a) => a.id === attemptId);
    if (attempt?.status !== 'Inflight') return;
    const { reason, retryable } = await this.h.judgeFailure(s, attempt, failure);
    const attempts = s.attempts.map((a) =>
      a.id === attemptId ? { ...a, status: 'Failed' as const, error: reason } : a,
    );
    let next: PaymentSession = { ...s, attempts, lastUpdatedAt: this.h.now() };
    if (isFinal(s)) {
      this.h.save(next);
      return;
    }
    next = { ...next, failedError: reason, fee: feePaid(next) };
    const othersInflight = next.attempts.some((a) => a.status === 'Inflight');
    if (!retryable) {
      this.h.save(
        othersInflight ? next : { ...sessionFailed(next, reason, this.h.now()), lastErrorCode: reason },
      );
      return;
    }
    await this.topUp(next);
  }

  /** After a restart: what the session lacks is sent again (parts in flight keep waiting). */
  async carryOn(s: PaymentSession): Promise<void> {
    await this.topUp(s);
  }

  /**
   * Sends what the session still lacks over new parts, within the try limit and `max_parts`; with
   * neither left (and nothing in flight) the session fails as the reference's does.
   */
  private async topUp(s: PaymentSession): Promise<void> {
    const inflight = s.attempts.some((a) => a.status === 'Inflight');
    if (remainAmount(s) === 0n) {
      this.h.save({ ...s, status: mppStatus(s) });
      return;
    }
    if (!mayAddParts(s)) {
      this.h.save(
        inflight
          ? { ...s, status: 'Inflight' }
          : sessionFailed(s, 'Can not send payment with limited attempts', this.h.now()),
      );
      return;
    }
    let parts: PlannedPart[];
    try {
      parts = this.plan(s);
    } catch (e) {
      this.h.save(sessionFailed(s, (e as Error).message, this.h.now()));
      return;
    }
    let next = s;
    const tlcs: OutgoingTlc[] = [];
    for (const part of parts) {
      const attempt = this.h.prepareAttempt(next, part.route, part.amount);
      next = startAttempt(next, attempt.record, this.h.now());
      tlcs.push(attempt.tlc);
    }
    next = { ...next, status: 'Inflight', fee: feePaid(next) };
    this.h.save(next);
    for (const tlc of tlcs) await this.h.dispatch(s.paymentHash, tlc);
  }
}
