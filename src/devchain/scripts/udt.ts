/**
 * Simple UDT (RFC-0025) and xUDT (RFC-0052) amount conservation. The amount is the first 16 bytes
 * (u128 LE) of each cell's data. Owner mode — an input whose lock hash equals the first 32 bytes
 * of the args — may mint or burn freely; otherwise Σ inputs ≥ Σ outputs.
 * Exit codes as the C scripts: -1 args, -2 encoding, -51 overflow, -52 amount.
 * xUDT extension scripts are not supported here: only flags 0 (or absent) are accepted.
 */
import { le128, type ScriptGroup, type ScriptVerifier, type TxContext } from './context.ts';

const U128_MAX = (1n << 128n) - 1n;

function conserve(tx: TxContext, group: ScriptGroup, owner: string): number {
  if (tx.inputLockHashes.some((h) => h === owner)) return 0;
  let inSum = 0n;
  for (const i of group.inputIndices) {
    const data = tx.inputs[i]?.data;
    if (!data || data.length < 16) return -2;
    inSum += le128(data);
    if (inSum > U128_MAX) return -51;
  }
  let outSum = 0n;
  for (const i of group.outputIndices) {
    const data = tx.outputsData[i];
    if (!data || data.length < 16) return -2;
    outSum += le128(data);
    if (outSum > U128_MAX) return -51;
  }
  return inSum < outSum ? -52 : 0;
}

export const simpleUdt: ScriptVerifier = {
  name: 'simple_udt',
  verify(tx, group) {
    const args = group.script.args;
    if (args.length !== 2 + 64) return -1;
    return conserve(tx, group, args);
  },
};

export const xUdt: ScriptVerifier = {
  name: 'xudt',
  verify(tx, group) {
    const args = group.script.args;
    if (args.length !== 2 + 64 && args.length !== 2 + 72) return -1;
    if (args.length === 2 + 72 && !/^0{8}$/.test(args.slice(66))) return -1;
    return conserve(tx, group, args.slice(0, 66));
  },
};
