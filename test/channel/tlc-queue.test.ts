/**
 * TLC commands waiting for their channel's round: a bounded wait ends with the reference's
 * "waiting TLC ACK" refusal; an unbounded one (a removal behind a round a reconnecting peer has
 * yet to answer) waits until the round ends and the channel takes the queue.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WAITING_ACK } from '../../src/channel/tlc.ts';
import { TlcQueue, type WaitingTlc } from '../../src/channel/tlc-queue.ts';

function waiting(): WaitingTlc & { result: string } {
  const w = {
    cmd: { type: 'removeTlc', id: 1n, reason: { preimage: new Uint8Array(32) } },
    result: 'waiting',
    resolve: () => {
      w.result = 'resolved';
    },
    reject: (e: Error) => {
      w.result = e.message;
    },
  } as WaitingTlc & { result: string };
  return w;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('TLC queue', () => {
  it('refuses a bounded wait when the round outlasts it; an unbounded one stays queued', () => {
    vi.useFakeTimers();
    const q = new TlcQueue();
    const bounded = waiting();
    const unbounded = waiting();
    q.add('ch', bounded, 10_000);
    q.add('ch', unbounded, Number.POSITIVE_INFINITY);
    vi.advanceTimersByTime(3_600_000);
    expect(bounded.result).toBe(WAITING_ACK);
    expect(unbounded.result).toBe('waiting');
    expect(q.take('ch')).toEqual([unbounded]);
  });
});
