/**
 * ReestablishChannel, pure (`fiber-channel-protocol.md` §7, adapted to one TLC round at a time).
 * On every (re)connection both sides send their counters (L, R). From ours until the peer's comes
 * in, the TLC round stands still (`heldForReestablish`); on the peer's:
 * - before any funding signature of ours left the node: the opening is aborted cleanly;
 * - funding signed: our TxSignatures / ChannelReady are sent again (the peer ignores duplicates);
 * - ready: our whole nonce pool is advertised again (the peer keeps what it lacks), then what the
 *   peer missed is replayed byte for byte — our last RevokeAndAck if `R == pL + 1`, our updates
 *   and CommitmentSigned if that signature is still unacknowledged and `L == pR`; numbers
 *   beyond what a disconnect explains mean one side lost state (`outdated.ts`);
 * - shutting down: our Shutdown again, the TLC round's replay while pending TLCs resolve, and our
 *   ClosingSigned.
 */
import { ccc } from '@ckb-ccc/core';
import { hexToBytes } from '../codec/index.ts';
import { fundingTxOf } from './commitment.ts';
import { awaitingRevoke, markOutdated, onPeerBehind, syncVerdict, withoutFlag } from './outdated.ts';
import { onReestablishP, reconnectedP, verdictP } from './pipelined.ts';
import { withSignature } from './pipelined-step.ts';
import { dec, replayedUpdate } from './round.ts';
import { toScript } from './script-data.ts';
import { type Channel, hasFlag, resolvingPending } from './state.ts';
import { type Effect, type Event, fail, type MachineEnv, type Step } from './step.ts';
import type { ChannelMessage, ReestablishChannel } from './wire.ts';

const b = (h: string) => hexToBytes(h);

export function reestablishMessage(ch: Channel): ChannelMessage {
  return {
    type: 'ReestablishChannel',
    value: {
      channelId: b(ch.id),
      localCommitmentNumber: ch.commitmentNumbers.local,
      remoteCommitmentNumber: ch.commitmentNumbers.remote,
    },
  };
}

/** Funding not yet signed by us: the opening can still be dropped without risk. */
export function abortable(ch: Channel): boolean {
  return (
    ch.state === 'NEGOTIATING_FUNDING' ||
    ch.state === 'COLLABORATING_FUNDING_TX' ||
    ch.state === 'SIGNING_COMMITMENT' ||
    (ch.state === 'AWAITING_TX_SIGNATURES' && !hasFlag(ch, 'OUR_TX_SIGNATURES_SENT'))
  );
}

const send = (msg: ChannelMessage): Effect => ({ type: 'send', msg });

/**
 * A new connection with the peer: our counters go out. An opening not yet signed by us is dropped
 * instead (a message of it may have been lost with the old session; the peer drops it too).
 *
 * From here until the peer's ReestablishChannel, a ready channel starts no round and ignores the
 * peer's round messages (as fnn's `reestablishing`): an update we sent before reading the
 * peer's counters would arrive ahead of what the peer's counters make us replay (our missed
 * RevokeAndAck), and the peer would take it into the wrong round.
 */
export function onReconnected(ch: Channel): Step {
  if (abortable(ch)) return fail(ch, 'the peer reconnected before the funding was signed');
  const ready = ch.state === 'CHANNEL_READY' || ch.state === 'SHUTTING_DOWN';
  // A pipelined channel forgets what no signature covered and sends its own counters.
  if (ready && ch.pipelined) return reconnectedP(ch);
  const effects = [send(reestablishMessage(ch))];
  return { ch: ready ? { ...ch, reestablishing: true } : ch, effects };
}

const ROUND_MESSAGES: ReadonlySet<ChannelMessage['type']> = new Set<ChannelMessage['type']>([
  'AddTlc',
  'RemoveTlc',
  'CommitmentSigned',
  'RevokeAndAck',
]);

/** While reestablishing: the peer's round messages ignored (commands wait: `tlc.ts`, `idle`). */
export function heldForReestablish(ch: Channel, ev: Event): Step | null {
  if (!ch.reestablishing || ev.type !== 'peer' || !ROUND_MESSAGES.has(ev.msg.type)) return null;
  return { ch, effects: [] };
}

export function onReestablish(ch0: Channel, m: ReestablishChannel, env: MachineEnv): Step {
  let ch = ch0;
  if (ch.reestablishing) {
    const { reestablishing: _, ...rest } = ch;
    ch = rest;
  }
  if (abortable(ch)) return fail(ch, 'the peer reconnected before the funding was signed');
  switch (ch.state) {
    case 'AWAITING_TX_SIGNATURES': {
      const tx = fundingTxOf(ch);
      return {
        ch,
        effects: [
          send({
            type: 'TxSignatures',
            value: { channelId: b(ch.id), witnesses: tx.witnesses.map((w) => ccc.bytesFrom(w)) },
          }),
        ],
      };
    }
    case 'AWAITING_CHANNEL_READY': {
      // The full witness set again (the peer may have missed it), then our ChannelReady.
      const tx = fundingTxOf(ch);
      const effects: Effect[] = [
        send({
          type: 'TxSignatures',
          value: { channelId: b(ch.id), witnesses: tx.witnesses.map((w) => ccc.bytesFrom(w)) },
        }),
      ];
      if (hasFlag(ch, 'OUR_CHANNEL_READY'))
        effects.push(send({ type: 'ChannelReady', value: { channelId: b(ch.id) } }));
      return { ch, effects };
    }
    case 'CHANNEL_READY':
      return readyReplay(ch, m, env);
    case 'SHUTTING_DOWN': {
      let next = ch;
      const effects: Effect[] = [];
      const local = ch.shutdown?.local;
      if (local && hasFlag(ch, 'OUR_SHUTDOWN_SENT'))
        effects.push(
          send({
            type: 'Shutdown',
            value: { channelId: b(ch.id), feeRate: local.feeRate, closeScript: toScript(local.closeScript) },
          }),
        );
      // Still resolving pending TLCs: the TLC round resumes as in CHANNEL_READY (unless the
      // numbers show one side lost state: then that verdict is the whole answer).
      if (resolvingPending(ch)) {
        const r = readyReplay(ch, m, env);
        if (hasFlag(r.ch, 'LOCAL_STATE_OUTDATED') || r.ch.state !== ch.state) return r;
        next = r.ch;
        effects.push(...r.effects);
      }
      if (ch.shutdown?.myPartial)
        effects.push(
          send({
            type: 'ClosingSigned',
            value: { channelId: b(ch.id), partialSignature: b(ch.shutdown.myPartial) },
          }),
        );
      return { ch: next, effects };
    }
    default:
      return { ch, effects: [] };
  }
}

function readyReplay(ch0: Channel, m: ReestablishChannel, env: MachineEnv): Step {
  if (ch0.pipelined) return pipelinedReplay(ch0, m, env);
  const L = ch0.commitmentNumbers.local;
  const R = ch0.commitmentNumbers.remote;
  const pL = m.localCommitmentNumber;
  const pR = m.remoteCommitmentNumber;
  // Numbers out of what an honest disconnect leaves: one side lost state (`outdated.ts`).
  const verdict = syncVerdict(ch0, m);
  if (verdict.kind === 'we-are-behind') return markOutdated(ch0, verdict.reason);
  if (verdict.kind === 'peer-is-behind') return onPeerBehind(ch0, verdict.reason);
  // The peer's numbers match ours: a restored state is confirmed current.
  const ch = withoutFlag(ch0, 'RESTORED_FROM_BACKUP');
  const effects: Effect[] = ch.nonces.mine.map((n) =>
    send({ type: 'TxComplete', value: { channelId: b(ch.id), nextCommitmentNonce: b(n.public) } }),
  );
  const cache = ch.cache;
  if (R === pL + 1n && cache?.revoke) effects.push(send(dec(cache.revoke)));
  if (awaitingRevoke(ch) && L === pR && cache?.commit) {
    for (const u of cache.updates) effects.push(send(replayedUpdate(ch, u)));
    effects.push(send(dec(cache.commit)));
  }
  return { ch, effects };
}

/** A pipelined channel's replay (`pipelined.ts`), after the same verdict on lost state. */
function pipelinedReplay(ch0: Channel, m: ReestablishChannel, env: MachineEnv): Step {
  const verdict = verdictP(ch0, { local: m.localCommitmentNumber, remoteAcked: m.remoteCommitmentNumber });
  if (verdict.kind === 'we-are-behind') return markOutdated(ch0, verdict.reason);
  if (verdict.kind === 'peer-is-behind') return onPeerBehind(ch0, verdict.reason);
  return withSignature(onReestablishP(withoutFlag(ch0, 'RESTORED_FROM_BACKUP'), m), env);
}
