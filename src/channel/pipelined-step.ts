/**
 * The machine's events on a pipelined channel (`pipelined.ts`): TLC commands and the peer's TLC
 * messages. After each, a CommitmentSigned goes when the rules allow one (something uncovered,
 * none of ours unanswered): a command's updates, the answer to the peer's CommitmentSigned
 * (RevokeAndAck + CommitmentSigned), what waited for the peer's RevokeAndAck. Everything else
 * (opening, shutdown, reestablish) is the round model's (`machine.ts`), which calls in here.
 * Returns null for an event this file does not take.
 */
import { ChannelError } from './errors.ts';
import { addTlcP, onPeerMessageP, removeTlcP, signP } from './pipelined.ts';
import type { Channel } from './state.ts';
import type { Event, MachineEnv, Step } from './step.ts';
import type { TlcOutcome } from './tlc.ts';
import { uncoveredByOurSignature } from './update-log.ts';

const PEER_UPDATES = new Set(['AddTlc', 'RemoveTlc', 'CommitmentSigned', 'RevokeAndAck', 'TxComplete']);

export function stepPipelined(ch: Channel, ev: Event, env: MachineEnv): Step | null {
  if (!ch.pipelined) return null;
  switch (ev.type) {
    case 'addTlc': {
      const s = addTlcP(ch, ev.cmd, env);
      return { ...withSignature(s, env), tlcId: s.tlcId } as Step;
    }
    case 'removeTlc':
      return withSignature(removeTlcP(ch, ev.id, ev.reason), env);
    case 'tlcBatch':
      return batch(ch, ev.cmds, env);
    case 'signCommitment':
      return withSignature({ ch, effects: [] }, env, true);
    case 'peer':
      if (!PEER_UPDATES.has(ev.msg.type)) return null;
      return withSignature(onPeerMessageP(ch, ev.msg, env), env);
    default:
      return null;
  }
}

/**
 * `s`, followed by our CommitmentSigned when one may go now and is wanted now: it covers an
 * update of ours, or a peer's add or fail (whose commitment we wait for). One that would cover
 * only the peer's fulfils waits unless `force`d (`deferred-sign.ts` sends it a little later).
 */
export function withSignature(s: Step, env: MachineEnv, force = false): Step {
  if (!force && !wanted(s.ch)) return s;
  const signed = signP(s.ch, env);
  return signed ? { ...s, ch: signed.ch, effects: [...s.effects, ...signed.effects] } : s;
}

/** Every command of the batch as an update, each checked against the channel the earlier left. */
function batch(ch0: Channel, cmds: Extract<Event, { type: 'tlcBatch' }>['cmds'], env: MachineEnv): Step {
  let ch = ch0;
  const effects: Step['effects'] = [];
  const outcomes: TlcOutcome[] = [];
  for (const c of cmds) {
    try {
      const s = c.type === 'addTlc' ? addTlcP(ch, c.cmd, env) : removeTlcP(ch, c.id, c.reason);
      ch = s.ch;
      effects.push(...s.effects);
      outcomes.push({ ok: true, ...('tlcId' in s ? { tlcId: s.tlcId as bigint } : {}) });
    } catch (e) {
      if (!(e instanceof ChannelError)) throw e;
      outcomes.push({ ok: false, error: e });
    }
  }
  return { ...withSignature({ ch, effects }, env), outcomes };
}

function wanted(ch: Channel): boolean {
  const log = ch.pipelined?.log;
  if (!log) return false;
  return uncoveredByOurSignature(log).some((e) => e.owner === 'local' || e.update.type !== 'fulfil');
}
