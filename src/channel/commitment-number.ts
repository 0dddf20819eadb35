/**
 * The commitment number a commitment transaction carries: big-endian at bytes 28..36 of its
 * commitment lock's args (§5.2: pubkey hash ‖ delay since ‖ be64 version ‖ …). Read from the
 * transaction itself — as the reference files its commitments for `submit_commitment_transaction`
 * — so that it is the number of exactly the bytes that would be broadcast.
 */
import { ccc } from '@ckb-ccc/core';

export function commitmentNumberOf(commitmentTx: ccc.HexLike): bigint {
  const lock = ccc.Transaction.fromBytes(commitmentTx).outputs[0]?.lock;
  if (!lock) throw new Error('not a commitment transaction: no output');
  const args = ccc.bytesFrom(lock.args);
  if (args.length < 36) throw new Error('not a commitment transaction: lock args too short');
  return ccc.numBeFromBytes(args.subarray(28, 36));
}
