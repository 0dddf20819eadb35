/**
 * The settlement floor: no side of a CKB channel may hold less than a commitment-lock cell
 * occupies, or the other side could never settle first (the lock wants the remainder exact).
 */
import { ccc } from '@ckb-ccc/core';
import { describe, expect, it } from 'vitest';
import type { Channel } from '../../src/channel/state.ts';
import { addTlc } from '../../src/channel/tlc.ts';
import { SIDE_FLOOR } from '../../src/channel/tx.ts';

const CKB = 100_000_000n;

describe('the settlement floor', () => {
  it('is the occupied capacity of a commitment-lock cell with its 57-byte args', () => {
    const cell = ccc.CellOutput.from({
      capacity: 0n,
      lock: { codeHash: `0x${'11'.repeat(32)}`, hashType: 'data2', args: `0x${'22'.repeat(57)}` },
    });
    expect(SIDE_FLOOR).toBe(BigInt(cell.occupiedSize) * CKB);
  });

  it('refuses a TLC that would take our side below it, and allows one that stays above', () => {
    // Only what addTlc reads before any key work: a ready, idle CKB channel.
    const ch = {
      state: 'CHANNEL_READY',
      round: null,
      udt: null,
      localBalance: 40n * CKB,
      local: { reserve: 62n * CKB },
      remote: { maxTlcNumberInFlight: 125n, maxTlcValueInFlight: 1n << 100n },
      tlcs: [],
    } as unknown as Channel;
    const env = { now: () => 0 } as never;
    const cmd = (amount: bigint) => ({
      amount,
      paymentHash: new Uint8Array(32),
      expiry: 10n ** 15n,
      hashAlgorithm: 0,
      onion: new Uint8Array(0),
    });
    // 40 + 62 = 102 CKB: 4 CKB may go, 5 may not.
    expect(() => addTlc(ch, cmd(5n * CKB), env)).toThrow(/below the 9800000000 a settlement cell needs/);
    expect(() => addTlc(ch, cmd(4n * CKB), env)).not.toThrow(/settlement cell/);
  });
});
