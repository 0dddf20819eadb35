/**
 * TLC rounds, pure. One round at a time per channel (the reference also allows only one unacked
 * CommitmentSigned per side): the initiator sends its updates (AddTlc / RemoveTlc, several in one
 * round: `tlcBatch`) and a CommitmentSigned for the peer's next commitment; the peer answers
 * RevokeAndAck (revoking its previous commitment) and its own CommitmentSigned; the initiator
 * ends with RevokeAndAck.
 * Updates apply to balances when announced, so both new commitments include them; the old
 * commitments are revoked by the end of the round.
 *
 * Nonces: each completion (our new commitment, the peer's revocation) takes the head of our
 * pool and is followed by a TxComplete advertising a fresh nonce (Strand extension: the
 * reference's messages carry too few nonces to never reuse one). fnn mode: no such advertisement;
 * fnn's schedule under the two-use ledger (docs/nonces.md).
 *
 * Longer than the house's ~600 lines on purpose: both halves of a round (our commands, the peer's
 * messages) share the private rules that offer, settle and finish; split apart they would have
 * to be exported to each other. The round's memory of itself (replay cache, step back) is in
 * `round.ts`.
 */
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { commitmentSigned, completeOwnCommitment } from './commitment.ts';
import { ChannelError } from './errors.ts';
import { completePeerRevocation, isFnn, signOwnRevocation } from './fnn-revoke.ts';
import { commitmentPoint, keysOf } from './keys.ts';
import { complete, type NoncePair, SignatureError, signFirst } from './musig.ts';
import { revocationToSign } from './revocation.ts';
import { cachedUpdate, collide, dec, enc, roundSnapshot } from './round.ts';
import { nonceData } from './script-data.ts';
import { type Channel, type PartyParams, resolvingPending, seenKey, type Tlc } from './state.ts';
import { type Effect, freshNonce, type MachineEnv, type SendEffect, type Step } from './step.ts';
import { newTlcKeys, type TlcKeyFields, withRemotePoint } from './tlc-keys.ts';
import {
  ADD_TLC_ERRORS,
  type AddTlcCommand,
  checkOurAdd,
  checkPeerAdd,
  hashPreimage,
  ownRemoval,
  peerRemoval,
  type RemoveReason,
  withRemoval,
} from './tlc-rules.ts';
import type { AddTlc, ChannelMessage, RemoveTlc, RevokeAndAck } from './wire.ts';

const b = (h: string) => hexToBytes(h);
const h = (x: Uint8Array) => bytesToHex(x);

export const WAITING_ACK = 'Unable to handle TLC command in waiting TLC ACK state';

export type { AddTlcCommand, RemoveReason } from './tlc-rules.ts';
export { ADD_TLC_ERRORS, checkOurAdd, checkPeerAdd, hashPreimage, ownRemoval, peerRemoval, withRemoval };

/** What the node learns from a finished round (for the payments layer). */
export type TlcNotice =
  /**
   * The peer announced a TLC (its AddTlc), not committed yet: nothing may be acted on until
   * 'received'; the node may only prepare (it peels the onion ahead, `onion-prepeel.ts`).
   */
  | { type: 'announced'; tlc: Tlc }
  | { type: 'received'; tlc: Tlc }
  | { type: 'fulfilled'; tlc: Tlc; preimage: string }
  /**
   * A TLC's preimage was given, before the round that removes the TLC ends ('fulfilled' follows):
   * - by the peer, for a TLC we offered: a valid preimage is all a payer needs for its proof and
   *   a forwarder to claim upstream (rust-lightning acts on update_fulfill_htlc the same way);
   * - by us, for a TLC we received, in the RemoveTlc we send: the payment is ours from then on
   *   (its invoice is Paid before the payer can learn the preimage).
   * A failure, by contrast, is acted on only once committed (`failed`).
   */
  | { type: 'preimage'; tlc: Tlc; preimage: string }
  | { type: 'failed'; tlc: Tlc; error: string }
  /** Our AddTlc, stepped back by a collision, could not be offered again (e.g. the peer shut down). */
  | { type: 'dropped'; tlc: Tlc };

/**
 * TLC rounds run in CHANNEL_READY and, after Shutdown, until the pending TLCs are resolved (the
 * reference's ShuttingDown before DROPPING_PENDING): removals and their rounds go on, new TLCs
 * do not (see `addTlc`, `onAddTlc`).
 */
function ready(ch: Channel): void {
  if (ch.state === 'CHANNEL_READY' || resolvingPending(ch)) return;
  throw new ChannelError('InvalidState', `Invalid state: channel is in state ${ch.state}`);
}

/**
 * A round is in flight, or the channel waits for the peer's ReestablishChannel: a TLC command
 * waits (the service queues it) or is refused with WAITING_ACK. A pipelined channel could send
 * its updates while its CommitmentSigned waits for the RevokeAndAck, but they would wait for that
 * answer all the same to be signed; held back instead, they go as one batch with the next
 * CommitmentSigned, one commit and one flush, not one per command (`pipelined.ts`).
 */
export function roundBusy(ch: Channel): boolean {
  return !!ch.round || !!ch.reestablishing || !!ch.pipelined?.log.awaitingRevoke;
}

function idle(ch: Channel): void {
  ready(ch);
  if (roundBusy(ch)) throw new ChannelError('WaitingTlcAck', WAITING_ACK);
}

/** The reference's refusal of a new TLC while shutting down (its state printed as Rust's Debug). */
export function shuttingDownAddError(ch: Channel): ChannelError {
  const order = [
    'OUR_SHUTDOWN_SENT',
    'THEIR_SHUTDOWN_SENT',
    'DROPPING_PENDING',
    'WAITING_COMMITMENT_CONFIRMATION',
  ];
  const names = order.filter((f) => ch.flags.includes(f as Channel['flags'][number]));
  const flags = names.length ? names.join(' | ') : '0x0';
  return new ChannelError(
    'InvalidState',
    `Invalid state: Invalid state ShuttingDown(ShuttingDownFlags(${flags})) for adding tlc`,
  );
}

/** `add_tlc`: announce a TLC and sign the peer's commitment that includes it. */
export function addTlc(ch0: Channel, c: AddTlcCommand, env: MachineEnv): Step & { tlcId: bigint } {
  const o = offer(ch0, c, env);
  const s = startRound(o.ch, env, [o.msg], ch0);
  return { ch: s.ch, effects: [send(o.msg), ...s.effects], tlcId: o.tlcId };
}

/** `remove_tlc`: settle (preimage) or fail a TLC the peer offered us. */
export function removeTlc(ch0: Channel, id: bigint, reason: RemoveReason, env: MachineEnv): Step {
  const r = settle(ch0, id, reason);
  const s = startRound(r.ch, env, [r.msg], ch0);
  return { ch: s.ch, effects: [send(r.msg), ...s.effects] };
}

/** One TLC command of a batch (`tlcBatch`). */
export type TlcCommand =
  | { type: 'addTlc'; cmd: AddTlcCommand }
  | { type: 'removeTlc'; id: bigint; reason: RemoveReason };

/** What became of one command of a batch: on its way (an AddTlc with its id), or refused. */
export type TlcOutcome = { ok: true; tlcId?: bigint } | { ok: false; error: ChannelError };

/**
 * Several TLC commands as the updates of one round (Lightning's and the reference's batching:
 * AddTlc / RemoveTlc × n, then a single CommitmentSigned). Each command is checked against the
 * channel as the earlier ones of the batch left it, so the peer's in-flight limits and our
 * balance bound the batch; a command that does not fit is refused with the error it would get
 * alone and the others still go. No round starts when every command is refused.
 */
export function tlcBatch(ch0: Channel, cmds: TlcCommand[], env: MachineEnv): Step {
  let ch = ch0;
  const msgs: ChannelMessage[] = [];
  const outcomes: TlcOutcome[] = [];
  for (const c of cmds) {
    try {
      if (c.type === 'addTlc') {
        const o = offer(ch, c.cmd, env);
        ch = o.ch;
        msgs.push(o.msg);
        outcomes.push({ ok: true, tlcId: o.tlcId });
      } else {
        const r = settle(ch, c.id, c.reason);
        ch = r.ch;
        msgs.push(r.msg);
        outcomes.push({ ok: true });
      }
    } catch (e) {
      if (!(e instanceof ChannelError)) throw e;
      outcomes.push({ ok: false, error: e });
    }
  }
  if (msgs.length === 0) return { ch: ch0, effects: [], outcomes };
  const s = startRound(ch, env, msgs, ch0);
  return { ch: s.ch, effects: [...msgs.map(send), ...s.effects], outcomes };
}

const send = (msg: ChannelMessage): Effect => ({ type: 'send', msg });

/** Checks an AddTlc command and applies it to the channel (no round started). */
function offer(
  ch0: Channel,
  c: AddTlcCommand,
  env: MachineEnv,
): { ch: Channel; msg: ChannelMessage; tlcId: bigint } {
  if (ch0.state === 'SHUTTING_DOWN') throw shuttingDownAddError(ch0);
  idle(ch0);
  // fnn answers an AddTlc command it refuses with the TlcErr its error maps to (`get_tlc_error`),
  // whose text is the code's name: TlcAmountIsTooLow → AmountBelowMinimum; more than the local
  // balance, too many TLCs or too much value in flight → TemporaryChannelFailure; an expiry too
  // soon → ExpiryTooSoon. Our settlement floor is one more limit on the balance.
  checkOurAdd(ch0, c, ch0.localBalance, env);
  const tlc: Tlc = {
    id: ch0.nextTlcId.offered,
    offered: true,
    amount: c.amount,
    paymentHash: h(c.paymentHash),
    expiry: c.expiry,
    hashAlgorithm: c.hashAlgorithm,
    onion: c.onion,
    added: 'announced',
    ...tlcKeysOrFail(ch0),
  };
  const ch: Channel = {
    ...ch0,
    tlcs: [...ch0.tlcs, tlc],
    localBalance: ch0.localBalance - c.amount,
    nextTlcId: { ...ch0.nextTlcId, offered: ch0.nextTlcId.offered + 1n },
  };
  const msg: ChannelMessage = {
    type: 'AddTlc',
    value: {
      channelId: b(ch.id),
      tlcId: tlc.id,
      amount: tlc.amount,
      paymentHash: c.paymentHash,
      expiry: c.expiry,
      hashAlgorithm: c.hashAlgorithm,
      onionPacket: c.onion,
    },
  };
  return { ch, msg, tlcId: tlc.id };
}

/** The TLC an AddTlc announces, as either side records it. */
export function announcedTlc(m: AddTlc, offered: boolean): Tlc {
  return {
    id: m.tlcId,
    offered,
    amount: m.amount,
    paymentHash: h(m.paymentHash),
    expiry: m.expiry,
    hashAlgorithm: m.hashAlgorithm,
    // A copy: the decoded message's bytes may be a view into a whole received frame.
    onion: m.onionPacket.slice(),
    added: 'announced',
  };
}

/** The keys of a TLC created now (`tlc-keys.ts`). */
function tlcKeysOrFail(ch: Channel): TlcKeyFields {
  const k = newTlcKeys(ch, () => keysOf(ch));
  if (!k)
    throw new ChannelError(
      'MissingState',
      `no per-commitment point of the peer for number ${ch.commitmentNumbers.local}`,
    );
  return k;
}

/** Checks a RemoveTlc command and applies it to the channel (no round started). */
function settle(ch0: Channel, id: bigint, reason: RemoveReason): { ch: Channel; msg: ChannelMessage } {
  idle(ch0);
  return ownRemoval(ch0, id, reason);
}

/** `commitment_signed` (dev): a round without updates. */
export function signCommitment(ch: Channel, env: MachineEnv): Step {
  idle(ch);
  return startRound(ch, env);
}

function startRound(ch0: Channel, env: MachineEnv, updates: ChannelMessage[] = [], before?: Channel): Step {
  const { ch, msg } = commitmentSigned(
    { ...ch0, round: { initiator: 'local', before: roundSnapshot(before ?? ch0, updates) } },
    env,
  );
  const cache = { updates: updates.map(cachedUpdate), commit: enc(msg), revoke: ch.cache?.revoke ?? null };
  return { ch: { ...ch, cache }, effects: [{ type: 'send', msg }, ...preimagesGiven(ch, updates)] };
}

/** The 'preimage' notices of the received TLCs our updates fulfil. */
function preimagesGiven(ch: Channel, updates: ChannelMessage[]): Effect[] {
  const out: Effect[] = [];
  for (const u of updates) {
    if (u.type !== 'RemoveTlc' || !('fulfill' in u.value.reason)) continue;
    const id = u.value.tlcId;
    const tlc = ch.tlcs.find((t) => !t.offered && t.id === id);
    if (tlc)
      out.push({ type: 'tlc', notice: { type: 'preimage', tlc, preimage: h(u.value.reason.fulfill) } });
  }
  return out;
}

// ---- the peer's messages -----------------------------------------------------------------------

/**
 * After a round: our stepped-back updates go out again, all in one new round. An AddTlc goes out
 * only under the id its owner was given; once one can no longer be offered (the TLC expired, the
 * peer shut down, …), the AddTlcs after it would take shifted ids, so they are dropped too. The
 * owner of a dropped AddTlc (a payment or a forward) is told, or it would wait forever.
 */
export function maybeRetry(s: Step, env: MachineEnv): Step {
  const retry = s.ch.retry;
  if (!retry?.length || s.ch.round) return s;
  const start: Channel = { ...s.ch, retry: [] };
  let ch = start;
  const msgs: ChannelMessage[] = [];
  const dropped: Effect[] = [];
  for (const x of retry) {
    const m = dec(x);
    if (m.type === 'AddTlc') {
      const o = tryOffer(ch, m.value, env);
      if (!o) {
        dropped.push(droppedNotice(m.value));
        continue;
      }
      ch = o.ch;
      msgs.push(o.msg);
    } else if (m.type === 'RemoveTlc') {
      const reason =
        'fulfill' in m.value.reason ? { preimage: m.value.reason.fulfill } : { error: m.value.reason.fail };
      try {
        const r = settle(ch, m.value.tlcId, reason);
        ch = r.ch;
        msgs.push(r.msg);
      } catch (e) {
        // No longer valid (e.g. the TLC was removed meanwhile): nothing to do.
        if (!(e instanceof ChannelError)) throw e;
      }
    }
  }
  if (msgs.length === 0) return { ch: start, effects: [...s.effects, ...dropped] };
  const r = startRound(ch, env, msgs, start);
  return { ch: r.ch, effects: [...s.effects, ...dropped, ...msgs.map(send), ...r.effects] };
}

/** Our AddTlc offered again under its own id, or null when that is no longer possible. */
function tryOffer(ch: Channel, m: AddTlc, env: MachineEnv): ReturnType<typeof offer> | null {
  if (ch.nextTlcId.offered !== m.tlcId) return null;
  try {
    return offer(
      ch,
      {
        amount: m.amount,
        paymentHash: m.paymentHash,
        expiry: m.expiry,
        hashAlgorithm: m.hashAlgorithm,
        onion: m.onionPacket,
      },
      env,
    );
  } catch (e) {
    if (!(e instanceof ChannelError)) throw e;
    return null;
  }
}

function droppedNotice(m: AddTlc): Effect {
  return { type: 'tlc', notice: { type: 'dropped', tlc: announcedTlc(m, true) } };
}

export function onAddTlc(ch00: Channel, m: AddTlc, env: MachineEnv): Step {
  // Once shutting down, only an AddTlc sent before the peer saw our Shutdown is taken (reference:
  // allowed while our Shutdown is the only one sent).
  if (ch00.state === 'SHUTTING_DOWN' && (ch00.flags.length !== 1 || ch00.flags[0] !== 'OUR_SHUTDOWN_SENT'))
    throw shuttingDownAddError(ch00);
  ready(ch00);
  if (replayedAdd(ch00, m)) return { ch: ch00, effects: [] };
  const c = collide(ch00);
  if (c.drop) return { ch: ch00, effects: [] };
  const ch0 = c.ch;
  checkPeerAdd(ch0, m);
  void env;
  const tlc: Tlc = { ...announcedTlc(m, false), ...tlcKeysOrFail(ch0) };
  return {
    ch: {
      ...ch0,
      ...remoteRound(ch0),
      tlcs: [...ch0.tlcs, tlc],
      remoteBalance: ch0.remoteBalance - m.amount,
      nextTlcId: { ...ch0.nextTlcId, received: m.tlcId + 1n },
    },
    effects: [{ type: 'tlc', notice: { type: 'announced', tlc } }],
  };
}

export function onRemoveTlc(ch00: Channel, m: RemoveTlc): Step {
  ready(ch00);
  if (replayedRemove(ch00, m)) return { ch: ch00, effects: [] };
  const c = collide(ch00);
  if (c.drop) return { ch: ch00, effects: [] };
  const { ch, effects } = peerRemoval(c.ch, m);
  return { ch: { ...ch, ...remoteRound(ch) }, effects };
}

/**
 * The peer's round, from its first update on. What we cached of an earlier round is stale now
 * (the peer finished it): a reconnect before our CommitmentSigned of this round must replay
 * nothing of it — only our last RevokeAndAck stays, for a peer that missed it.
 */
function remoteRound(ch: Channel): Pick<Channel, 'round' | 'cache'> {
  if (ch.round?.initiator === 'remote') return { round: ch.round, cache: ch.cache };
  return {
    round: { initiator: 'remote' },
    cache: { updates: [], commit: null, revoke: ch.cache?.revoke ?? null },
  };
}

/**
 * After a reconnect the peer replays its whole unacknowledged round (`reestablish.ts`): the
 * updates of it we already took before the cut come again and are ignored.
 */
function replayedAdd(ch: Channel, m: AddTlc): boolean {
  if (ch.round?.initiator !== 'remote') return false;
  const t = ch.tlcs.find((x) => !x.offered && x.id === m.tlcId);
  return !!t && t.added === 'announced' && t.amount === m.amount && t.paymentHash === h(m.paymentHash);
}

function replayedRemove(ch: Channel, m: RemoveTlc): boolean {
  if (ch.round?.initiator !== 'remote') return false;
  const r = ch.tlcs.find((x) => x.offered && x.id === m.tlcId)?.removal;
  if (r?.state !== 'announced') return false;
  return 'fulfill' in m.reason ? r.preimage === h(m.reason.fulfill) : r.error === h(m.reason.fail);
}

/** A fresh nonce for our pool, advertised to the peer. */
export function advertise(ch: Channel, env: MachineEnv): { ch: Channel; effect: SendEffect } {
  const n = freshNonce(env, ch);
  return {
    ch: { ...ch, nonces: { ...ch.nonces, mine: [...ch.nonces.mine, nonceData(n)] } },
    effect: {
      type: 'send',
      msg: { type: 'TxComplete', value: { channelId: b(ch.id), nextCommitmentNonce: n.public } },
    },
  };
}

/** The peer signed our next commitment. */
export function onCommitmentSignedReady(
  ch00: Channel,
  partial: Uint8Array,
  nonce: Uint8Array,
  env: MachineEnv,
): Step {
  ready(ch00);
  // A CommitmentSigned that opens the peer's round while ours is unacknowledged: a collision.
  const c = collide(ch00);
  if (c.drop) return { ch: ch00, effects: [] };
  const ch0 = c.ch;
  const initiator = ch0.round?.initiator ?? 'remote';
  let ch = completeOwnCommitment(
    { ...ch0, round: ch0.round ?? { initiator: 'remote' } },
    partial,
    nonce,
    env,
  );
  const effects: Effect[] = [];
  if (!isFnn(ch)) {
    const ad = advertise(ch, env);
    ch = ad.ch;
    effects.push(ad.effect);
  }
  // Revoke our previous commitment (version R − 1). Strand: we sign first, the peer completes.
  const revoked = ch.commitmentNumbers.remote - 1n;
  const rv = revocationToSign(ch, true, revoked, env);
  const k = keysOf(ch);
  const s = isFnn(ch)
    ? signOwnRevocation(ch, rv.keys, rv.msg, env)
    : signFirstRevocation(ch, rv.keys, rv.msg);
  ch = {
    ...s.ch,
    commitmentNumbers: { ...ch.commitmentNumbers, remote: ch.commitmentNumbers.remote + 1n },
  };
  const raa: RevokeAndAck = {
    channelId: b(ch.id),
    revocationPartialSignature: s.partial,
    // The point of our commitment number R as it now stands (the reference's
    // `get_current_local_commitment_point`): the peer files it under its L after this message.
    nextPerCommitmentPoint: commitmentPoint(k.commitmentSeed, ch.commitmentNumbers.remote),
    nextRevocationNonce: s.nonce,
  };
  const raaMsg: ChannelMessage = { type: 'RevokeAndAck', value: raa };
  effects.push({ type: 'send', msg: raaMsg });
  if (initiator === 'remote') {
    // Our turn: sign the peer's next commitment, with the same updates.
    const cs = commitmentSigned(ch, env);
    ch = { ...cs.ch, cache: { updates: [], commit: enc(cs.msg), revoke: enc(raaMsg) } };
    effects.push({ type: 'send', msg: cs.msg });
    return { ch, effects };
  }
  // Our round is over: the peer has acknowledged our updates (they are never replayed again, and
  // the TLCs the references point to go now); only our RevokeAndAck may still need a replay.
  ch = { ...ch, cache: { updates: [], commit: ch.cache?.commit ?? null, revoke: enc(raaMsg) } };
  return maybeRetry(finishRound(ch, effects), env);
}

/** Strand: our revocation, first signer with a deterministic nonce (the peer completes). */
export function signFirstRevocation(ch: Channel, keys: Uint8Array[], msg: Uint8Array) {
  const theirNonce = ch.nonces.theirs[0];
  if (!theirNonce) throw new ChannelError('NonceExhausted', 'no nonce of the peer left');
  const k = keysOf(ch);
  const s = signFirst(k.fundingKey, b(theirNonce), keys, msg, k.fundingPubkey);
  return { ch: { ...ch, nonces: { ...ch.nonces, theirs: ch.nonces.theirs.slice(1) } }, ...s };
}

/** The peer revoked its previous commitment: we complete and keep the revocation signature. */
export function onRevokeAndAck(ch0: Channel, m: RevokeAndAck, env: MachineEnv): Step {
  ready(ch0);
  if (!ch0.round) throw new ChannelError('UnexpectedMessage', 'RevokeAndAck without a round in progress');
  if (ch0.round.initiator === 'local' && ch0.round.gotRevoke)
    throw new ChannelError('UnexpectedMessage', 'second RevokeAndAck');
  const revoked = ch0.commitmentNumbers.local - 1n;
  const rv = revocationToSign(ch0, false, revoked, env);
  const k = keysOf(ch0);
  const session = (myNonce: NoncePair, theirNonce: Uint8Array) =>
    complete({
      mySecret: k.fundingKey,
      myPubkey: k.fundingPubkey,
      myNonce,
      theirPubkey: b((ch0.remote as PartyParams).fundingPubkey),
      theirNonce,
      theirPartial: m.revocationPartialSignature,
      keys: rv.keys,
      msg: rv.msg,
    });
  let sig: Uint8Array;
  let ch1: Channel;
  try {
    if (isFnn(ch0)) {
      const r = completePeerRevocation(ch0, m.nextRevocationNonce, session);
      ch1 = r.ch;
      sig = r.value;
    } else {
      const my = ch0.nonces.mine[0];
      if (!my) throw new ChannelError('NonceExhausted', 'no nonce of ours left');
      sig = session({ secret: b(my.secret), public: b(my.public) }, m.nextRevocationNonce);
      ch1 = { ...ch0, nonces: { ...ch0.nonces, mine: ch0.nonces.mine.slice(1) } };
    }
  } catch (e) {
    if (e instanceof SignatureError)
      throw new ChannelError('InvalidSignature', 'invalid revocation signature from the peer');
    throw e;
  }
  const L = ch0.commitmentNumbers.local + 1n;
  let ch: Channel = withRemotePoint(
    {
      ...ch1,
      revocation: { version: revoked, signature: h(sig), args: h(rv.argsPrefix) },
      commitmentNumbers: { ...ch0.commitmentNumbers, local: L },
    },
    L,
    m.nextPerCommitmentPoint,
  );
  const effects: Effect[] = [];
  if (!isFnn(ch)) {
    // The peer needs this nonce only after our next message (`held-sends.ts`): it may wait.
    const ad = advertise(ch, env);
    ch = ad.ch;
    effects.push({ ...ad.effect, mayWait: true });
  }
  if (ch.round?.initiator === 'local') {
    return { ch: { ...ch, round: { ...ch.round, gotRevoke: true } }, effects };
  }
  return maybeRetry(finishRound(ch, effects), env);
}

/** Both commitments now include the round's updates: they are committed. */
function finishRound(ch: Channel, effects: Effect[]): Step {
  const notices: TlcNotice[] = [];
  const tlcs: Tlc[] = [];
  for (const t of ch.tlcs) {
    if (t.removal) {
      if (t.removal.preimage) notices.push({ type: 'fulfilled', tlc: t, preimage: t.removal.preimage });
      else notices.push({ type: 'failed', tlc: t, error: t.removal.error ?? '0x' });
      continue; // fully removed
    }
    if (t.added === 'announced') {
      const c = { ...t, added: 'committed' as const };
      if (!t.offered) notices.push({ type: 'received', tlc: c });
      tlcs.push(c);
    } else tlcs.push(t);
  }
  return {
    ch: { ...ch, tlcs, round: null },
    effects: [...effects, ...notices.map((n) => ({ type: 'tlc' as const, notice: n }))],
  };
}

/** A nonce the peer advertised outside the funding collaboration. */
export function onNonceAdvert(ch: Channel, nonce: Uint8Array): Step {
  // fnn mode: the peer's nonces come in its CommitmentSigned only; a pool would never be used.
  if (ch.rules === 'fnn') return { ch, effects: [] };
  return { ch: addTheirs(ch, [h(nonce)]), effects: [] };
}

/**
 * Appends nonces the peer advertised, skipping any it advertised before (a reconnect re-sends
 * its whole pool; what we already have or already used must not come back).
 */
export function addTheirs(ch: Channel, nonces: string[]): Channel {
  const seen = new Set((ch.nonces.seen ?? []).map(seenKey));
  const fresh = nonces.filter((n) => !seen.has(seenKey(n)) && !ch.nonces.theirs.includes(n));
  if (fresh.length === 0) return ch;
  return {
    ...ch,
    nonces: {
      ...ch.nonces,
      theirs: [...ch.nonces.theirs, ...fresh],
      seen: [...(ch.nonces.seen ?? []), ...fresh.map(seenKey)].slice(-64),
    },
  };
}
