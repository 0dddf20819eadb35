/**
 * What a natively verified script sees: the transaction, its resolved inputs, and its script
 * group (the inputs/outputs carrying the same script), like the syscalls a CKB script uses.
 * A verifier returns 0 for success or the exit code the on-chain script would return.
 */
import { ccc } from '@ckb-ccc/core';
import { ckbHash } from '../../crypto/index.ts';
import type { CellCommit } from '../since.ts';
import { txHashOf } from '../txcache.ts';

export interface ResolvedCell {
  outPoint: ccc.OutPoint;
  output: ccc.CellOutput;
  data: Uint8Array;
  /** Where it was committed; absent for a cell created by a transaction still in the mempool. */
  commit?: CellCommit;
}

export interface TxContext {
  tx: ccc.Transaction;
  txHash: Uint8Array;
  inputs: ResolvedCell[];
  outputsData: Uint8Array[];
  witnesses: Uint8Array[];
  /** Lock hashes of the inputs, in order (UDT owner mode). */
  inputLockHashes: ccc.Hex[];
  /** `H(RawTransaction with cell_deps emptied)`, the message Fiber's locks sign. */
  messageWithoutDeps(): Uint8Array;
}

export interface ScriptGroup {
  script: ccc.Script;
  kind: 'lock' | 'type';
  inputIndices: number[];
  outputIndices: number[];
}

export interface ScriptVerifier {
  name: string;
  verify(tx: TxContext, group: ScriptGroup): number;
}

export function makeTxContext(tx: ccc.Transaction, inputs: ResolvedCell[]): TxContext {
  let noDeps: Uint8Array | undefined;
  return {
    tx,
    txHash: ccc.bytesFrom(txHashOf(tx)),
    inputs,
    // Plain copies: ccc may hand out Buffers, whose slice() is a view, not a copy.
    outputsData: tx.outputsData.map((d) => new Uint8Array(ccc.bytesFrom(d))),
    witnesses: tx.witnesses.map((w) => new Uint8Array(ccc.bytesFrom(w))),
    inputLockHashes: inputs.map((c) => c.output.lock.hash()),
    messageWithoutDeps() {
      if (!noDeps) {
        const copy = tx.clone();
        copy.cellDeps = [];
        noDeps = ckbHash(copy.rawToBytes());
      }
      return noDeps;
    },
  };
}

export const EMPTY_WITNESS_ARGS = new Uint8Array([16, 0, 0, 0, 16, 0, 0, 0, 16, 0, 0, 0, 16, 0, 0, 0]);

export function le128(b: Uint8Array, at = 0): bigint {
  let v = 0n;
  for (let i = 15; i >= 0; i--) v = (v << 8n) | BigInt(b[at + i] as number);
  return v;
}

export function le64(b: Uint8Array, at = 0): bigint {
  let v = 0n;
  for (let i = 7; i >= 0; i--) v = (v << 8n) | BigInt(b[at + i] as number);
  return v;
}

export function u64le(v: bigint): Uint8Array {
  const b = new Uint8Array(8);
  let x = v;
  for (let i = 0; i < 8; i++) {
    b[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return b;
}

export interface WitnessArgsLayout {
  /** Byte range of the lock field's content, if present. */
  lock?: [number, number];
  inputType?: [number, number];
  outputType?: [number, number];
}

/**
 * Parses a molecule WitnessArgs strictly (exactly three fields, consistent offsets), returning
 * where each present field's bytes are; null when malformed.
 */
export function parseWitnessArgs(w: Uint8Array): WitnessArgsLayout | null {
  if (w.length < 16) return null;
  const dv = new DataView(w.buffer, w.byteOffset, w.byteLength);
  const total = dv.getUint32(0, true);
  const first = dv.getUint32(4, true);
  if (total !== w.length || first !== 16) return null;
  const offs = [first, dv.getUint32(8, true), dv.getUint32(12, true), total];
  const out: WitnessArgsLayout = {};
  const names = ['lock', 'inputType', 'outputType'] as const;
  for (let i = 0; i < 3; i++) {
    const start = offs[i] as number;
    const end = offs[i + 1] as number;
    if (end < start || end > total) return null;
    if (end === start) continue;
    if (end - start < 4) return null;
    const len = dv.getUint32(start, true);
    if (len + 4 !== end - start) return null;
    out[names[i] as (typeof names)[number]] = [start + 4, end];
  }
  return out;
}
