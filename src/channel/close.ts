/**
 * Closing, pure: cooperative (Shutdown ×2, ClosingSigned ×2, one transaction paying each side
 * its balance + reserve − its fee to its close script; the initiator pays the whole fee because
 * the peer answers with fee rate 0, as the reference) and forced (our latest commitment on chain).
 */
import { ccc } from '@ckb-ccc/core';
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { aggregateFunding, channelDeps, completeForBroadcast, signFunding } from './commitment.ts';
import { ChannelError } from './errors.ts';
import { fnnOf, isFnn } from './fnn-nonces.ts';
import { deriveChannelKeys } from './keys.ts';
import { signWithNonce, sorted2 } from './musig.ts';
import { dec } from './round.ts';
import { scriptData, toScript } from './script-data.ts';
import {
  type Channel,
  hasFlag,
  type PartyParams,
  resolvingPending,
  type ScriptData,
  withFlag,
} from './state.ts';
import type { Effect, MachineEnv, Step } from './step.ts';
import { CKB, feeOf, fundingWitness, shutdownTx, shutdownTxSize, txMessage } from './tx.ts';
import type { ClosingSigned, Shutdown } from './wire.ts';

const b = (h: string) => hexToBytes(h);
const h = (x: Uint8Array) => bytesToHex(x);

export interface ShutdownCommand {
  closeScript?: ScriptData;
  feeRate?: bigint;
  force?: boolean;
}

function occupied(s: ScriptData, udt: ScriptData | null): bigint {
  const cell = ccc.CellOutput.from({
    capacity: 0n,
    lock: toScript(s),
    type: udt ? toScript(udt) : undefined,
  });
  return BigInt(cell.occupiedSize + (udt ? 16 : 0)) * CKB;
}

function closeFee(ch: Channel, rate: bigint, env: MachineEnv, local: ScriptData, remote: ScriptData): bigint {
  return feeOf(
    rate,
    shutdownTxSize(
      channelDeps(ch, env).length,
      [toScript(local), toScript(remote)],
      ch.udt ? toScript(ch.udt) : null,
    ),
  );
}

/** `shutdown_channel` (cooperative); errors carry the reference's texts. */
export function startShutdown(ch: Channel, cmd: ShutdownCommand, env: MachineEnv): Step {
  if (cmd.force) return forceClose(ch);
  if (ch.state !== 'CHANNEL_READY')
    throw new ChannelError(
      'InvalidState',
      `Invalid state: Trying to send shutdown message while in invalid state ${ch.state}`,
    );
  // Pending TLCs are resolved after Shutdown (the reference's AWAITING_PENDING_TLCS); only an
  // offered TLC the peer has not acknowledged yet (LocalAnnounced), or one of ours waiting to be
  // re-issued after a collision, stops it.
  if (ch.tlcs.some((t) => t.offered && t.added === 'announced') || pendingOwnAdd(ch))
    throw new ChannelError(
      'PendingTlcs',
      'Invalid state: Unable to process shutdown command, as there are pending outbound tlcs',
    );
  const closeScript = cmd.closeScript ?? ch.local.shutdownScript;
  const feeRate = cmd.feeRate ?? ch.commitmentFeeRate;
  if (feeRate < ch.commitmentFeeRate)
    throw new ChannelError(
      'InvalidParameter',
      `Invalid parameter: Fee rate ${feeRate} is less than commitment fee rate ${ch.commitmentFeeRate}`,
    );
  const remoteScript = (ch.remote as PartyParams).shutdownScript;
  const fee = closeFee(ch, feeRate, env, closeScript, remoteScript);
  const available = (ch.udt ? 0n : ch.localBalance) + ch.local.reserve - occupied(closeScript, ch.udt);
  if (fee > available)
    throw new ChannelError(
      'InsufficientFunds',
      `Invalid parameter: Local balance is not enough to pay the fee, expect fee ${fee} <= available_max_fee_amount ${available}`,
    );
  const c: Channel = {
    ...ch,
    state: 'SHUTTING_DOWN',
    flags: ['OUR_SHUTDOWN_SENT'],
    shutdown: { ...ch.shutdown, local: { closeScript, feeRate } },
  };
  return {
    ch: c,
    effects: [
      {
        type: 'send',
        msg: {
          type: 'Shutdown',
          value: { channelId: b(ch.id), feeRate, closeScript: toScript(closeScript) },
        },
      },
    ],
  };
}

export function onShutdown(ch0: Channel, m: Shutdown, env: MachineEnv): Step {
  if (ch0.state !== 'CHANNEL_READY' && ch0.state !== 'SHUTTING_DOWN')
    throw new ChannelError('UnexpectedMessage', `unexpected Shutdown in ${ch0.state}`);
  const remote = { closeScript: scriptData(m.closeScript), feeRate: m.feeRate };
  let ch: Channel = withFlag(
    {
      ...ch0,
      state: 'SHUTTING_DOWN',
      flags: ch0.state === 'SHUTTING_DOWN' ? ch0.flags : [],
      shutdown: { ...ch0.shutdown, remote },
    },
    'THEIR_SHUTDOWN_SENT',
  );
  const effects: Effect[] = [];
  if (!hasFlag(ch, 'OUR_SHUTDOWN_SENT')) {
    // The reference's auto-reply: our original shutdown script, fee rate 0 (the initiator pays).
    const local = { closeScript: ch.local.shutdownScript, feeRate: 0n };
    ch = withFlag({ ...ch, shutdown: { ...ch.shutdown, local } }, 'OUR_SHUTDOWN_SENT');
    effects.push({
      type: 'send',
      msg: {
        type: 'Shutdown',
        value: { channelId: b(ch.id), feeRate: 0n, closeScript: toScript(local.closeScript) },
      },
    });
  }
  const s = maybeClosingSigned(ch, env);
  return { ch: s.ch, effects: [...effects, ...s.effects] };
}

/** The shutdown tx both sides sign. */
export function buildShutdownTx(ch: Channel, env: MachineEnv): ccc.Transaction {
  const sd = ch.shutdown;
  if (!sd?.local || !sd.remote) throw new ChannelError('MissingState', 'shutdown scripts not exchanged');
  const r = ch.remote as PartyParams;
  const feeL = closeFee(ch, sd.local.feeRate, env, sd.local.closeScript, sd.remote.closeScript);
  const feeR = closeFee(ch, sd.remote.feeRate, env, sd.local.closeScript, sd.remote.closeScript);
  const udt = !!ch.udt;
  return shutdownTx({
    fundingOutPoint: { txHash: ch.fundingTxHash as string, index: 0 },
    cellDeps: channelDeps(ch, env),
    udt: ch.udt ? toScript(ch.udt) : null,
    sides: [
      {
        fundingPubkey: b(ch.local.fundingPubkey),
        closeScript: toScript(sd.local.closeScript),
        capacity: (udt ? 0n : ch.localBalance) + ch.local.reserve - feeL,
        udtAmount: ch.localBalance,
      },
      {
        fundingPubkey: b(r.fundingPubkey),
        closeScript: toScript(sd.remote.closeScript),
        capacity: (udt ? 0n : ch.remoteBalance) + r.reserve - feeR,
        udtAmount: ch.remoteBalance,
      },
    ],
  });
}

/** Our AddTlc stepped back by a collision and not re-issued yet. */
function pendingOwnAdd(ch: Channel): boolean {
  return (ch.retry ?? []).some((m) => dec(m).type === 'AddTlc');
}

/** No TLC left in either commitment and no round in flight: the shutdown tx can be signed. */
export function noTlcPending(ch: Channel): boolean {
  return ch.tlcs.length === 0 && !ch.round && !ch.pipelined?.log.awaitingRevoke;
}

/** After any step: a shutdown waiting for its pending TLCs goes on to ClosingSigned once they are gone. */
export function afterPendingResolved(s: Step, env: MachineEnv): Step {
  if (!resolvingPending(s.ch)) return s;
  const r = maybeClosingSigned(s.ch, env);
  return r.ch === s.ch ? s : { ...s, ch: r.ch, effects: [...s.effects, ...r.effects] };
}

function maybeClosingSigned(ch: Channel, env: MachineEnv): Step {
  if (
    !hasFlag(ch, 'OUR_SHUTDOWN_SENT') ||
    !hasFlag(ch, 'THEIR_SHUTDOWN_SENT') ||
    ch.shutdown?.myPartial ||
    !noTlcPending(ch)
  )
    return { ch, effects: [] };
  const tx = buildShutdownTx(ch, env);
  const { ch: signed, partial, myNonce, theirNonce } = signShutdown(ch, txMessage(tx));
  const c: Channel = withFlag(
    {
      ...signed,
      shutdown: { ...ch.shutdown, tx: h(tx.toBytes()), myNonce, theirNonce, myPartial: h(partial) },
    },
    'DROPPING_PENDING',
  );
  const send: Effect = {
    type: 'send',
    msg: { type: 'ClosingSigned', value: { channelId: b(ch.id), partialSignature: partial } },
  };
  const agg = maybeAggregate(c);
  return { ch: agg.ch, effects: [send, ...agg.effects] };
}

/**
 * Our partial signature of the shutdown tx. Strand: the heads of both pools, used once. fnn: our
 * current commitment nonce (a counted use; refused after two) with the peer's current one.
 */
function signShutdown(
  ch: Channel,
  msg: Uint8Array,
): { ch: Channel; partial: Uint8Array; myNonce: string; theirNonce: string } {
  if (isFnn(ch)) {
    const f = fnnOf(ch);
    const myNonce = f.current;
    const r = signFunding(ch, msg);
    return { ch: r.ch, partial: r.value, myNonce, theirNonce: f.theirs };
  }
  const my = ch.nonces.mine[0];
  const their = ch.nonces.theirs[0];
  if (!my || !their) throw new ChannelError('NonceExhausted', 'no nonce left for the closing signature');
  const k = deriveChannelKeys(b(ch.seed));
  const remotePk = b((ch.remote as PartyParams).fundingPubkey);
  const partial = signWithNonce({
    mySecret: k.fundingKey,
    myPubkey: k.fundingPubkey,
    myNonce: { secret: b(my.secret), public: b(my.public) },
    theirPubkey: remotePk,
    theirNonce: b(their),
    keys: sorted2(k.fundingPubkey, remotePk),
    msg,
  });
  const nonces = { mine: ch.nonces.mine.slice(1), theirs: ch.nonces.theirs.slice(1) };
  return { ch: { ...ch, nonces }, partial, myNonce: my.public, theirNonce: their };
}

export function onClosingSigned(ch: Channel, m: ClosingSigned): Step {
  if (ch.state !== 'SHUTTING_DOWN')
    throw new ChannelError('UnexpectedMessage', `unexpected ClosingSigned in ${ch.state}`);
  if (ch.shutdown?.theirPartial) return { ch, effects: [] };
  return maybeAggregate({ ...ch, shutdown: { ...ch.shutdown, theirPartial: h(m.partialSignature) } });
}

function maybeAggregate(ch: Channel): Step {
  const sd = ch.shutdown;
  if (!sd?.myPartial || !sd.theirPartial || !sd.tx || hasFlag(ch, 'WAITING_COMMITMENT_CONFIRMATION'))
    return { ch, effects: [] };
  const tx = ccc.Transaction.fromBytes(sd.tx);
  const sig = aggregateFunding(ch, 'closing', {
    myNonce: b(sd.myNonce as string),
    myPartial: b(sd.myPartial),
    theirNonce: b(sd.theirNonce as string),
    theirPartial: b(sd.theirPartial),
    msg: txMessage(tx),
  });
  const localPk = b(ch.local.fundingPubkey);
  const remotePk = b((ch.remote as PartyParams).fundingPubkey);
  tx.witnesses = [fundingWitness(localPk, remotePk, sig)];
  const c: Channel = withFlag(
    { ...ch, shutdownTxHash: tx.hash(), closeTx: bytesToHex(tx.toBytes()) },
    'WAITING_COMMITMENT_CONFIRMATION',
  );
  return {
    ch: c,
    effects: [
      { type: 'broadcast', tx },
      { type: 'watchClose', txHash: tx.hash() },
    ],
  };
}

/** Our latest commitment on chain (with the funding lock's deps); settlement follows the delay. */
export function forceClose(ch: Channel): Step {
  if (ch.state !== 'CHANNEL_READY' && ch.state !== 'SHUTTING_DOWN')
    throw new ChannelError(
      'InvalidState',
      `Invalid state: Handling force shutdown command invalid state ${ch.state}`,
    );
  // fnn mode: our partial is added now, refused if its nonce already signed twice (docs/nonces.md).
  const { ch: signed, tx } = completeForBroadcast(ch);
  const c: Channel = {
    ...signed,
    state: 'SHUTTING_DOWN',
    flags: ['WAITING_COMMITMENT_CONFIRMATION'],
    shutdown: { ...ch.shutdown, force: true },
    shutdownTxHash: tx.hash(),
  };
  return {
    ch: c,
    effects: [
      { type: 'broadcast', tx },
      { type: 'watchClose', txHash: tx.hash() },
    ],
  };
}

/** The close tx is confirmed. */
export function onCloseConfirmed(ch: Channel): Step {
  if (ch.state !== 'SHUTTING_DOWN') return { ch, effects: [] };
  if (ch.shutdown?.force)
    return {
      ch: { ...ch, state: 'CLOSED', flags: ['UNCOOPERATIVE_LOCAL', 'WAITING_ONCHAIN_SETTLEMENT'] },
      effects: [{ type: 'settleAfterDelay' }],
    };
  return { ch: { ...ch, state: 'CLOSED', flags: ['COOPERATIVE'] }, effects: [] };
}
