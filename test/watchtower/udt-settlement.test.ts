/**
 * The outputs of a UDT commitment cell's settlement (`src/watchtower/udt-settlement.ts`): tokens
 * split between the continuation and us, the continuation's capacity as the contract requires
 * (the input's after a TLC unlock, its occupied capacity after a party unlock), and the wallet
 * paying only what the cell cannot.
 */
import { ccc } from '@ckb-ccc/core';
import { describe, expect, it } from 'vitest';
import type { SettleAction } from '../../src/watchtower/settle.ts';
import { udtCellOf, udtSettlementOutputs } from '../../src/watchtower/udt-settlement.ts';

const CKB = 100_000_000n;
const udt = ccc.Script.from({
  codeHash: `0x${'11'.repeat(32)}`,
  hashType: 'data2',
  args: `0x${'22'.repeat(32)}`,
});
const commitmentLock = {
  codeHash: `0x${'33'.repeat(32)}`,
  hashType: 'type' as const,
  args: `0x${'00'.repeat(57)}`,
};
const to = ccc.Script.from({
  codeHash: `0x${'44'.repeat(32)}`,
  hashType: 'type',
  args: `0x${'55'.repeat(20)}`,
});
const cell = (capacity: bigint) => ccc.CellOutput.from({ capacity, lock: commitmentLock, type: udt });
const tokens = (h: ccc.Hex) => ccc.numLeFromBytes(ccc.bytesFrom(h));

function action(t: number, amount: bigint, left: bigint | null): SettleAction {
  return {
    t,
    key: new Uint8Array(32).fill(1),
    preimage: null,
    since: 0n,
    feeSince: 0n,
    amount,
    continuation: left === null ? null : { capacity: left, args: new Uint8Array(57).fill(9) },
  };
}

// Occupied: continuation 8 + (32+1+57) + (32+1+32) + 16 = 179 CKB; ours 8 + (32+1+20) + 65 + 16 = 142.
describe('UDT settlement outputs', () => {
  it('a TLC unlock keeps the whole capacity in the continuation; the wallet pays for ours', () => {
    const p = udtSettlementOutputs({ cell: cell(285n * CKB), action: action(0, 50n, 550n), to });
    expect(p.outputs.map((o) => [o.capacity, o.fromWallet])).toEqual([
      [285n * CKB, 0n],
      [142n * CKB, 142n * CKB],
    ]);
    expect(p.data.map(tokens)).toEqual([550n, 50n]);
    expect(p.outputs.every((o) => o.type.eq(udt))).toBe(true);
    expect(p.outputs[0]?.lock.args).toBe(ccc.hexFrom(new Uint8Array(57).fill(9)));
    expect(p.outputs[1]?.lock.eq(to)).toBe(true);
  });

  it('a party unlock shrinks the continuation to its occupied capacity; the rest pays for ours', () => {
    const p = udtSettlementOutputs({ cell: cell(400n * CKB), action: action(0xfe, 450n, 100n), to });
    expect(p.outputs.map((o) => [o.capacity, o.fromWallet])).toEqual([
      [179n * CKB, 0n],
      [221n * CKB, 0n],
    ]);
    // Less freed than our cell needs: the wallet adds the difference only.
    const q = udtSettlementOutputs({ cell: cell(285n * CKB), action: action(0xff, 100n, 450n), to });
    expect(q.outputs.map((o) => [o.capacity, o.fromWallet])).toEqual([
      [179n * CKB, 0n],
      [142n * CKB, 36n * CKB],
    ]);
  });

  it('the last unlock takes the whole cell: one output, all its tokens and capacity', () => {
    const p = udtSettlementOutputs({ cell: cell(285n * CKB), action: action(0xfe, 450n, null), to });
    expect(p.outputs.map((o) => [o.capacity, o.fromWallet])).toEqual([[285n * CKB, 0n]]);
    expect(p.data.map(tokens)).toEqual([450n]);
  });

  it('a continuation the cell cannot hold is refused; a cell without tokens is not one', () => {
    expect(() => udtSettlementOutputs({ cell: cell(100n * CKB), action: action(0xfe, 1n, 1n), to })).toThrow(
      /continuation needs/,
    );
    expect(udtCellOf(cell(285n * CKB), new Uint8Array(15))).toBeNull();
    expect(udtCellOf(cell(285n * CKB), ccc.numLeToBytes(7n, 16))).toEqual({ amount: 7n });
  });
});
