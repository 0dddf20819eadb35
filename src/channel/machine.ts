import { bytesToHex } from '../codec/index.ts';
import { onAnnouncementSignatures, signAnnouncement } from './announce.ts';
import {
  afterPendingResolved,
  onCloseConfirmed,
  onClosingSigned,
  onShutdown,
  startShutdown,
} from './close.ts';
import { completeOwnCommitment } from './commitment.ts';
import { ChannelError } from './errors.ts';
import { isAwaitingExternalFunding, onExternalTxUpdate, submitSignedFunding } from './external-funding.ts';
import { fnnOf, isFnn, promote } from './fnn-nonces.ts';
import {
  maybeReady,
  maybeSignCommitment,
  maybeTxSignatures,
  onAccept,
  onConfirmed,
  onFunded,
  onFundingSigned,
  onTxSignatures,
  onTxUpdate,
} from './funding.ts';
import { guardOutdated, onReadyAbort } from './outdated.ts';
import { stepPipelined } from './pipelined-step.ts';
import { heldForReestablish, onReconnected, onReestablish } from './reestablish.ts';
import { type Channel, withFlag } from './state.ts';
import { type Event, fail, type MachineEnv, type Step } from './step.ts';
import {
  addTheirs,
  addTlc,
  onAddTlc,
  onCommitmentSignedReady,
  onNonceAdvert,
  onRemoveTlc,
  onRevokeAndAck,
  removeTlc,
  signCommitment,
  tlcBatch,
} from './tlc.ts';
import type { ChannelMessage } from './wire.ts';

const h = (x: Uint8Array) => bytesToHex(x);

// ---- the step function -------------------------------------------------------------------------

export function step(ch: Channel, ev: Event, env: MachineEnv): Step {
  if (ch.state === 'CLOSED' && ev.type !== 'settled') {
    if (ev.type === 'shutdown')
      throw new ChannelError('ChannelClosed', 'Messaging failed because channel is closed');
    // Refused with the state it is in (never a silent success).
    if (ev.type === 'submitFunding') return submitSignedFunding(ch, ev.tx, ev.sighashCodeHash, env);
    if (ev.type === 'tlcBatch') {
      const error = new ChannelError('ChannelClosed', 'Messaging failed because channel is closed');
      return { ch, effects: [], outcomes: ev.cmds.map(() => ({ ok: false, error })) };
    }
    return { ch, effects: [] };
  }
  const guarded = guardOutdated(ch, ev) ?? heldForReestablish(ch, ev);
  if (guarded) return guarded;
  // Shutting down: once both Shutdowns are in and the last pending TLC is resolved, ClosingSigned.
  return afterPendingResolved(stepPipelined(ch, ev, env) ?? dispatch(ch, ev, env), env);
}

function dispatch(ch: Channel, ev: Event, env: MachineEnv): Step {
  switch (ev.type) {
    case 'peer':
      return onPeer(ch, ev.msg, env);
    case 'funded':
      return onFunded(ch, ev.tx, env);
    case 'fundingSigned':
      return onFundingSigned(ch, ev.tx);
    case 'fundingConfirmed':
      return onConfirmed(ch, env);
    case 'fundingFailed':
      return fail(ch, ev.reason);
    case 'shutdown':
      return startShutdown(ch, ev.cmd, env);
    case 'addTlc':
      return addTlc(ch, ev.cmd, env);
    case 'removeTlc':
      return removeTlc(ch, ev.id, ev.reason, env);
    case 'tlcBatch':
      return tlcBatch(ch, ev.cmds, env);
    case 'signCommitment':
      return signCommitment(ch, env);
    case 'reconnected':
      return onReconnected(ch);
    case 'closeConfirmed':
      return onCloseConfirmed(ch);
    case 'announcementDigest':
      return signAnnouncement(ch, ev.digest, ev.nodeSignature);
    case 'remoteCommitment':
      if (ch.state !== 'CHANNEL_READY' && ch.state !== 'SHUTTING_DOWN') return { ch, effects: [] };
      return {
        ch: {
          ...ch,
          state: 'CLOSED',
          flags: [
            'UNCOOPERATIVE_REMOTE',
            'WAITING_ONCHAIN_SETTLEMENT',
            ...ch.flags.filter((f) => f === 'LOCAL_STATE_OUTDATED'),
          ],
          shutdownTxHash: ev.txHash,
          round: null,
        },
        effects: [{ type: 'settleAfterDelay' }],
      };
    case 'submitFunding':
      return submitSignedFunding(ch, ev.tx, ev.sighashCodeHash, env);
    case 'settled':
      return {
        ch: { ...ch, flags: ch.flags.filter((f) => f !== 'WAITING_ONCHAIN_SETTLEMENT') },
        effects: [],
      };
  }
}

function onPeer(ch: Channel, msg: ChannelMessage, env: MachineEnv): Step {
  switch (msg.type) {
    case 'AcceptChannel':
      return onAccept(ch, msg.value, env);
    case 'TxUpdate':
      if (isAwaitingExternalFunding(ch)) return onExternalTxUpdate(ch, msg.value.tx, env);
      return onTxUpdate(ch, msg.value.tx, env);
    case 'TxComplete': {
      if (ch.state !== 'COLLABORATING_FUNDING_TX') {
        if (ch.state === 'NEGOTIATING_FUNDING')
          throw new ChannelError('UnexpectedMessage', 'unexpected TxComplete');
        return onNonceAdvert(ch, msg.value.nextCommitmentNonce);
      }
      const nonce = h(msg.value.nextCommitmentNonce);
      const withNonce = isFnn(ch) ? { ...ch, fnn: { ...fnnOf(ch), theirs: nonce } } : addTheirs(ch, [nonce]);
      const c = withFlag(withNonce, 'THEIR_TX_COMPLETE_SENT');
      return maybeSignCommitment(c, env);
    }
    case 'ReestablishChannel':
      return onReestablish(ch, msg.value, env);
    case 'AddTlc':
      return onAddTlc(ch, msg.value, env);
    case 'RemoveTlc':
      return onRemoveTlc(ch, msg.value);
    case 'RevokeAndAck':
      return onRevokeAndAck(ch, msg.value, env);
    case 'CommitmentSigned': {
      if (ch.state === 'CHANNEL_READY' || ch.state === 'SHUTTING_DOWN')
        return onCommitmentSignedReady(
          ch,
          msg.value.fundingTxPartialSignature,
          msg.value.nextCommitmentNonce,
          env,
        );
      if (ch.state !== 'SIGNING_COMMITMENT' && ch.state !== 'COLLABORATING_FUNDING_TX')
        throw new ChannelError('UnexpectedMessage', `unexpected CommitmentSigned in ${ch.state}`);
      if (ch.state === 'COLLABORATING_FUNDING_TX') {
        // The peer finished first: complete once our own TxComplete round is done.
        throw new ChannelError(
          'UnexpectedMessage',
          'CommitmentSigned before the funding collaboration completed',
        );
      }
      const c = completeOwnCommitment(
        ch,
        msg.value.fundingTxPartialSignature,
        msg.value.nextCommitmentNonce,
        env,
      );
      // fnn: the peer signed before it saw our CommitmentSigned, and commits its nonce now.
      const c2 = isFnn(c) ? promote(c) : c;
      return maybeTxSignatures(withFlag(c2, 'THEIR_COMMITMENT_SIGNED_SENT'));
    }
    case 'TxSignatures':
      return onTxSignatures(ch, msg.value.witnesses);
    case 'ChannelReady': {
      if (ch.state !== 'AWAITING_CHANNEL_READY' && ch.state !== 'AWAITING_TX_SIGNATURES')
        throw new ChannelError('UnexpectedMessage', `unexpected ChannelReady in ${ch.state}`);
      return maybeReady(withFlag(ch, 'THEIR_CHANNEL_READY'), env);
    }
    case 'Shutdown':
      return onShutdown(ch, msg.value, env);
    case 'ClosingSigned':
      return onClosingSigned(ch, msg.value);
    case 'TxAbort':
      // After the funding, a TxAbort only matters as a peer's force-close request (`outdated.ts`).
      if (ch.state === 'CHANNEL_READY' || ch.state === 'SHUTTING_DOWN')
        return onReadyAbort(ch, msg.value.message);
      if (ch.state === 'AWAITING_CHANNEL_READY') return { ch, effects: [] };
      return {
        ch: {
          ...ch,
          state: 'CLOSED',
          flags: ['FUNDING_ABORTED'],
          failureDetail: new TextDecoder().decode(msg.value.message),
        },
        effects: [{ type: 'failed', reason: 'aborted by the peer' }],
      };
    case 'AnnouncementSignatures':
      return onAnnouncementSignatures(ch, msg.value);
    case 'UpdateTlcInfo':
    case 'TxInitRBF':
    case 'TxAckRBF':
      return { ch, effects: [] };
    default:
      throw new ChannelError('UnexpectedMessage', `${msg.type} is not handled in ${ch.state}`);
  }
}
