/**
 * What a revocation signs: the message of the revocation transaction of a holder's commitment of
 * version `version` (fiber-channel-protocol.md §3.2b), and the keys it is signed under.
 *
 * The message covers the revocation output (the whole cell to the other side), the UDT data and
 * the first 28 bytes of the revoked commitment's lock args (the revocation key hash and the delay).
 * None of them depends on the commitment's TLCs or version, so a revocation builds no commitment:
 * every CommitmentSigned and RevokeAndAck used to build one only to read those 28 bytes.
 */
import { ccc } from '@ckb-ccc/core';
import { hexToBytes } from '../codec/index.ts';
import { channelDeps, totalCapacity } from './commitment.ts';
import { toScript } from './script-data.ts';
import type { Channel, PartyParams } from './state.ts';
import type { MachineEnv } from './step.ts';
import { commitmentTxSize, feeOf, le128, revocationLockPrefix, revocationMessage } from './tx.ts';

const b = (h: string) => hexToBytes(h);

/** The revocation output of holder H's commitments: the whole cell to the other side. */
export function revocationOutput(ch: Channel, holderIsLocal: boolean, env: MachineEnv) {
  const other = holderIsLocal ? (ch.remote as PartyParams) : ch.local;
  const udt = ch.udt ? toScript(ch.udt) : undefined;
  const fee = feeOf(
    ch.commitmentFeeRate,
    commitmentTxSize(channelDeps(ch, env).length, env.commitmentLock, udt),
  );
  return {
    out: ccc.CellOutput.from({
      capacity: totalCapacity(ch) - fee,
      lock: toScript(other.shutdownScript),
      type: udt,
    }),
    data: ch.udt ? le128(ch.localBalance + ch.remoteBalance + pendingSum(ch)) : new Uint8Array(0),
  };
}

function pendingSum(ch: Channel): bigint {
  return ch.tlcs.filter((t) => !t.removal).reduce((s, t) => s + t.amount, 0n);
}

/**
 * The revocation of holder H's commitment `version`: the keys it is signed under (the other
 * side's funding key, then the holder's, as the commitment's lock names them) and its message.
 */
export function revocationToSign(
  ch: Channel,
  holderIsLocal: boolean,
  version: bigint,
  env: MachineEnv,
): { keys: Uint8Array[]; msg: Uint8Array; argsPrefix: Uint8Array } {
  const holder = holderIsLocal ? ch.local : (ch.remote as PartyParams);
  const other = holderIsLocal ? (ch.remote as PartyParams) : ch.local;
  const keys = [b(other.fundingPubkey), b(holder.fundingPubkey)];
  const rv = revocationOutput(ch, holderIsLocal, env);
  const argsPrefix = revocationLockPrefix(keys, ch.delayEpoch);
  return { keys, argsPrefix, msg: revocationMessage(rv.out, rv.data, argsPrefix, version) };
}
