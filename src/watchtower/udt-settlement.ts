/**
 * Settling a UDT commitment cell (`fiber-channel-protocol.md` §5.5–5.6): the settlement script's
 * amounts are tokens, and the contract checks the continuation (output 0) as a UDT cell holding
 * what is left — with the input's whole capacity after a TLC unlock, any capacity after a party
 * unlock. What we take leaves as a UDT cell of its own at our script. Capacity is not the
 * settler's to take from the cell after a TLC unlock, so the wallet pays for that output; after a
 * party unlock the continuation shrinks to its occupied capacity and the rest pays for ours.
 */
import { ccc } from '@ckb-ccc/core';
import { CKB, le128 } from '../channel/index.ts';
import type { SettleAction } from './settle.ts';

/** A UDT commitment cell's token amount, or null when its data is too short to hold one. */
export function udtCellOf(output: ccc.CellOutput, data: Uint8Array): { amount: bigint } | null {
  if (!output.type || data.length < 16) return null;
  return { amount: ccc.numLeFromBytes(data.subarray(0, 16)) };
}

export interface UdtSettlementOutput {
  lock: ccc.Script;
  type: ccc.Script;
  /** Its capacity in the final tx. */
  capacity: bigint;
  /** The part of it the wallet pays (the cell pays the rest). */
  fromWallet: bigint;
}

/** Capacity a UDT cell with this lock needs (16 bytes of amount data). */
function occupied(lock: ccc.ScriptLike, type: ccc.ScriptLike): bigint {
  return BigInt(ccc.CellOutput.from({ capacity: 0n, lock, type }).occupiedSize + 16) * CKB;
}

/**
 * The outputs of a settlement of a UDT commitment cell: the continuation (when something stays
 * locked) then ours, with their data. `action.amount` and the continuation's `capacity` are
 * token amounts here (`nextSettlement` is given the cell's tokens).
 */
export function udtSettlementOutputs(a: { cell: ccc.CellOutput; action: SettleAction; to: ccc.Script }): {
  outputs: UdtSettlementOutput[];
  data: ccc.Hex[];
} {
  const type = a.cell.type;
  if (!type) throw new Error('not a UDT cell');
  const input = a.cell.capacity;
  const party = a.action.t >= 0xfe;
  const outputs: UdtSettlementOutput[] = [];
  const data: ccc.Hex[] = [];
  let kept = 0n;
  const cont = a.action.continuation;
  if (cont) {
    const lock = ccc.Script.from({ ...a.cell.lock, args: cont.args });
    kept = party ? occupied(lock, type) : input;
    if (kept > input) throw new Error(`the continuation needs ${kept} shannons, the cell holds ${input}`);
    outputs.push({ lock, type, capacity: kept, fromWallet: 0n });
    data.push(ccc.hexFrom(le128(cont.capacity)));
  }
  const freed = input - kept;
  const need = occupied(a.to, type);
  const capacity = freed >= need ? freed : need;
  outputs.push({ lock: a.to, type, capacity, fromWallet: capacity - freed });
  data.push(ccc.hexFrom(le128(a.action.amount)));
  return { outputs, data };
}
