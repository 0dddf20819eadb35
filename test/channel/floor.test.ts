/**
 * The settlement floor: no side of a CKB channel may hold less than a commitment-lock cell
 * occupies, or the other side could never settle first (the lock wants the remainder exact).
 */
import { ccc } from '@ckb-ccc/core';
import { describe, expect, it } from 'vitest';
import type { Channel } from '../../src/channel/state.ts';
import { addTlc, onAddTlc } from '../../src/channel/tlc.ts';
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
    // 40 + 62 = 102 CKB: 4 CKB may go, 5 may not (fnn's answer to an AddTlc over the balance).
    expect(() => addTlc(ch, cmd(5n * CKB), env)).toThrow(/^TemporaryChannelFailure$/);
    expect(() => addTlc(ch, cmd(4n * CKB), env)).not.toThrow(/TemporaryChannelFailure/);
    // Beyond the balance itself, no TLC, a zero amount and a past expiry: fnn's TlcErr names.
    expect(() => addTlc(ch, cmd(41n * CKB), env)).toThrow(/^TemporaryChannelFailure$/);
    expect(() => addTlc(ch, cmd(0n), env)).toThrow(/^AmountBelowMinimum$/);
    expect(() => addTlc(ch, { ...cmd(1n), expiry: 0n }, env)).toThrow(/^ExpiryTooSoon$/);
  });

  it('refuses, from the peer, a TLC over our value-in-flight limit or below its floor', () => {
    // Only what onAddTlc reads before it takes the TLC: a ready CKB channel, no round.
    const ch = {
      state: 'CHANNEL_READY',
      flags: [],
      round: null,
      udt: null,
      remoteBalance: 40n * CKB,
      remote: { reserve: 62n * CKB },
      local: { maxTlcNumberInFlight: 125n, maxTlcValueInFlight: 10n * CKB },
      nextTlcId: { offered: 0n, received: 0n },
      tlcs: [],
    } as unknown as Channel;
    const env = { now: () => 0 } as never;
    const add = (amount: bigint) => ({
      channelId: new Uint8Array(32),
      tlcId: 0n,
      amount,
      paymentHash: new Uint8Array(32),
      expiry: 10n ** 15n,
      hashAlgorithm: 0,
      onionPacket: new Uint8Array(0),
    });
    expect(() => onAddTlc(ch, add(5n * CKB), env)).toThrow('AddTlc: the TLC would take the peer below');
    expect(onAddTlc(ch, add(4n * CKB), env).ch.remoteBalance).toBe(36n * CKB);
    const roomy = { ...ch, remoteBalance: 400n * CKB } as Channel;
    expect(() => onAddTlc(roomy, add(11n * CKB), env)).toThrow(
      'AddTlc: TLC value in flight exceeds our limit',
    );
    expect(onAddTlc(roomy, add(10n * CKB), env).ch.tlcs).toHaveLength(1);
  });
});
