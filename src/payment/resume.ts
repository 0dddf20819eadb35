/**
 * Resuming the sender's payment sessions after a restart, pure. Each attempt still in flight is
 * judged from what the node persisted: the TLC link (the channel took the TLC), the TLC in the
 * channel's state, and the outcome recorded when the channel removed it. Then:
 * - an attempt whose TLC never reached a channel is failed without having been sent, and the
 *   payment is tried again (or failed) within its try limit;
 * - one whose TLC is in a channel keeps waiting for that TLC's outcome;
 * - one whose outcome was recorded is finished by replaying that outcome;
 * - one whose TLC was in a channel and is gone without a recorded outcome may have been paid:
 *   the payment fails for good, it is never sent again (never pay twice).
 */
import { feePaid, usesMpp } from './mpp.ts';
import type { Attempt, PaymentSession } from './session.ts';

/** The onion packet's session public key (after its version byte): the attempt's fingerprint. */
export function onionKeyOf(packet: Uint8Array): string {
  return Buffer.from(packet.subarray(1, 34)).toString('hex');
}

export type AttemptFate = 'inflight' | 'resolving' | 'neverSent' | 'unknown';

export interface AttemptEvidence {
  /** A persisted link names the attempt's TLC: the channel took it. */
  linked: boolean;
  /** The channel removed the TLC and its outcome was recorded, not yet delivered. */
  outcomeRecorded: boolean;
  /** The TLC (linked, or matching the attempt's onion) is in its channel, or queued to be re-sent. */
  inChannel: boolean;
}

export function attemptFate(e: AttemptEvidence): AttemptFate {
  if (e.outcomeRecorded) return 'resolving';
  if (e.inChannel) return 'inflight';
  return e.linked ? 'unknown' : 'neverSent';
}

/** Why an attempt that never left is failed (as when the first hop refuses the TLC). */
export const NEVER_SENT_ERROR = 'TemporaryChannelFailure';
export const UNKNOWN_OUTCOME_ERROR =
  'TLC outcome unknown after a restart: the channel no longer holds it and no result was recorded';

/**
 * The session after its in-flight attempts were judged: attempts that never left are failed
 * (retryable), one with an unknown outcome fails the session, and a session whose TLCs are all
 * in channels reads Inflight. `changed` says whether it must be saved.
 */
export function reconcileSession(
  s: PaymentSession,
  fateOf: (a: Attempt) => AttemptFate,
  now: number,
): { session: PaymentSession; changed: boolean } {
  let changed = false;
  let lost = false;
  let waiting = false;
  const attempts = s.attempts.map((a) => {
    if (a.status !== 'Inflight') return a;
    const fate = fateOf(a);
    if (fate === 'inflight' || fate === 'resolving') {
      waiting = true;
      return a;
    }
    changed = true;
    if (fate === 'unknown') {
      lost = true;
      return { ...a, status: 'Failed' as const, error: UNKNOWN_OUTCOME_ERROR };
    }
    return { ...a, status: 'Failed' as const, error: NEVER_SENT_ERROR };
  });
  let session: PaymentSession = { ...s, attempts };
  if (lost) {
    session = { ...session, status: 'Failed', failedError: UNKNOWN_OUTCOME_ERROR };
  } else if (changed) {
    session = { ...session, status: waiting ? 'Inflight' : 'Created', failedError: NEVER_SENT_ERROR };
  } else if (waiting && s.status === 'Created') {
    // The channel took the TLC before the node stopped; the session had not said so yet.
    session = { ...session, status: 'Inflight' };
    changed = true;
  }
  if (changed && usesMpp(s.request)) session = { ...session, fee: feePaid(session) };
  return { session: changed ? { ...session, lastUpdatedAt: now } : session, changed };
}

/**
 * What a restarted node finds of a TLC it received (committed in its channel, its removal not
 * started): whether the relay had handled it before the node stopped.
 */
export interface ReceivedEvidence {
  /** An outgoing TLC is linked to it: it was forwarded. */
  forwarded: boolean;
  /** It is held for an invoice (a hold invoice, or an MPP part waiting for the rest). */
  held: boolean;
  /** A trampoline payment session pays onward for it. */
  trampolined: boolean;
  /** The TLC it was forwarded as is in the next channel, but the link was never written. */
  forwardInChannel: boolean;
}

/**
 * - 'handled': the relay took it before the stop; its outcome will come through what it left;
 * - 'relink': forwarded, only the link is missing: written now, never forwarded twice;
 * - 'handleAgain': never handled: handed to the relay as if it had just arrived.
 */
export type ReceivedFate = 'handled' | 'relink' | 'handleAgain';

export function receivedFate(e: ReceivedEvidence): ReceivedFate {
  if (e.forwarded || e.held || e.trampolined) return 'handled';
  return e.forwardInChannel ? 'relink' : 'handleAgain';
}
