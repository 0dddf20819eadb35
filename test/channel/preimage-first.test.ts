/**
 * The peer's CommitmentSigned after its RemoveTlcs with preimages waits for the end of the turn
 * and the flush (`channel/preimage-first.ts`); nothing else waits.
 */
import { describe, expect, it } from 'vitest';
import { PreimageFirst } from '../../src/channel/preimage-first.ts';
import type { Tlc } from '../../src/channel/state.ts';
import type { Step } from '../../src/channel/step.ts';

const tlc = (offered: boolean) => ({ id: 0n, offered }) as Tlc;
const step = (...notices: { type: 'preimage' | 'fulfilled' | 'received'; offered: boolean }[]): Step =>
  ({
    ch: {},
    effects: notices.map((n) => ({
      type: 'tlc',
      notice: { type: n.type, tlc: tlc(n.offered), preimage: '0x01' },
    })),
  }) as unknown as Step;

function setup() {
  const log: string[] = [];
  let release!: () => void;
  const p = new PreimageFirst(() => {
    log.push('durable asked');
    return new Promise<void>((r) => {
      release = () => {
        log.push('durable');
        r();
      };
    });
  });
  return { p, log, release: () => release() };
}

describe('preimages out before signing', () => {
  it('a CommitmentSigned after a preimage of ours waits for the end of the turn, then the flush', async () => {
    const { p, log, release } = setup();
    p.stepped('a', step({ type: 'preimage', offered: true }));
    // The RemoveTlc's commit scheduled the group commit that runs its effects (the claim).
    setImmediate(() => log.push('group commit'));
    let done = false;
    const waiting = Promise.resolve(p.before('a', 'CommitmentSigned')).then(() => {
      done = true;
      log.push('signed');
    });
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    release();
    await waiting;
    expect(log).toEqual(['group commit', 'durable asked', 'durable', 'signed']);
    // Once: the next CommitmentSigned does not wait.
    let next = false;
    await Promise.resolve(p.before('a', 'CommitmentSigned')).then(() => {
      next = true;
    });
    expect(next).toBe(true);
    expect(log).toEqual(['group commit', 'durable asked', 'durable', 'signed']);
  });

  it('nothing waits without a preimage of ours, nor for other messages or channels', async () => {
    const { p, log } = setup();
    p.stepped('a', step({ type: 'preimage', offered: false })); // ours given: the payee
    p.stepped('a', step({ type: 'received', offered: false }, { type: 'fulfilled', offered: true }));
    await p.before('a', 'CommitmentSigned');
    p.stepped('b', step({ type: 'preimage', offered: true }));
    await p.before('b', 'RemoveTlc');
    await p.before('c', 'CommitmentSigned');
    expect(log).toEqual([]);
  });
});
