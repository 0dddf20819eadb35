/**
 * TLC commands waiting for their channel's round: a bounded wait ends with the reference's
 * "waiting TLC ACK" refusal; an unbounded one (a removal behind a round a reconnecting peer has
 * yet to answer) waits until the round ends and the channel takes the queue. A channel queues no
 * more AddTlc than its peer takes in flight.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChannelError } from '../../src/channel/errors.ts';
import type { StagedChannelStore } from '../../src/channel/staged-store.ts';
import type { Channel } from '../../src/channel/state.ts';
import type { MachineEnv } from '../../src/channel/step.ts';
import { type TlcCommand, WAITING_ACK } from '../../src/channel/tlc.ts';
import { TlcCommands } from '../../src/channel/tlc-commands.ts';
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

describe('TLC commands behind a busy round', () => {
  it('queue no more AddTlc than the peer takes in flight; the next is refused at once, removals still queue', async () => {
    const ch = {
      tempId: 'ch',
      state: 'CHANNEL_READY',
      round: { initiator: 'local' },
      remote: { maxTlcNumberInFlight: 3n },
    } as unknown as Channel;
    const commands = new TlcCommands({
      store: { get: () => ch } as unknown as StagedChannelStore,
      env: {} as MachineEnv,
      enqueue: (_key, fn) => Promise.resolve().then(fn),
      commit: () => Promise.resolve(),
    });
    const add: TlcCommand = {
      type: 'addTlc',
      cmd: {
        amount: 1n,
        paymentHash: new Uint8Array(32),
        expiry: 1n,
        hashAlgorithm: 0,
        onion: new Uint8Array(0),
      },
    };
    const settled: string[] = [];
    const track = (p: Promise<unknown>, name: string) =>
      p.then(
        () => settled.push(`${name}: ok`),
        (e: ChannelError) => settled.push(`${name}: ${e.code} ${e.message}`),
      );
    const queued = [1, 2, 3].map((i) => track(commands.tlcCommand('ch', add), `add ${i}`));
    await track(commands.tlcCommand('ch', add), 'add 4');
    const removal = track(
      commands.tlcCommand('ch', { type: 'removeTlc', id: 0n, reason: { preimage: new Uint8Array(32) } }),
      'remove',
    );
    await Promise.resolve();
    expect(settled).toEqual(['add 4: TlcLimitExceeded TemporaryChannelFailure']);
    // The node stops: whatever waited is refused as a busy channel is.
    commands.stop();
    await Promise.all([...queued, removal]);
    expect(settled.slice(1).sort()).toEqual(
      ['add 1', 'add 2', 'add 3', 'remove'].map((n) => `${n}: WaitingTlcAck ${WAITING_ACK}`),
    );
  });
});
