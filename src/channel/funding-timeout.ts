/**
 * `funding_timeout_seconds` (the reference's one day): an opening that has not reached
 * CHANNEL_READY that long after it was created is aborted — but only while aborting is safe,
 * i.e. before any funding signature of ours has left the node (`abortable`). After that the
 * funding tx may still land on chain, and the channel must stay to receive it (our signed
 * commitment is what gets the funds back). External fundings have their own, shorter deadline.
 */
import { isAwaitingExternalFunding } from './external-funding.ts';
import { abortable } from './reestablish.ts';
import type { Channel } from './state.ts';

export const DEFAULT_FUNDING_TIMEOUT_SECONDS = 86_400;

export function fundingTimeoutReason(seconds: number): string {
  return `funding timed out: the channel was not ready ${seconds} s after it was created`;
}

export function fundingTimedOut(ch: Channel, now: number, timeoutMs: number): boolean {
  if (!abortable(ch) || isAwaitingExternalFunding(ch)) return false;
  return now - ch.createdAt >= timeoutMs;
}
