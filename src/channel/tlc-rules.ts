/**
 * The rules of single TLC updates that both channel models apply, pure: an AddTlc command checked
 * against our balance and the peer's limits, the peer's AddTlc against ours, a removal of either
 * side checked and applied to the channel. The round model (`tlc.ts`) and pipelined updates
 * (`pipelined.ts`) differ in what commits an update, not in these.
 */
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { ckbHash, sha256 } from '../crypto/index.ts';
import { ChannelError } from './errors.ts';
import type { Channel, PartyParams, Tlc } from './state.ts';
import type { MachineEnv, Step } from './step.ts';
import { SIDE_FLOOR } from './tx.ts';
import type { AddTlc, ChannelMessage, RemoveTlc } from './wire.ts';

const h = (x: Uint8Array) => bytesToHex(x);
const b = (x: string) => hexToBytes(x);

export interface AddTlcCommand {
  amount: bigint;
  paymentHash: Uint8Array;
  expiry: bigint;
  hashAlgorithm: number;
  onion: Uint8Array;
}

export type RemoveReason = { preimage: Uint8Array } | { error: Uint8Array };

export function hashPreimage(preimage: Uint8Array, algorithm: number): Uint8Array {
  return algorithm === 1 ? sha256(preimage) : ckbHash(preimage);
}

/** fnn's answers to a refused AddTlc command: the names of the TLC error codes they map to. */
export const ADD_TLC_ERRORS = {
  amountTooLow: 'AmountBelowMinimum',
  limit: 'TemporaryChannelFailure',
  expiryTooSoon: 'ExpiryTooSoon',
} as const;

/**
 * Our AddTlc command against the channel: a positive amount within `spendable` (our balance; in
 * a pipelined channel what every commitment to come leaves us) above our settlement floor, a
 * known hash algorithm, the peer's in-flight limits (announced TLCs count: a batch is bounded
 * like TLCs offered one by one) and an expiry still ahead. Both models (`pipelined.ts`).
 */
export function checkOurAdd(ch0: Channel, c: AddTlcCommand, spendable: bigint, env: MachineEnv): void {
  if (c.amount <= 0n) throw new ChannelError('TlcAmountTooLow', ADD_TLC_ERRORS.amountTooLow);
  if (c.amount > spendable) throw new ChannelError('TlcLimitExceeded', ADD_TLC_ERRORS.limit);
  if (!ch0.udt && spendable - c.amount + ch0.local.reserve < SIDE_FLOOR)
    throw new ChannelError('TlcLimitExceeded', ADD_TLC_ERRORS.limit);
  if (c.hashAlgorithm !== 0 && c.hashAlgorithm !== 1)
    throw new ChannelError('InvalidParameter', 'Invalid parameter: hash algorithm');
  const r = ch0.remote as PartyParams;
  const inFlight = ch0.tlcs.filter((t) => t.offered && !t.removal);
  if (BigInt(inFlight.length) >= r.maxTlcNumberInFlight)
    throw new ChannelError('TlcLimitExceeded', ADD_TLC_ERRORS.limit);
  const value = inFlight.reduce((s, t) => s + t.amount, 0n) + c.amount;
  if (value > r.maxTlcValueInFlight) throw new ChannelError('TlcLimitExceeded', ADD_TLC_ERRORS.limit);
  if (c.expiry <= BigInt(env.now())) throw new ChannelError('TlcExpiryTooSoon', ADD_TLC_ERRORS.expiryTooSoon);
}

export function withRemoval(ch: Channel, tlc: Tlc, removal: NonNullable<Tlc['removal']>): Channel {
  return { ...ch, tlcs: ch.tlcs.map((t) => (t === tlc ? { ...t, removal } : t)) };
}

/**
 * Our removal of a TLC the peer offered, committed on both sides: checked (the preimage against
 * the hash), applied to the channel (the amount to us for a preimage, back to the peer for a
 * failure), and its RemoveTlc. Both models (`pipelined.ts`).
 */
export function ownRemoval(
  ch0: Channel,
  id: bigint,
  reason: RemoveReason,
): { ch: Channel; msg: ChannelMessage } {
  const tlc = ch0.tlcs.find((t) => !t.offered && t.id === id);
  if (!tlc || tlc.removal || tlc.added !== 'committed')
    throw new ChannelError('TlcNotFound', `Invalid parameter: TLC ${id} not found or not removable`, {
      tlcId: id,
    });
  let ch: Channel;
  if ('preimage' in reason) {
    if (h(hashPreimage(reason.preimage, tlc.hashAlgorithm)) !== tlc.paymentHash)
      throw new ChannelError(
        'PreimageMismatch',
        'Invalid parameter: the preimage does not match the payment hash',
      );
    ch = withRemoval(ch0, tlc, { preimage: h(reason.preimage), state: 'announced' });
    ch = { ...ch, localBalance: ch.localBalance + tlc.amount };
  } else {
    ch = withRemoval(ch0, tlc, { error: h(reason.error), state: 'announced' });
    ch = { ...ch, remoteBalance: ch.remoteBalance + tlc.amount };
  }
  const msg: ChannelMessage = {
    type: 'RemoveTlc',
    value: {
      channelId: b(ch.id),
      tlcId: id,
      reason: 'preimage' in reason ? { fulfill: reason.preimage } : { fail: reason.error },
    },
  };
  return { ch, msg };
}

/**
 * The peer's AddTlc, checked against the channel as we hold it: the next id, an amount it has,
 * a known hash algorithm, and the offerer's own checks enforced on it: our in-flight limits and
 * its settlement floor (a side below the floor could never be settled around, and that would
 * hold our share too). Both models (`pipelined.ts`).
 */
export function checkPeerAdd(ch0: Channel, m: AddTlc): void {
  if (m.tlcId !== ch0.nextTlcId.received)
    throw new ChannelError('InvalidMessage', `AddTlc: expected TLC id ${ch0.nextTlcId.received}`);
  if (m.amount <= 0n || m.amount > ch0.remoteBalance)
    throw new ChannelError('InvalidMessage', 'AddTlc: amount out of range');
  if (m.hashAlgorithm > 1) throw new ChannelError('InvalidMessage', 'AddTlc: unknown hash algorithm');
  const inFlight = ch0.tlcs.filter((t) => !t.offered && !t.removal);
  if (BigInt(inFlight.length) >= ch0.local.maxTlcNumberInFlight)
    throw new ChannelError('InvalidMessage', 'AddTlc: too many TLCs');
  if (inFlight.reduce((sum, t) => sum + t.amount, 0n) + m.amount > ch0.local.maxTlcValueInFlight)
    throw new ChannelError('InvalidMessage', 'AddTlc: TLC value in flight exceeds our limit');
  const theirReserve = (ch0.remote as PartyParams).reserve;
  if (!ch0.udt && ch0.remoteBalance - m.amount + theirReserve < SIDE_FLOOR)
    throw new ChannelError(
      'InvalidMessage',
      'AddTlc: the TLC would take the peer below the settlement floor',
    );
}

/**
 * The peer's removal of a TLC we offered, committed on both sides: checked, applied (the amount
 * to the peer for a preimage, whose 'preimage' notice goes at once; back to us for a failure).
 * Both models (`pipelined.ts`).
 */
export function peerRemoval(ch0: Channel, m: RemoveTlc): Step {
  const tlc = ch0.tlcs.find((t) => t.offered && t.id === m.tlcId);
  if (!tlc || tlc.removal || tlc.added !== 'committed')
    throw new ChannelError('InvalidMessage', `RemoveTlc: no TLC ${m.tlcId} to remove`);
  if ('fulfill' in m.reason) {
    if (h(hashPreimage(m.reason.fulfill, tlc.hashAlgorithm)) !== tlc.paymentHash)
      throw new ChannelError('InvalidMessage', 'RemoveTlc: the preimage does not match');
    const preimage = h(m.reason.fulfill);
    const ch = withRemoval(ch0, tlc, { preimage, state: 'announced' });
    return {
      ch: { ...ch, remoteBalance: ch.remoteBalance + tlc.amount },
      effects: [{ type: 'tlc', notice: { type: 'preimage', tlc, preimage } }],
    };
  }
  const ch = withRemoval(ch0, tlc, { error: h(m.reason.fail), state: 'announced' });
  return { ch: { ...ch, localBalance: ch.localBalance + tlc.amount }, effects: [] };
}
