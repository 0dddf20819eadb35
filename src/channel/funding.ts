/**
 * The funding collaboration after AcceptChannel: TxUpdate ×2, TxComplete ×2, the commitments'
 * signatures, TxSignatures, confirmations and ChannelReady (`fiber-channel-protocol.md` §1).
 */
import { ccc } from '@ckb-ccc/core';
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import {
  fundingLock,
  fundingTxOf,
  setFundingTx,
  signsFirst,
  startCommitmentSigning,
  totalCapacity,
} from './commitment.ts';
import { ChannelError } from './errors.ts';
import { awaitExternalFunding, recordFunderInputs } from './external-funding.ts';
import { advertiseCommitment, fnnOf, isFnn, promote } from './fnn-nonces.ts';
import { finalChannelId, keysOf } from './keys.ts';
import { peerParams } from './open.ts';
import { startPipelined } from './pipelined.ts';
import { nonceData, toScript } from './script-data.ts';
import { type Channel, hasFlag, type PartyParams, seenKey, withFlag } from './state.ts';
import { type Effect, freshNonce, type MachineEnv, type Step } from './step.ts';
import { le128 } from './tx.ts';
import type { AcceptChannel } from './wire.ts';

const b = (h: string) => hexToBytes(h);
const h = (x: Uint8Array) => bytesToHex(x);

function sameOutput(a: ccc.CellOutput | undefined, b2: ccc.CellOutput | undefined) {
  return !!a && !!b2 && Buffer.compare(a.toBytes(), b2.toBytes()) === 0;
}

/** Checks the peer's version of the funding tx against ours (§4.3). */
function checkTxUpdate(
  ch: Channel,
  prev: ccc.Transaction | null,
  next: ccc.Transaction,
  env: MachineEnv,
): void {
  const lock = fundingLock(ch, env);
  const out0 = next.outputs[0];
  if (!out0?.lock.eq(lock))
    throw new ChannelError('InvalidMessage', 'funding tx: output 0 is not the funding cell');
  if (!ch.udt && ccc.bytesFrom(next.outputsData[0] ?? '0x').length !== 0)
    throw new ChannelError('InvalidMessage', 'funding tx: output 0 has data');
  if (!ch.udt && out0.type)
    throw new ChannelError('InvalidMessage', 'funding tx: output 0 has a type script');
  if (
    ch.udt &&
    (!out0.type?.eq(toScript(ch.udt)) || ccc.bytesFrom(next.outputsData[0] ?? '0x').length !== 16)
  )
    throw new ChannelError('InvalidMessage', 'funding tx: output 0 is not a cell of the channel UDT');
  if (!prev) return;
  if (next.version !== prev.version) throw new ChannelError('InvalidMessage', 'funding tx: version changed');
  for (const [i, inp] of prev.inputs.entries())
    if (!next.inputs[i] || Buffer.compare(next.inputs[i].toBytes(), inp.toBytes()) !== 0)
      throw new ChannelError('InvalidMessage', 'funding tx: existing inputs changed');
  if (next.outputs.length < prev.outputs.length)
    throw new ChannelError('InvalidMessage', 'funding tx: outputs removed');
  for (let i = 1; i < prev.outputs.length; i++) {
    if (!sameOutput(prev.outputs[i], next.outputs[i]))
      throw new ChannelError('InvalidMessage', 'funding tx: our outputs changed');
    if (ccc.hexFrom(prev.outputsData[i] ?? '0x') !== ccc.hexFrom(next.outputsData[i] ?? '0x'))
      throw new ChannelError('InvalidMessage', 'funding tx: our output data changed');
  }
  for (const d of prev.cellDeps)
    if (!next.cellDeps.some((x) => x.eq(d)))
      throw new ChannelError('InvalidMessage', 'funding tx: cell deps removed');
}

/** Who sends TxSignatures first: the side contributing less; on a tie, the smaller funding key. */

export function maybeSignCommitment(ch: Channel, env: MachineEnv): Step {
  if (!hasFlag(ch, 'OUR_TX_COMPLETE_SENT') || !hasFlag(ch, 'THEIR_TX_COMPLETE_SENT'))
    return { ch, effects: [] };
  if (ch.external && !ch.external.submitted) return awaitExternalFunding(ch, env);
  return startCommitmentSigning(ch, env);
}

export function maybeTxSignatures(ch0: Channel): Step {
  if (!hasFlag(ch0, 'OUR_COMMITMENT_SIGNED_SENT') || !hasFlag(ch0, 'THEIR_COMMITMENT_SIGNED_SENT'))
    return { ch: ch0, effects: [] };
  const ch: Channel = { ...ch0, state: 'AWAITING_TX_SIGNATURES', flags: [] };
  if (!signsFirst(ch)) return { ch, effects: [] };
  return { ch, effects: [{ type: 'signFunding', tx: fundingTxOf(ch), broadcast: false }] };
}

export function onAccept(ch0: Channel, m: AcceptChannel, env: MachineEnv): Step {
  if (ch0.isAcceptor || ch0.state !== 'NEGOTIATING_FUNDING')
    throw new ChannelError('UnexpectedMessage', 'unexpected AcceptChannel');
  if (m.reservedCkbAmount < 62n * 100_000_000n)
    throw new ChannelError('InvalidMessage', 'reserved CKB amount too small');
  const k = keysOf(ch0);
  const finalId = h(finalChannelId(k.tlcBasepoint, m.tlcBasepoint));
  const ch: Channel = {
    ...ch0,
    id: finalId,
    state: 'COLLABORATING_FUNDING_TX',
    flags: ['PREPARING_LOCAL_TX_COLLABORATION_MSG'],
    remote: peerParams(m),
    remoteBalance: m.fundingAmount,
    announcement: ch0.isPublic
      ? { ...ch0.announcement, theirNonce: m.channelAnnouncementNonce ? h(m.channelAnnouncementNonce) : null }
      : undefined,
    ...(isFnn(ch0)
      ? {
          fnn: {
            ...fnnOf(ch0),
            theirs: h(m.nextCommitmentNonce),
            theirRevoke: [{ n: 2n, nonce: h(m.nextRevocationNonce) }],
          },
        }
      : {
          nonces: {
            ...ch0.nonces,
            theirs: [h(m.nextCommitmentNonce), h(m.nextRevocationNonce)],
            seen: [seenKey(h(m.nextCommitmentNonce)), seenKey(h(m.nextRevocationNonce))],
          },
        }),
  };
  // Our part of the funding tx: output 0 = the funding cell holding our amount + reserve
  // (UDT: our reserve as capacity, our tokens as data).
  const c = contribution(ch);
  const tx = ccc.Transaction.from({
    version: 0,
    outputs: [{ lock: fundingLock(ch, env), capacity: c.ckb, type: ch.udt ? toScript(ch.udt) : undefined }],
    outputsData: [ch.udt ? le128(c.udt) : '0x'],
  });
  return {
    ch,
    effects: [
      { type: 'renamed', from: ch0.tempId, to: finalId },
      { type: 'fund', tx, contribution: c.ckb, udtContribution: c.udt },
    ],
  };
}

export function onTxUpdate(ch: Channel, tx: ccc.Transaction, env: MachineEnv): Step {
  if (ch.state !== 'COLLABORATING_FUNDING_TX')
    throw new ChannelError('UnexpectedMessage', `unexpected TxUpdate in ${ch.state}`);
  const prev = ch.fundingTx ? fundingTxOf(ch) : null;
  checkTxUpdate(ch, prev, tx, env);
  const cap = tx.outputs[0]!.capacity;
  const tokens = ch.udt ? ccc.numLeFromBytes(ccc.bytesFrom(tx.outputsData[0] ?? '0x')) : 0n;
  if (ch.isAcceptor) {
    if (prev) throw new ChannelError('UnexpectedMessage', 'unexpected second TxUpdate');
    const theirs = contribution(ch, true);
    if (cap !== theirs.ckb || tokens !== theirs.udt)
      throw new ChannelError('InvalidMessage', 'funding tx: output 0 is not the opener amount');
    const c = setFundingTx({ ...ch, flags: ['PREPARING_LOCAL_TX_COLLABORATION_MSG'] }, tx);
    const mine = contribution(ch);
    return {
      ch: c,
      effects: [{ type: 'fund', tx, contribution: mine.ckb, udtContribution: mine.udt }],
    };
  }
  if (!holdsTotal(ch, tx))
    throw new ChannelError('InvalidMessage', 'funding tx: output 0 does not hold the channel total');
  // Final version from the acceptor: we complete too.
  return completeCollaboration(setFundingTx(ch, tx), env);
}

/** What one side puts into the funding cell: capacity, and tokens for a UDT channel. */
function contribution(ch: Channel, remote = false): { ckb: bigint; udt: bigint } {
  const p = remote ? (ch.remote as PartyParams) : ch.local;
  return ch.udt ? { ckb: p.reserve, udt: p.fundingAmount } : { ckb: p.fundingAmount + p.reserve, udt: 0n };
}

function holdsTotal(ch: Channel, tx: ccc.Transaction): boolean {
  const out0 = tx.outputs[0];
  if (!out0 || out0.capacity !== totalCapacity(ch)) return false;
  if (!ch.udt) return true;
  const r = ch.remote as PartyParams;
  const data = ccc.bytesFrom(tx.outputsData[0] ?? '0x');
  return data.length === 16 && ccc.numLeFromBytes(data) === ch.local.fundingAmount + r.fundingAmount;
}

function completeCollaboration(ch0: Channel, env: MachineEnv): Step {
  const { ch: c, nonce } = advertiseTxComplete(ch0, env);
  const ch = withFlag(c, 'OUR_TX_COMPLETE_SENT');
  return {
    ch,
    effects: [
      {
        type: 'send',
        msg: { type: 'TxComplete', value: { channelId: b(ch.id), nextCommitmentNonce: nonce } },
      },
    ],
  };
}

/**
 * Our TxComplete's nonce. Strand: one more for our pool (the close). fnn: the nonce the peer
 * commits on receipt and pairs with ours in the opening's commitments; it is current at once.
 */
function advertiseTxComplete(ch: Channel, env: MachineEnv): { ch: Channel; nonce: Uint8Array } {
  if (isFnn(ch)) {
    const r = advertiseCommitment(ch, env);
    return { ch: promote(r.ch), nonce: r.nonce };
  }
  const n = freshNonce(env, ch);
  return {
    ch: { ...ch, nonces: { ...ch.nonces, mine: [...ch.nonces.mine, nonceData(n)] } },
    nonce: n.public,
  };
}

export function onFunded(ch: Channel, tx: ccc.Transaction, env: MachineEnv): Step {
  if (ch.state !== 'COLLABORATING_FUNDING_TX') return { ch, effects: [] };
  const withTx = setFundingTx(
    recordFunderInputs({ ...ch, flags: ['AWAITING_REMOTE_TX_COLLABORATION_MSG'] }, tx),
    tx,
  );
  const update: Effect = { type: 'send', msg: { type: 'TxUpdate', value: { channelId: b(ch.id), tx } } };
  if (!ch.isAcceptor) return { ch: withTx, effects: [update] };
  // The acceptor's version is final: send it and complete.
  if (!holdsTotal(ch, tx)) throw new ChannelError('InvalidMessage', 'funding tx does not hold the total');
  void env;
  const done = completeCollaboration(withTx, env);
  return { ch: done.ch, effects: [update, ...done.effects] };
}

export function onTxSignatures(ch: Channel, witnesses: Uint8Array[]): Step {
  // The peer's reestablish sends its TxSignatures again (we may have missed them); once the funding
  // is fully signed here, that copy has nothing to add.
  if (ch.state === 'AWAITING_CHANNEL_READY' || ch.state === 'CHANNEL_READY') return { ch, effects: [] };
  if (ch.state !== 'AWAITING_TX_SIGNATURES')
    throw new ChannelError('UnexpectedMessage', `unexpected TxSignatures in ${ch.state}`);
  const tx = fundingTxOf(ch);
  if (witnesses.length < tx.inputs.length || witnesses.length > tx.inputs.length + 16)
    throw new ChannelError('InvalidMessage', 'TxSignatures: wrong number of witnesses');
  tx.witnesses = witnesses.map((w) => ccc.hexFrom(w));
  const c = withFlag(setFundingTx(ch, tx), 'THEIR_TX_SIGNATURES_SENT');
  if (hasFlag(ch, 'OUR_TX_SIGNATURES_SENT')) {
    // We signed first; the peer added its witnesses and broadcast.
    return toAwaitingReady(c);
  }
  return { ch: c, effects: [{ type: 'signFunding', tx, broadcast: false }] };
}

export function onFundingSigned(ch: Channel, tx: ccc.Transaction): Step {
  if (ch.state !== 'AWAITING_TX_SIGNATURES') return { ch, effects: [] };
  const c = withFlag(setFundingTx(ch, tx), 'OUR_TX_SIGNATURES_SENT');
  const send: Effect = {
    type: 'send',
    msg: {
      type: 'TxSignatures',
      value: { channelId: b(ch.id), witnesses: tx.witnesses.map((w) => ccc.bytesFrom(w)) },
    },
  };
  if (hasFlag(c, 'THEIR_TX_SIGNATURES_SENT')) {
    const r = toAwaitingReady(c);
    return { ch: r.ch, effects: [send, ...r.effects] };
  }
  // The peer completes and broadcasts; should its answer be lost, the chain still tells us.
  return { ch: c, effects: [send, { type: 'watchFunding', txHash: c.fundingTxHash as string }] };
}

function toAwaitingReady(ch: Channel): Step {
  // A ChannelReady may already be in (the peer saw the confirmations first).
  const c: Channel = {
    ...ch,
    state: 'AWAITING_CHANNEL_READY',
    flags: ch.flags.filter((f) => f === 'THEIR_CHANNEL_READY'),
  };
  // Fully signed and persisted: both sides broadcast (a duplicate is harmless; either side alone
  // suffices if the other crashed right after persisting).
  return {
    ch: c,
    effects: [
      { type: 'broadcast', tx: fundingTxOf(c) },
      { type: 'watchFunding', txHash: c.fundingTxHash as string },
    ],
  };
}

export function onConfirmed(ch0: Channel, env: MachineEnv): Step {
  // Signed by us first, completed and broadcast by the peer whose TxSignatures we never got.
  const ch =
    ch0.state === 'AWAITING_TX_SIGNATURES' && hasFlag(ch0, 'OUR_TX_SIGNATURES_SENT')
      ? {
          ...ch0,
          state: 'AWAITING_CHANNEL_READY' as const,
          flags: ch0.flags.filter((f) => f === 'THEIR_CHANNEL_READY'),
        }
      : ch0;
  if (ch.state !== 'AWAITING_CHANNEL_READY' || hasFlag(ch, 'OUR_CHANNEL_READY'))
    return { ch: ch0, effects: [] };
  const c = withFlag(ch, 'OUR_CHANNEL_READY');
  const r = maybeReady(c, env);
  return {
    ch: r.ch,
    effects: [{ type: 'send', msg: { type: 'ChannelReady', value: { channelId: b(ch.id) } } }, ...r.effects],
  };
}

export function maybeReady(ch: Channel, env: MachineEnv): Step {
  if (!hasFlag(ch, 'OUR_CHANNEL_READY') || !hasFlag(ch, 'THEIR_CHANNEL_READY')) return { ch, effects: [] };
  const c: Channel = {
    ...ch,
    state: 'CHANNEL_READY',
    flags: [],
    commitmentNumbers: { local: ch.commitmentNumbers.local + 1n, remote: ch.commitmentNumbers.remote + 1n },
  };
  const info: Effect = {
    type: 'send',
    msg: {
      type: 'UpdateTlcInfo',
      value: {
        channelId: b(c.id),
        timestamp: BigInt(env.now()),
        channelFlags: c.enabled ? 0 : 1,
        tlcExpiryDelta: c.tlcExpiryDelta,
        tlcMinimumValue: c.tlcMinValue,
        tlcFeeProportionalMillionths: c.tlcFeeProportionalMillionths,
      },
    },
  };
  const announce: Effect[] = c.isPublic && c.announcement?.theirNonce ? [{ type: 'announce' }] : [];
  return { ch: c.pipelinedUpdates ? startPipelined(c) : c, effects: [info, ...announce] };
}
