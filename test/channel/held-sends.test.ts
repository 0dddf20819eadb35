/**
 * Held channel messages (`channel/held-sends.ts`): a message that may wait leaves ahead of the
 * next one to the same peer, or when its timer fires; a new session drops it; a failed send at
 * the timer is reported, not thrown.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HeldSends } from '../../src/channel/held-sends.ts';
import type { FiberMessage } from '../../src/p2p/index.ts';

const msg = (n: number): FiberMessage => ({ type: 'TxComplete', raw: new Uint8Array([n]) }) as FiberMessage;
const tag = (m: FiberMessage) => ('raw' in m ? m.raw[0] : -1);

function link() {
  const wire: [string, number][] = [];
  const up = new Set(['p', 'q']);
  return {
    wire,
    up,
    send(pubkey: string, m: FiberMessage) {
      if (!up.has(pubkey)) throw new Error(`peer ${pubkey} is not connected`);
      wire.push([pubkey, tag(m)]);
    },
    isConnected: (pubkey: string) => up.has(pubkey),
  };
}

describe('HeldSends', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends a held message ahead of the next one to the same peer, and only that peer', () => {
    vi.useFakeTimers();
    const l = link();
    const held = new HeldSends(l, () => {}, 100);
    held.hold('p', msg(1));
    held.hold('p', msg(2));
    held.send('q', msg(9));
    expect(l.wire).toEqual([['q', 9]]);
    held.send('p', msg(3));
    expect(l.wire).toEqual([
      ['q', 9],
      ['p', 1],
      ['p', 2],
      ['p', 3],
    ]);
    expect(held.size).toBe(0);
    // Its timer was cleared: nothing goes twice.
    vi.advanceTimersByTime(1000);
    expect(l.wire).toHaveLength(4);
  });

  it('sends what is held when the timer fires, not before', () => {
    vi.useFakeTimers();
    const l = link();
    const held = new HeldSends(l, () => {}, 100);
    held.hold('p', msg(1));
    vi.advanceTimersByTime(99);
    expect(l.wire).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(l.wire).toEqual([['p', 1]]);
  });

  it('drops what was held for a session that ended, and sends nothing to a peer that is gone', () => {
    vi.useFakeTimers();
    const l = link();
    const failures: string[] = [];
    const held = new HeldSends(l, (p, _m, e) => failures.push(`${p}: ${e.message}`), 100);
    held.hold('p', msg(1));
    held.drop('p');
    held.send('p', msg(2));
    expect(l.wire).toEqual([['p', 2]]);
    held.hold('q', msg(3));
    l.up.delete('q');
    vi.advanceTimersByTime(100);
    expect(l.wire).toEqual([['p', 2]]);
    expect(failures).toEqual([]);
    expect(held.size).toBe(0);
  });

  it('reports a send that fails at the timer instead of throwing from it', () => {
    vi.useFakeTimers();
    const failures: string[] = [];
    const held = new HeldSends(
      {
        send: () => {
          throw new Error('socket closed');
        },
        isConnected: () => true,
      },
      (p, m, e) => failures.push(`${p} ${m.type}: ${e.message}`),
      100,
    );
    held.hold('p', msg(1));
    expect(() => vi.advanceTimersByTime(100)).not.toThrow();
    expect(failures).toEqual(['p TxComplete: socket closed']);
  });

  it('clear stops every timer: nothing is sent after the service stopped', () => {
    vi.useFakeTimers();
    const l = link();
    const held = new HeldSends(l, () => {}, 100);
    held.hold('p', msg(1));
    held.hold('q', msg(2));
    held.clear();
    vi.advanceTimersByTime(1000);
    expect(l.wire).toEqual([]);
  });
});
