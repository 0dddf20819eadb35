/**
 * Simple UDT (RFC-0025) and xUDT (RFC-0052) amount conservation. The amount is the first 16 bytes
 * (u128 LE) of each cell's data. In owner mode the token may be minted or burnt freely; otherwise
 * Σ inputs ≥ Σ outputs. Exit codes as the C scripts (simple_udt.c, xudt_rce.c): -1 args,
 * -2 encoding, -51 overflow, -52 amount, 44 invalid flag.
 *
 * xUDT args are `<owner lock script hash (32)> [<flags u32 LE> <extension data>]`. The low 29 bits
 * of the flags select extension scripts (0 none, 1 a ScriptVec in args, 2 its hash in args with
 * the ScriptVec in the witness); the top three bits choose what owner mode looks at: input locks
 * (on unless 0x20000000), output type scripts (0x40000000), input type scripts (0x80000000).
 * Extension scripts are not run here, so a token that names any is refused (44); nor is the
 * witness `owner_script` ("owner mode without consuming a cell") honoured: such a transaction is
 * checked as a plain transfer, as the C script does when that owner script fails.
 */
import { le128, type ScriptGroup, type ScriptVerifier, type TxContext } from './context.ts';

const U128_MAX = (1n << 128n) - 1n;
const OWNER_BY_INPUT_TYPE = 0x80000000;
const OWNER_BY_OUTPUT_TYPE = 0x40000000;
const OWNER_NOT_BY_INPUT_LOCK = 0x20000000;
const EXTENSION_MASK = 0x1fffffff;
export const XUDT_INVALID_FLAG = 44;

function conserve(tx: TxContext, group: ScriptGroup): number {
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
    if (tx.inputLockHashes.some((h) => h === args)) return 0;
    return conserve(tx, group);
  },
};

/** The xUDT flags (0 when the args hold only the owner hash), or null for too-short args. */
export function xudtFlags(args: string): number | null {
  if (args.length < 2 + 64) return null;
  if (args.length < 2 + 72) return 0;
  const le = args.slice(66, 74);
  return Number.parseInt(le.match(/../g)?.reverse().join('') ?? '0', 16) >>> 0;
}

export const xUdt: ScriptVerifier = {
  name: 'xudt',
  verify(tx, group) {
    const args = group.script.args.toLowerCase();
    const flags = xudtFlags(args);
    if (flags === null) return -1;
    if ((flags & EXTENSION_MASK) !== 0) return XUDT_INVALID_FLAG;
    const owner = args.slice(0, 66);
    const ownerMode =
      ((flags & OWNER_NOT_BY_INPUT_LOCK) === 0 && tx.inputLockHashes.some((h) => h === owner)) ||
      ((flags & OWNER_BY_INPUT_TYPE) !== 0 && tx.inputs.some((c) => c.output.type?.hash() === owner)) ||
      ((flags & OWNER_BY_OUTPUT_TYPE) !== 0 && tx.tx.outputs.some((o) => o.type?.hash() === owner));
    return ownerMode ? 0 : conserve(tx, group);
  },
};
