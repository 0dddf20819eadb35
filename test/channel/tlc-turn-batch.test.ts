/**
 * On an idle channel the TLC commands of one turn of the event loop share one round: the round
 * starts at the end of the turn, not at the first command (at 64 in flight a payee's removal
 * round carried 1 update and the other 63 waited a whole round behind it). A command with
 * `waitMs: 0` still runs at once.
 */
import { describe, expect, it, vi } from 'vitest';
import type { StagedChannelStore } from '../../src/channel/staged-store.ts';
import type { Channel } from '../../src/channel/state.ts';
import type { Event, MachineEnv, Step } from '../../src/channel/step.ts';
import type { TlcCommand } from '../../src/channel/tlc.ts';

/** The batches the machine was given, as their command counts. */
const batches: number[] = [];

vi.mock('../../src/channel/machine.ts', () => ({
  step: (ch: Channel, ev: Event) => {
    if (ev.type !== 'tlcBatch') throw new Error(`unexpected ${ev.type}`);
    batches.push(ev.cmds.length);
    return {
      ch,
      effects: [],
      outcomes: ev.cmds.map((_, i) => ({ ok: true, tlcId: BigInt(i) })),
    } as unknown as Step;
  },
}));

const { TlcCommands } = await import('../../src/channel/tlc-commands.ts');

const removal = (id: bigint): TlcCommand => ({
  type: 'removeTlc',
  id,
  reason: { preimage: new Uint8Array(32) },
});

/**
 * The commands of an idle, ready channel (in the store while `present` says so); the batches seen
 * so far cleared.
 */
function onIdleChannel(present = () => true) {
  batches.length = 0;
  const ch = {
    tempId: 'ch',
    state: 'CHANNEL_READY',
    remote: { maxTlcNumberInFlight: 100n },
  } as unknown as Channel;
  return new TlcCommands({
    store: { get: () => (present() ? ch : undefined) } as unknown as StagedChannelStore,
    env: {} as MachineEnv,
    enqueue: (_key, fn) => Promise.resolve().then(fn),
    commit: (_s, then) => {
      then?.();
      return Promise.resolve();
    },
  });
}

const nextTurn = () => new Promise((r) => setImmediate(r));

describe('TLC commands on an idle channel', () => {
  it('share one round when they come in the same turn, and start it at the end of that turn', async () => {
    const commands = onIdleChannel();
    const first = [1n, 2n, 3n].map((id) => commands.tlcCommand('ch', removal(id)));
    // Every command of the turn is in the channel's queue before any round starts.
    await Promise.resolve();
    await Promise.resolve();
    expect(batches).toEqual([]);
    await Promise.all(first);
    expect(batches).toEqual([3]);
    await nextTurn();
    await commands.tlcCommand('ch', removal(4n));
    expect(batches).toEqual([3, 1]);
  });

  it('are refused as on a closed channel when the channel is gone by the end of the turn', async () => {
    let present = true;
    const commands = onIdleChannel(() => present);
    const p = commands.tlcCommand('ch', removal(1n));
    await Promise.resolve();
    await Promise.resolve();
    present = false;
    await expect(p).rejects.toMatchObject({ code: 'ChannelClosed' });
    expect(batches).toEqual([]);
  });

  it('run before the end of the turn when a flush is about to start and the actor is idle', async () => {
    const commands = onIdleChannel();
    const both = [1n, 2n].map((id) => commands.tlcCommand('ch', removal(id)));
    await Promise.resolve();
    await Promise.resolve();
    // The channel's actor is busy: nothing runs yet.
    commands.runScheduled(() => false);
    expect(batches).toEqual([]);
    commands.runScheduled(() => true);
    expect(batches).toEqual([2]);
    await Promise.all(both);
    // The end of the turn finds nothing left to send.
    await nextTurn();
    expect(batches).toEqual([2]);
  });

  it('run a command that must not wait (waitMs 0) at once', async () => {
    const commands = onIdleChannel();
    const p = commands.tlcCommand('ch', removal(1n), 0);
    await Promise.resolve();
    await Promise.resolve();
    expect(batches).toEqual([1]);
    await p;
  });
});
