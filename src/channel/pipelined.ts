/**
 * Pipelined TLC updates (docs/pipelined-commitments.md), pure: the channel's side of Lightning's
 * update rules on Strand's messages, for Strand channels that agreed on them. Not wired into the
 * machine or the service yet (step 1 of that plan, with `update-log.ts`).
 *
 * - Updates (AddTlc, RemoveTlc) go whenever the channel is ready; they start no round.
 * - `signP` sends a CommitmentSigned when some update is uncovered and none of ours waits for its
 *   RevokeAndAck; the caller decides when (the service: at the end of a turn).
 * - A peer's CommitmentSigned is answered at once with a RevokeAndAck of our previous commitment.
 * - Each commitment is built from its view in the log (`viewOf`), not from the channel's balances.
 *
 * The channel's `localBalance` / `remoteBalance` and each TLC's `removal` keep their meaning for
 * the rest of the node (moved when an update is sent or received); `added: 'committed'` means
 * irrevocably committed, the moment a received TLC may be acted on, as in the round model.
 *
 * Strand's nonce pools are used as the round model uses them: each CommitmentSigned or
 * RevokeAndAck we send takes the head of the peer's pool, each one of the peer's we complete
 * takes the head of ours and advertises a fresh one. Both directions keep their order, so both
 * sides take the same nonces; with at most one CommitmentSigned and one RevokeAndAck of ours
 * unanswered, a pool of two never runs dry.
 */
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { commitmentSigned, completeOwnCommitment } from './commitment.ts';
import { ChannelError } from './errors.ts';
import { isFnn } from './fnn-nonces.ts';
import { commitmentPoint, keysOf } from './keys.ts';
import { complete, SignatureError } from './musig.ts';
import { revocationToSign } from './revocation.ts';
import { addMessageOf, dec, enc, removeMessageOf } from './round.ts';
import type { Channel, PartyParams, PipelinedState, Tlc } from './state.ts';
import { resolvingPending, tlcKey } from './state.ts';
import type { Effect, MachineEnv, Step } from './step.ts';
import {
  type AddTlcCommand,
  advertise,
  announcedTlc,
  checkOurAdd,
  checkPeerAdd,
  onNonceAdvert,
  ownRemoval,
  peerRemoval,
  type RemoveReason,
  shuttingDownAddError,
  signFirstRevocation,
  type TlcNotice,
  WAITING_ACK,
} from './tlc.ts';
import { pipelinedTlcKeys } from './tlc-keys.ts';
import {
  commitmentReceived,
  disconnected,
  emptyLog,
  irrevocable,
  type LogEntry,
  LogError,
  logReceived,
  logSent,
  type Owner,
  type Reestablish,
  retransmissions,
  revokeReceived,
  signRemote,
  trimmed,
  type UpdateLog,
  uncoveredByOurSignature,
  viewOf,
} from './update-log.ts';
import type { AddTlc, ChannelMessage, ReestablishChannel, RemoveTlc, RevokeAndAck } from './wire.ts';

const b = (x: string) => hexToBytes(x);
const h = (x: Uint8Array) => bytesToHex(x);
const send = (msg: ChannelMessage): Effect => ({ type: 'send', msg });
const other = (o: Owner): Owner => (o === 'local' ? 'remote' : 'local');

/**
 * A ready Strand channel with no TLC and no round in progress, moved to pipelined updates. Its
 * current commitments are the log's starting points: ours is the version before the one we would
 * complete next, the peer's the one before the one we would sign next.
 */
export function startPipelined(ch: Channel): Channel {
  if (ch.state !== 'CHANNEL_READY' || ch.round || ch.tlcs.length > 0 || isFnn(ch))
    throw new ChannelError('InvalidState', 'pipelined updates start on a ready, idle Strand channel');
  const log = emptyLog(ch.commitmentNumbers.remote - 1n, ch.commitmentNumbers.local - 1n);
  return { ...ch, pipelined: { log, base: { local: ch.localBalance, remote: ch.remoteBalance } } };
}

function stateOf(ch: Channel): PipelinedState {
  if (!ch.pipelined) throw new ChannelError('InvalidState', 'the channel does not run pipelined updates');
  return ch.pipelined;
}

/**
 * The channel with a new log. The commitment numbers follow it: L (the version of the peer's
 * commitment we sign next) and R (of ours the peer signs next) are one past the latest of each.
 */
function withLog(ch: Channel, log: UpdateLog): Channel {
  return {
    ...ch,
    pipelined: { ...stateOf(ch), log },
    commitmentNumbers: { local: log.remote + 1n, remote: log.local + 1n },
  };
}

function ready(ch: Channel): PipelinedState {
  const p = stateOf(ch);
  if (ch.reestablishing) throw new ChannelError('WaitingTlcAck', WAITING_ACK);
  // Shutting down with TLCs to resolve, removals and their signatures go on (as in rounds).
  if (ch.state !== 'CHANNEL_READY' && !resolvingPending(ch))
    throw new ChannelError('InvalidState', `Invalid state: channel is in state ${ch.state}`);
  return p;
}

// ---- commitments from views --------------------------------------------------------------------

/** A TLC as a commitment that does not hold its removal sees it (one copy per TLC object). */
const pendingCopies = new WeakMap<Tlc, Tlc>();
function pendingOf(t: Tlc): Tlc {
  if (!t.removal) return t;
  let c = pendingCopies.get(t);
  if (!c) {
    c = { ...t, removal: undefined };
    pendingCopies.set(t, c);
  }
  return c;
}

/**
 * The channel as one commitment holds it: ours at version `n` (`side` 'local') or the peer's,
 * with its TLCs and balances, ready for `buildCommitment`. A commitment that would leave a side
 * below zero is refused: only a peer that broke the rules can ask us to sign or accept one.
 */
export function viewChannel(ch: Channel, side: Owner, n: bigint): Channel {
  const p = stateOf(ch);
  const v = viewOf(p.log, side, n);
  const want = new Set([
    ...v.offeredByLocal.map((id) => `o${id}`),
    ...v.offeredByRemote.map((id) => `r${id}`),
  ]);
  const tlcs = ch.tlcs.filter((t) => want.has(tlcKey(t))).map(pendingOf);
  if (tlcs.length !== want.size)
    throw new ChannelError('MissingState', `commitment ${side} ${n} holds a TLC the channel lost`);
  const localBalance = p.base.local + v.toLocal;
  const remoteBalance = p.base.remote + v.toRemote;
  if (localBalance < 0n || remoteBalance < 0n)
    throw new ChannelError('InvalidMessage', `commitment ${side} ${n} would hold a negative balance`);
  const commitmentNumbers =
    side === 'remote' ? { ...ch.commitmentNumbers, local: n } : { ...ch.commitmentNumbers, remote: n };
  return { ...ch, tlcs, localBalance, remoteBalance, commitmentNumbers };
}

/**
 * What `side` can still spend in every commitment that may come: its balance less all it has
 * offered, plus only the removals that credit it irrevocably. Our own adds are checked against
 * this (the peer's against its announced balance, the same rule a round-model peer meets: a
 * commitment that breaks it is refused when built).
 */
export function spendable(ch: Channel, side: Owner): bigint {
  const { log, base } = stateOf(ch);
  let x = base[side] + (side === 'local' ? log.settled.toLocal : log.settled.toRemote);
  const amounts = new Map<string, bigint>();
  for (const e of log.entries) {
    if (e.update.type !== 'add') continue;
    amounts.set(`${e.owner}:${e.update.tlcId}`, e.update.amount);
    if (e.owner === side) x -= e.update.amount;
  }
  for (const e of log.entries) {
    if (e.update.type === 'add') continue;
    // A removal is sent by the TLC's receiver: a fulfil credits it, a fail the offerer.
    const credited = e.update.type === 'fulfil' ? e.owner : other(e.owner);
    if (credited !== side || !irrevocable(log, e)) continue;
    const amount = amounts.get(`${other(e.owner)}:${e.update.tlcId}`);
    if (amount === undefined)
      throw new ChannelError('MissingState', `no add of TLC ${e.update.tlcId} in the log`);
    x += amount;
  }
  return x;
}

// ---- our updates and signatures ----------------------------------------------------------------

/** `add_tlc` on a pipelined channel: the AddTlc goes now; a later `signP` covers it. */
export function addTlcP(ch0: Channel, c: AddTlcCommand, env: MachineEnv): Step & { tlcId: bigint } {
  if (ch0.state === 'SHUTTING_DOWN') throw shuttingDownAddError(ch0);
  const p = ready(ch0);
  checkOurAdd(ch0, c, spendable(ch0, 'local'), env);
  const id = ch0.nextTlcId.offered;
  const msg: ChannelMessage = {
    type: 'AddTlc',
    value: {
      channelId: b(ch0.id),
      tlcId: id,
      amount: c.amount,
      paymentHash: c.paymentHash,
      expiry: c.expiry,
      hashAlgorithm: c.hashAlgorithm,
      onionPacket: c.onion,
    },
  };
  const tlc: Tlc = {
    ...announcedTlc(msg.value as AddTlc, true),
    onion: c.onion,
    ...pipelinedTlcKeys(ch0, true, p.log.remote + 1n, () => keysOf(ch0)),
  };
  const ch = withLog(
    {
      ...ch0,
      tlcs: [...ch0.tlcs, tlc],
      localBalance: ch0.localBalance - c.amount,
      nextTlcId: { ...ch0.nextTlcId, offered: id + 1n },
    },
    logSent(p.log, { type: 'add', tlcId: id, amount: c.amount }),
  );
  return { ch, effects: [send(msg)], tlcId: id };
}

/**
 * `remove_tlc` on a pipelined channel: a TLC the peer offered, irrevocably committed, settled with
 * its preimage or failed. A preimage is acted on at once (the 'preimage' notice), as in rounds.
 */
export function removeTlcP(ch0: Channel, id: bigint, reason: RemoveReason): Step {
  const p = ready(ch0);
  const r = ownRemoval(ch0, id, reason);
  const tlc = ch0.tlcs.find((t) => !t.offered && t.id === id) as Tlc;
  const effects: Effect[] = [send(r.msg)];
  if ('preimage' in reason)
    effects.push({ type: 'tlc', notice: { type: 'preimage', tlc, preimage: h(reason.preimage) } });
  const update =
    'preimage' in reason ? ({ type: 'fulfil', tlcId: id } as const) : ({ type: 'fail', tlcId: id } as const);
  return { ch: withLog(r.ch, logSent(p.log, update)), effects };
}

/** Whether `signP` would send a CommitmentSigned now. */
export function canSign(ch: Channel): boolean {
  const { log } = stateOf(ch);
  return !ch.reestablishing && !log.awaitingRevoke && uncoveredByOurSignature(log).length > 0;
}

/**
 * Our CommitmentSigned for the peer's next commitment, covering what the log's rules say; null
 * when nothing is uncovered or our last one still waits for its RevokeAndAck.
 */
export function signP(ch: Channel, env: MachineEnv): Step | null {
  if (!canSign(ch)) return null;
  const p = ready(ch);
  const s = signRemote(p.log);
  const next = withLog(ch, s.log);
  const cs = commitmentSigned(viewChannel(next, 'remote', s.number), env);
  const p2 = stateOf(next);
  return {
    ch: { ...next, nonces: cs.ch.nonces, pipelined: { ...p2, sent: { ...p2.sent, commit: enc(cs.msg) } } },
    effects: [send(cs.msg)],
  };
}

// ---- the peer's messages -----------------------------------------------------------------------

export function onAddTlcP(ch0: Channel, m: AddTlc): Step {
  // Once shutting down, only an AddTlc sent before the peer saw our Shutdown is taken.
  if (ch0.state === 'SHUTTING_DOWN' && (ch0.flags.length !== 1 || ch0.flags[0] !== 'OUR_SHUTDOWN_SENT'))
    throw shuttingDownAddError(ch0);
  const p = ready(ch0);
  checkPeerAdd(ch0, m);
  // The first of our commitments that can hold it: the one after the peer's last CommitmentSigned
  // before it (`pipelinedTlcKeys`).
  const tlc: Tlc = {
    ...announcedTlc(m, false),
    ...pipelinedTlcKeys(ch0, false, p.log.local + 1n, () => keysOf(ch0)),
  };
  const ch = withLog(
    {
      ...ch0,
      tlcs: [...ch0.tlcs, tlc],
      remoteBalance: ch0.remoteBalance - m.amount,
      nextTlcId: { ...ch0.nextTlcId, received: m.tlcId + 1n },
    },
    logReceived(p.log, { type: 'add', tlcId: m.tlcId, amount: m.amount }),
  );
  return { ch, effects: [{ type: 'tlc', notice: { type: 'announced', tlc } }] };
}

export function onRemoveTlcP(ch0: Channel, m: RemoveTlc): Step {
  const p = ready(ch0);
  // The peer may remove only what it holds irrevocably; it learns that after we do.
  const r = peerRemoval(ch0, m);
  const update =
    'fulfill' in m.reason
      ? ({ type: 'fulfil', tlcId: m.tlcId } as const)
      : ({ type: 'fail', tlcId: m.tlcId } as const);
  return { ch: withLog(r.ch, logReceived(p.log, update)), effects: r.effects };
}

/**
 * The peer signed our next commitment: we complete it (it is our latest from now on), advertise a
 * fresh nonce and revoke the one before with a RevokeAndAck, at once.
 */
export function onCommitmentSignedP(
  ch0: Channel,
  partial: Uint8Array,
  nonce: Uint8Array,
  env: MachineEnv,
): Step {
  const p = ready(ch0);
  const r = commitmentReceived(p.log);
  const next = withLog(ch0, r.log);
  const view = viewChannel(next, 'local', r.number);
  const done = completeOwnCommitment(view, partial, nonce, env);
  let ch: Channel = {
    ...next,
    nonces: done.nonces,
    latestCommitmentTx: done.latestCommitmentTx,
    latestCommitmentTxHash: done.latestCommitmentTxHash,
  };
  const ad = advertise(ch, env);
  ch = ad.ch;
  const rv = revocationToSign(view, true, r.number - 1n, env);
  const s = signFirstRevocation(ch, rv.keys, rv.msg);
  ch = s.ch;
  const raa: RevokeAndAck = {
    channelId: b(ch.id),
    revocationPartialSignature: s.partial,
    // As in rounds: the point of our next commitment number (unused by pipelined TLC keys).
    nextPerCommitmentPoint: commitmentPoint(keysOf(ch).commitmentSeed, r.number + 1n),
    nextRevocationNonce: s.nonce,
  };
  const raaMsg: ChannelMessage = { type: 'RevokeAndAck', value: raa };
  const p2 = stateOf(ch);
  ch = { ...ch, pipelined: { ...p2, sent: { ...p2.sent, revoke: enc(raaMsg) } } };
  return committed(ch, p.log, [ad.effect, send(raaMsg)]);
}

/** The peer revoked the commitment before the one we signed last: we keep the revocation. */
export function onRevokeAndAckP(ch0: Channel, m: RevokeAndAck, env: MachineEnv): Step {
  const p = ready(ch0);
  if (!p.log.awaitingRevoke)
    throw new ChannelError('UnexpectedMessage', 'RevokeAndAck without a CommitmentSigned waiting for it');
  const revoked = p.log.remote - 1n;
  const view = viewChannel(ch0, 'remote', p.log.remote);
  const rv = revocationToSign(view, false, revoked, env);
  const my = ch0.nonces.mine[0];
  if (!my) throw new ChannelError('NonceExhausted', 'no nonce of ours left');
  const k = keysOf(ch0);
  let sig: Uint8Array;
  try {
    sig = complete({
      mySecret: k.fundingKey,
      myPubkey: k.fundingPubkey,
      myNonce: { secret: b(my.secret), public: b(my.public) },
      theirPubkey: b((ch0.remote as PartyParams).fundingPubkey),
      theirNonce: m.nextRevocationNonce,
      theirPartial: m.revocationPartialSignature,
      keys: rv.keys,
      msg: rv.msg,
    });
  } catch (e) {
    if (e instanceof SignatureError)
      throw new ChannelError('InvalidSignature', 'invalid revocation signature from the peer');
    throw e;
  }
  let ch = withLog(
    {
      ...ch0,
      nonces: { ...ch0.nonces, mine: ch0.nonces.mine.slice(1) },
      revocation: { version: revoked, signature: h(sig), args: h(rv.argsPrefix) },
    },
    revokeReceived(p.log),
  );
  // As in rounds, the peer needs this nonce only after our next message (`held-sends.ts`).
  const ad = advertise(ch, env);
  ch = ad.ch;
  return committed(ch, p.log, [{ ...ad.effect, mayWait: true }]);
}

/**
 * After a CommitmentSigned or a RevokeAndAck: the updates it made irrevocable. A TLC both sides
 * now hold for good is committed (a received one is acted on: 'received'); a removal held for
 * good is final ('fulfilled' / 'failed'), and the TLC leaves the channel and the log.
 */
function committed(ch0: Channel, before: UpdateLog, effects: Effect[]): Step {
  const p = stateOf(ch0);
  const was = new Set(before.entries.filter((e) => irrevocable(before, e)).map(entryKey));
  const notices: TlcNotice[] = [];
  // TLCs by key; the adds made irrevocable now become committed in one pass over the TLCs.
  const byKey = new Map(ch0.tlcs.map((t) => [tlcKey(t), t]));
  const nowCommitted = new Set<string>();
  for (const e of p.log.entries) {
    if (was.has(entryKey(e)) || !irrevocable(p.log, e)) continue;
    if (e.update.type === 'add') {
      nowCommitted.add(`${e.owner === 'local' ? 'o' : 'r'}${e.update.tlcId}`);
      continue;
    }
    const t = byKey.get(`${e.owner === 'remote' ? 'o' : 'r'}${e.update.tlcId}`);
    if (!t?.removal)
      throw new ChannelError('MissingState', `a removal of TLC ${e.update.tlcId} the channel lost`);
    if (t.removal.preimage) notices.push({ type: 'fulfilled', tlc: t, preimage: t.removal.preimage });
    else notices.push({ type: 'failed', tlc: t, error: t.removal.error ?? '0x' });
  }
  let tlcs = ch0.tlcs;
  if (nowCommitted.size)
    tlcs = tlcs.map((t) => {
      if (!nowCommitted.has(tlcKey(t))) return t;
      const c = { ...t, added: 'committed' as const };
      if (!t.offered) notices.push({ type: 'received', tlc: c });
      return c;
    });
  const log = trimmed(p.log);
  if (log !== p.log) {
    const live = new Set(
      log.entries
        .filter((e) => e.update.type === 'add')
        .map((e) => `${e.owner === 'local' ? 'o' : 'r'}${e.update.tlcId}`),
    );
    tlcs = tlcs.filter((t) => live.has(tlcKey(t)));
  }
  return {
    ch: withLog({ ...ch0, tlcs }, log),
    effects: [...effects, ...notices.map((notice) => ({ type: 'tlc' as const, notice }))],
  };
}

const entryKey = (e: LogEntry) => `${e.owner}:${e.n}`;

/** A peer's message on a pipelined channel (the TLC updates and what commits them). */
export function onPeerMessageP(ch: Channel, msg: ChannelMessage, env: MachineEnv): Step {
  switch (msg.type) {
    case 'AddTlc':
      return onAddTlcP(ch, msg.value);
    case 'RemoveTlc':
      return onRemoveTlcP(ch, msg.value);
    case 'CommitmentSigned':
      return onCommitmentSignedP(ch, msg.value.fundingTxPartialSignature, msg.value.nextCommitmentNonce, env);
    case 'RevokeAndAck':
      return onRevokeAndAckP(ch, msg.value, env);
    case 'TxComplete':
      return onNonceAdvert(ch, msg.value.nextCommitmentNonce);
    case 'ReestablishChannel':
      return onReestablishP(ch, msg.value);
    default:
      throw new ChannelError('UnexpectedMessage', `${msg.type} is not a pipelined update`);
  }
}

// ---- reconnection ------------------------------------------------------------------------------

/**
 * A new connection with the peer (or the node restarted): what no CommitmentSigned covered is
 * forgotten on both sides (Lightning's rule). The peer's such updates leave the channel (it sends
 * them again if it still wants them); ours stay in the channel, out of the log, and go again once
 * the peer's counters are in (`onReestablishP`). Our counters go out; until the peer's arrive,
 * nothing is sent and the peer's updates are ignored (`reestablishing`, as in rounds).
 */
export function reconnectedP(ch0: Channel): Step {
  const p = stateOf(ch0);
  const d = disconnected(p.log);
  const kept = new Set(d.log.entries);
  let tlcs = ch0.tlcs;
  let received = ch0.nextTlcId.received;
  for (const e of p.log.entries) {
    if (kept.has(e) || e.owner !== 'remote') continue;
    const id = e.update.tlcId;
    if (e.update.type === 'add') {
      tlcs = tlcs.filter((t) => t.offered || t.id !== id);
      if (id < received) received = id;
    } else tlcs = tlcs.map((t) => (t.offered && t.id === id ? { ...t, removal: undefined } : t));
  }
  const ch = withLog(
    {
      ...ch0,
      tlcs,
      nextTlcId: { ...ch0.nextTlcId, received },
      ...announcedBalances(p, d.log, tlcs),
      reestablishing: true,
    },
    d.log,
  );
  return { ch, effects: [send(reestablishOfP(ch))] };
}

/** Our ReestablishChannel: our latest commitment and the peer's latest we hold acknowledged. */
export function reestablishOfP(ch: Channel): ChannelMessage {
  const { log } = stateOf(ch);
  return {
    type: 'ReestablishChannel',
    value: { channelId: b(ch.id), localCommitmentNumber: log.local, remoteCommitmentNumber: log.remoteAcked },
  };
}

/**
 * The balances as every update sent or received moves them (the meaning `localBalance` and
 * `remoteBalance` keep on a pipelined channel): the log's settled moves and each TLC the channel
 * still holds, with its removal if it has one.
 */
function announcedBalances(p: PipelinedState, log: UpdateLog, tlcs: Tlc[]) {
  let local = p.base.local + log.settled.toLocal;
  let remote = p.base.remote + log.settled.toRemote;
  for (const t of tlcs) {
    const offerer = t.offered ? 'local' : 'remote';
    const to = !t.removal ? null : t.removal.preimage ? other(offerer) : offerer;
    if (offerer === 'local') local -= t.amount;
    else remote -= t.amount;
    if (to === 'local') local += t.amount;
    else if (to === 'remote') remote += t.amount;
  }
  return { localBalance: local, remoteBalance: remote };
}

/** The peer's counters, against ours: what a disconnect explains, or one side lost state. */
export type PipelinedVerdict =
  | { kind: 'resume' }
  | { kind: 'we-are-behind' | 'peer-is-behind'; reason: string };

export function verdictP(ch: Channel, peer: Reestablish): PipelinedVerdict {
  const { log } = stateOf(ch);
  const numbers = `ours (${log.local}, ${log.remoteAcked} of ${log.remote}), the peer's (${peer.local}, ${peer.remoteAcked})`;
  if (peer.local > log.remote || peer.remoteAcked > log.local)
    return { kind: 'we-are-behind', reason: `our channel state is outdated: commitment numbers ${numbers}` };
  if (peer.local + 1n < log.remote || peer.remoteAcked + 1n < log.local)
    return {
      kind: 'peer-is-behind',
      reason: `the peer's channel state is outdated: commitment numbers ${numbers}`,
    };
  return { kind: 'resume' };
}

/**
 * The peer's counters: our nonce pool advertised again (the peer keeps what it lacks), our last
 * CommitmentSigned (after the updates it covers) and our last RevokeAndAck if the peer lacks them,
 * in the order they first went, then our updates that were forgotten, offered again in their
 * order (an AddTlc keeps its id; its keys follow the commitment number it now goes with).
 * A verdict other than 'resume' is the caller's (`outdated.ts`); here it is an error.
 */
export function onReestablishP(ch0: Channel, m: ReestablishChannel): Step {
  const { reestablishing: _, ...rest } = ch0;
  let ch: Channel = rest;
  const p = stateOf(ch);
  const peer: Reestablish = { local: m.localCommitmentNumber, remoteAcked: m.remoteCommitmentNumber };
  const verdict = verdictP(ch, peer);
  if (verdict.kind !== 'resume') throw new ChannelError('InvalidMessage', verdict.reason);
  const effects: Effect[] = ch.nonces.mine.map((n) =>
    send({ type: 'TxComplete', value: { channelId: b(ch.id), nextCommitmentNonce: b(n.public) } }),
  );
  let owed: ReturnType<typeof retransmissions>;
  try {
    owed = retransmissions(p.log, peer);
  } catch (e) {
    if (e instanceof LogError) throw new ChannelError('InvalidMessage', e.message);
    throw e;
  }
  for (const r of owed) {
    const cached = r.type === 'commit' ? p.sent?.commit : p.sent?.revoke;
    if (!cached) throw new ChannelError('MissingState', `no ${r.type} of ours kept to send again`);
    if (r.type === 'commit') for (const e of r.updates) effects.push(send(updateMessage(ch, e.update)));
    effects.push(send(dec(cached)));
  }
  // Ours that no CommitmentSigned covered: in the channel, not in the log (`reconnectedP`).
  const inLog = new Set(
    p.log.entries.map((e) => `${e.owner === 'local' ? 'o' : 'r'}${e.update.tlcId}:${e.update.type}`),
  );
  let log = p.log;
  for (const t of ch.tlcs) {
    if (t.offered || !t.removal || inLog.has(`o${t.id}:${t.removal.preimage ? 'fulfil' : 'fail'}`)) continue;
    const update = t.removal.preimage
      ? ({ type: 'fulfil', tlcId: t.id } as const)
      : ({ type: 'fail', tlcId: t.id } as const);
    log = logSent(log, update);
    effects.push(send(updateMessage(ch, update)));
  }
  const adds = ch.tlcs
    .filter((t) => t.offered && !inLog.has(`o${t.id}:add`))
    .sort((x, y) => (x.id < y.id ? -1 : 1));
  if (adds.length) {
    const keys = pipelinedTlcKeys(ch, true, log.remote + 1n, () => keysOf(ch));
    const again = new Set(adds.map((t) => t.id));
    ch = { ...ch, tlcs: ch.tlcs.map((t) => (t.offered && again.has(t.id) ? { ...t, ...keys } : t)) };
    for (const t of adds) {
      const update = { type: 'add', tlcId: t.id, amount: t.amount } as const;
      log = logSent(log, update);
      effects.push(send(updateMessage(ch, update)));
    }
  }
  return { ch: withLog(ch, log), effects };
}

/** The AddTlc or RemoveTlc of one of our logged updates, from the TLC that holds its fields. */
function updateMessage(ch: Channel, u: UpdateLog['entries'][number]['update']): ChannelMessage {
  return u.type === 'add' ? addMessageOf(ch, u.tlcId) : removeMessageOf(ch, u.tlcId);
}
