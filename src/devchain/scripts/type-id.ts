/**
 * CKB's built-in type id: a group has at most one input and one output; a newly created type id
 * must have args = blake2b(first input of the tx ‖ u64le(output index)).
 */
import { ccc } from '@ckb-ccc/core';
import { bytesToHex } from '../../codec/index.ts';
import { ckbHash } from '../../crypto/index.ts';
import { type ScriptVerifier, u64le } from './context.ts';

export const typeId: ScriptVerifier = {
  name: 'type_id',
  verify(tx, group) {
    if (group.script.args.length !== 2 + 64) return -1;
    if (group.inputIndices.length > 1 || group.outputIndices.length > 1) return -2;
    if (group.inputIndices.length === 1) return 0;
    const first = tx.tx.inputs[0];
    if (!first) return -3;
    const expected = bytesToHex(ckbHash(first.toBytes(), u64le(BigInt(group.outputIndices[0] as number))));
    return expected === ccc.hexFrom(group.script.args) ? 0 : -3;
  },
};
