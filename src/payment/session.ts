/**
 * A payment session: one payment hash, its status (Created → Inflight → Success | Failed), its
 * attempts and the fee paid. Transitions are pure functions returning the next session; the
 * service persists each one before acting on it.
 */
import type { PaymentRequest } from './request.ts';

export type PaymentStatus = 'Created' | 'Inflight' | 'Success' | 'Failed';

export type AttemptStatus = 'Inflight' | 'Success' | 'Failed';

export interface Attempt {
  id: string;
  /** 1-based attempt number within the session. */
  n: number;
  status: AttemptStatus;
  /** The route: per hop, the node receiving and the channel used (OutPointHex). */
  route: { target: string; channelOutpoint: string; amountReceived: bigint }[];
  fee: bigint;
  /** Per path node, to decode an error packet (hex). */
  sharedSecrets: string[];
  error: string | null;
  /**
   * The onion packet's session public key (hex): finds the attempt's TLC in its channel after a
   * restart cut the node between adding the TLC and linking it.
   */
  onionKey?: string;
}

export interface PaymentSession {
  paymentHash: string;
  status: PaymentStatus;
  createdAt: number;
  lastUpdatedAt: number;
  failedError: string | null;
  /** Fee of the successful attempt, or of the latest one while in flight. */
  fee: bigint;
  request: PaymentRequest;
  attempts: Attempt[];
  tryLimit: number;
  preimage: string | null;
  /**
   * The reference's `last_error_code`: the TlcErrorCode of the failure that ended the session for
   * good (one no other route could fix). Retryable failures never set it; a trampoline fails its
   * incoming TLC with it (see `trampolineFailureCode`).
   */
  lastErrorCode?: string | null;
}

/** Reference: 5 tries for a single-path payment. */
export const SINGLE_PATH_TRY_LIMIT = 5;

export function newSession(request: PaymentRequest, now: number): PaymentSession {
  return {
    paymentHash: request.paymentHash,
    status: 'Created',
    createdAt: now,
    lastUpdatedAt: now,
    failedError: null,
    fee: 0n,
    request,
    attempts: [],
    tryLimit: SINGLE_PATH_TRY_LIMIT,
    preimage: request.preimage,
  };
}

export function isFinal(s: PaymentSession): boolean {
  return s.status === 'Success' || s.status === 'Failed';
}

export function startAttempt(
  s: PaymentSession,
  a: Omit<Attempt, 'n' | 'status' | 'error'>,
  now: number,
): PaymentSession {
  const attempt: Attempt = { ...a, n: s.attempts.length + 1, status: 'Inflight', error: null };
  return { ...s, status: 'Inflight', fee: a.fee, attempts: [...s.attempts, attempt], lastUpdatedAt: now };
}

export function attemptSucceeded(
  s: PaymentSession,
  attemptId: string,
  preimage: string,
  now: number,
): PaymentSession {
  const attempts = s.attempts.map((a) => (a.id === attemptId ? { ...a, status: 'Success' as const } : a));
  const done = attempts.find((a) => a.id === attemptId);
  return {
    ...s,
    status: 'Success',
    attempts,
    preimage,
    fee: done?.fee ?? s.fee,
    failedError: null,
    lastUpdatedAt: now,
  };
}

/** Marks an attempt failed; the session stays open (for a retry) unless `final`. */
export function attemptFailed(
  s: PaymentSession,
  attemptId: string,
  error: string,
  final: boolean,
  now: number,
): PaymentSession {
  const attempts = s.attempts.map((a) =>
    a.id === attemptId ? { ...a, status: 'Failed' as const, error } : a,
  );
  return final
    ? { ...s, status: 'Failed', attempts, failedError: error, lastErrorCode: error, lastUpdatedAt: now }
    : { ...s, status: 'Created', attempts, failedError: error, lastUpdatedAt: now };
}

export function sessionFailed(s: PaymentSession, error: string, now: number): PaymentSession {
  return { ...s, status: 'Failed', failedError: error, lastUpdatedAt: now };
}

export function inflightAttempts(s: PaymentSession): Attempt[] {
  return s.attempts.filter((a) => a.status === 'Inflight');
}
