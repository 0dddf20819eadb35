/**
 * External funding, pure (`open_channel_with_external_funding` / `submit_signed_funding_tx`).
 *
 * The opener's part of the funding tx comes from cells of a lock the node cannot sign for (the
 * user's wallet). The funding collaboration runs as usual (OpenChannel with channel_flags bit 4,
 * AcceptChannel, TxUpdate ×2, TxComplete ×2); once both TxComplete are in, both sides park in
 * NEGOTIATING_FUNDING [AWAITING_EXTERNAL_FUNDING] instead of signing commitments, and the opener
 * hands the frozen, unsigned tx to the user. The user signs it off-node and submits it:
 *
 * - the opener checks it is the same tx (same hash: only witnesses may differ) and keeps the
 *   funder's witnesses to itself; it sends TxUpdate with the tx *without* those witnesses (the
 *   reference's "the signed tx is in" signal; its hash is all the peer checks) and its
 *   CommitmentSigned;
 * - the acceptor, on that TxUpdate with the frozen tx's hash, sends its CommitmentSigned;
 * - from there the normal flow: TxSignatures (the opener's "signature" is the funder's
 *   witnesses), broadcast, 4 confirmations, CHANNEL_READY.
 *
 * Why the witnesses are held back until TxSignatures (unlike the reference, which sends the signed
 * tx in TxUpdate): with them, the peer could add its own signatures and put the funding on chain
 * before the opener holds a signed commitment, leaving the funder's coins in a 2-of-2 the peer
 * alone can hold hostage. Held back, the funding can reach the chain only after both commitments
 * are signed — the same guarantee as a wallet-funded channel.
 *
 * Nothing signed leaves either node before the submission, so an abort (timeout, TxAbort,
 * disconnect) before it loses nothing: the funder's cells were never spent.
 */
import { ccc } from '@ckb-ccc/core';
import { hexToBytes } from '../codec/index.ts';
import { blake160, recoverCompressed, sighashAllMessage } from '../crypto/index.ts';
import { startCommitmentSigning } from './commitment.ts';
import { ChannelError } from './errors.ts';
import { type Channel, hasFlag } from './state.ts';
import type { MachineEnv, Step } from './step.ts';

/** `failure_detail` of a channel aborted because the signed funding tx did not come in time. */
export const EXTERNAL_TIMEOUT_REASON = 'external funding timed out: no signed funding tx was submitted';

export function isAwaitingExternalFunding(ch: Channel): boolean {
  return ch.state === 'NEGOTIATING_FUNDING' && hasFlag(ch, 'AWAITING_EXTERNAL_FUNDING');
}

/** Both TxComplete are in and the funder has not signed yet: park and wait for the submission. */
export function awaitExternalFunding(ch: Channel, env: MachineEnv): Step {
  return {
    ch: {
      ...ch,
      state: 'NEGOTIATING_FUNDING',
      flags: ['AWAITING_EXTERNAL_FUNDING'],
      external: { ...(ch.external ?? {}), submitted: false, startedAt: env.now() },
    },
    effects: [],
  };
}

/** Opener: the funder's inputs are the first ones of the tx our part produced. */
export function recordFunderInputs(ch: Channel, tx: ccc.Transaction): Channel {
  if (!ch.external || ch.isAcceptor || ch.external.inputs !== undefined) return ch;
  return { ...ch, external: { ...ch.external, inputs: tx.inputs.length } };
}

/** Back to "collaboration completed", marked submitted, and on into the commitment signatures. */
function signCommitments(ch: Channel, env: MachineEnv, external: Channel['external']): Step {
  return startCommitmentSigning(
    {
      ...ch,
      state: 'COLLABORATING_FUNDING_TX',
      flags: ['OUR_TX_COMPLETE_SENT', 'THEIR_TX_COMPLETE_SENT'],
      external: { ...external, submitted: true },
    },
    env,
  );
}

/**
 * Acceptor: the opener's TxUpdate says the funder signed; the tx must be the frozen one. Its
 * witnesses are kept: a Strand opener sends none, but fnn sends the funder's signatures here and,
 * when we sign first, takes the witnesses of our TxSignatures as the whole signed tx — so ours must
 * carry the funder's.
 */
export function onExternalTxUpdate(ch: Channel, tx: ccc.Transaction, env: MachineEnv): Step {
  if (!ch.isAcceptor)
    throw new ChannelError('UnexpectedMessage', 'unexpected TxUpdate while awaiting external funding');
  if (tx.hash() !== ch.fundingTxHash)
    throw new ChannelError(
      'InvalidMessage',
      'external funding: the signed funding tx is not the one agreed on',
    );
  const withWitnesses = tx.witnesses.length ? { ...ch, fundingTx: ccc.hexFrom(tx.toBytes()) } : ch;
  return signCommitments(withWitnesses, env, ch.external);
}

/** The reference's Debug form of a state, for the texts that quote it. */
function stateText(ch: Channel): string {
  const name = ch.state
    .toLowerCase()
    .split('_')
    .map((w) => w[0]?.toUpperCase() + w.slice(1))
    .join('');
  return ch.flags.length ? `${name}(${ch.flags.join(' | ')})` : name;
}

/** The witnesses of the funder's inputs (the first `inputs` of the tx). */
function funderWitnesses(ch: Channel, tx: ccc.Transaction): ccc.Hex[] {
  const n = ch.external?.inputs ?? 0;
  return Array.from({ length: n }, (_, i) => ccc.hexFrom(tx.witnesses[i] ?? '0x'));
}

/**
 * Opener, `submit_signed_funding_tx`: refused with the reference's texts unless the channel is
 * waiting for exactly this tx; then the funder's witnesses are kept and commitments are signed.
 */
export function submitSignedFunding(
  ch: Channel,
  signed: ccc.Transaction,
  sighashCodeHash: string | undefined,
  env: MachineEnv,
): Step {
  if (!ch.external || ch.isAcceptor)
    throw new ChannelError('InvalidState', 'Invalid state: Channel is not configured for external funding');
  if (ch.external.submitted)
    throw new ChannelError(
      'AlreadySubmitted',
      'Repeated processing message: Signed funding tx has already been submitted',
    );
  if (!isAwaitingExternalFunding(ch))
    throw new ChannelError(
      'InvalidState',
      `Invalid state: Expected channel in AWAITING_EXTERNAL_FUNDING-compatible state, but got ${stateText(ch)}`,
    );
  if (signed.hash() !== ch.fundingTxHash)
    throw new ChannelError(
      'InvalidParameter',
      'Invalid parameter: Signed funding transaction raw data mismatch; only witnesses may change for external funding',
    );
  const witnesses = funderWitnesses(ch, signed);
  if (!witnesses.some((w) => w !== '0x'))
    throw new ChannelError(
      'InvalidParameter',
      'Invalid parameter: Signed funding transaction has no witness for the funding inputs',
    );
  const badSignature = sighashCodeHash ? checkFunderSignature(ch, signed, sighashCodeHash) : null;
  if (badSignature) throw new ChannelError('InvalidSignature', badSignature);
  const s = signCommitments(ch, env, { ...ch.external, witnesses });
  const unsigned = ccc.Transaction.fromBytes(ch.fundingTx as string);
  unsigned.witnesses = [];
  return {
    ch: s.ch,
    effects: [
      { type: 'send', msg: { type: 'TxUpdate', value: { channelId: hexToBytes(ch.id), tx: unsigned } } },
      ...s.effects,
    ],
  };
}

/** Opener's "signature" of the funding tx: the funder's witnesses at the funder's inputs. */
export function withFunderWitnesses(ch: Channel, tx0: ccc.Transaction): ccc.Transaction {
  const tx = tx0.clone();
  const mine = ch.external?.witnesses ?? [];
  while (tx.witnesses.length < tx.inputs.length) tx.witnesses.push('0x');
  mine.forEach((w, i) => {
    tx.witnesses[i] = ccc.hexFrom(w);
  });
  return tx;
}

/**
 * For a funder locked by secp256k1-blake160 sighash-all (`sighashCodeHash`, hash type `type`): the
 * signature over the funder's input group recovers to the lock's key hash. Other locks are the
 * chain's to judge. Returns the error text, or null.
 */
export function checkFunderSignature(
  ch: Channel,
  signed: ccc.Transaction,
  sighashCodeHash: string,
): string | null {
  const lock = ch.external?.lock;
  const n = ch.external?.inputs ?? 0;
  if (!lock || n === 0 || lock.codeHash !== sighashCodeHash || lock.hashType !== 'type') return null;
  const indices = Array.from({ length: n }, (_, i) => i);
  let sig: Uint8Array | undefined;
  try {
    const w = ccc.WitnessArgs.fromBytes(signed.witnesses[0] ?? '0x');
    sig = w.lock ? ccc.bytesFrom(w.lock) : undefined;
  } catch {
    sig = undefined;
  }
  const bad = 'Invalid parameter: Signed funding transaction is not signed by the funding lock script';
  if (sig?.length !== 65) return bad;
  const pub = recoverCompressed(sighashAllMessage(signed, indices), sig);
  if (!pub || ccc.hexFrom(blake160(pub)) !== lock.args.toLowerCase()) return bad;
  return null;
}

/** When an external channel still waiting for the signed tx gives up (ms), or null. */
export function externalDeadline(ch: Channel, timeoutMs: number): number | null {
  if (!ch.external || ch.external.submitted || ch.state === 'CLOSED') return null;
  return (ch.external.startedAt ?? ch.createdAt) + timeoutMs;
}
