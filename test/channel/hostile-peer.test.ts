/**
 * Issue 16, "the rule that must hold": against a peer on fnn's nonce rules, each secret nonce of
 * Strand's contributes to at most two partial signatures, ever. A hostile peer
 * (`hostile-peer.ts`) drives a Strand machine through every path the protocol offers, collects
 * every partial signature Strand produces and solves for the funding key whenever one nonce pair
 * gave three. Against the real signer it never succeeds; against a signer weakened on purpose
 * (`allowNonceReuseForTests`) the same peer recovers the key — the detector works.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { allowNonceReuseForTests, NonceSpent, spendAllNonces } from '../../src/channel/fnn-nonces.ts';
import { deriveChannelKeys } from '../../src/channel/keys.ts';
import { newNonce, signWithNonce } from '../../src/channel/musig.ts';
import { scriptData } from '../../src/channel/script-data.ts';
import { type Channel, coopCloseBroadcast, withFlag } from '../../src/channel/state.ts';
import { CKB } from '../../src/channel/tx.ts';
import { hexToBytes } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { KEY_A, KEY_B, lockOf, openTestChain, type TestChain } from '../devchain/helpers.ts';
import {
  attack,
  equationOf,
  fundingPubkeyOf,
  HostilePeer,
  noncesFor,
  publicKeyOf,
  solveKey,
  untapped,
} from './hostile-peer.ts';
import { pairHarness } from './pair-harness.ts';
import { tapped } from './signer-tap.ts';

vi.mock('../../src/crypto/musig2-fast.ts', async (importOriginal) => {
  const { tapMusig } = await import('./signer-tap.ts');
  return tapMusig(await importOriginal<typeof import('../../src/crypto/musig2-fast.ts')>());
});

/** Channels whose Strand was restored from a backup copy (they refuse to sign anything new). */
const restored = new Set<HostilePeer>();
/** Whether each 'coop-completed' closing had its cooperative close broadcast when asked to force-close. */
const coopAsked: boolean[] = [];
/** The dev chains opened by the test (closed after it). */
let chains: TestChain[] = [];
beforeEach(() => {
  tapped.length = 0;
  restored.clear();
  coopAsked.length = 0;
});
afterEach(() => {
  allowNonceReuseForTests(null);
  for (const c of chains) c.close();
  chains = [];
});

const preimage = new Uint8Array(32).fill(7);
const tlc = (amount: bigint) => ({
  amount,
  paymentHash: ckbHash(preimage),
  expiry: 1_800_000_000_000n,
  hashAlgorithm: 0,
  onion: new Uint8Array(0),
});
const hex = (x: Uint8Array) => Buffer.from(x).toString('hex');

type Role = 'A' | 'B';
type RoundKind = 'strand' | 'peer' | 'collision';
type Closing =
  | 'peer-coop-withheld'
  | 'strand-coop-withheld'
  | 'coop-completed'
  | 'force'
  | 'peer-behind'
  | 'peer-ahead'
  | 'pending-tlc'
  | 'restored-current'
  | 'restored-stale';

/** What a node restored from a backup taken now would hold (`checkpoint.ts`). */
const backupOf = (ch: Channel): Channel => {
  const c = spendAllNonces(ch);
  return ch.state === 'CHANNEL_READY' ? withFlag(c, 'RESTORED_FROM_BACKUP') : c;
};

/**
 * A dev chain for many channels: each opening funds from a genesis cell of its own (the harness
 * takes the oldest live cell, and these come first).
 */
function manyChannelChain(): TestChain {
  const cells = (key: Uint8Array) =>
    Array.from({ length: 40 }, () => ({ lock: lockOf(key), capacity: 10_000n * CKB }));
  const t = openTestChain({}, [...cells(KEY_A), ...cells(KEY_B)]);
  chains.push(t);
  return t;
}

/** A ready fnn channel with Strand on `role` (A opens; A's funding key is the smaller one). */
function open(role: Role, t = manyChannelChain()): HostilePeer {
  const h = pairHarness(t);
  const { A, B } = h.readyPair({ rules: 'fnn' });
  const [strand, peer] = role === 'A' ? [A, B] : [B, A];
  return new HostilePeer(strand, peer, h.env, (tx) => {
    try {
      t.chain.sendTransaction(tx);
    } catch {
      // The chain's verdict is not what is under test (a second close of the same cell, …).
    }
  });
}

/** The id of a committed TLC `side` received and has not settled yet. */
const received = (ch: Channel) =>
  ch.tlcs.find((x) => !x.offered && !x.removal && x.added === 'committed')?.id;

/**
 * One TLC round of `kind` and the round settling it, each cut after `cut` messages (all lost)
 * and resumed by a reconnect; then the peer replays everything it sent in these rounds.
 */
function round(hp: HostilePeer, kind: RoundKind, cut = 10_000): void {
  const from = hp.fromPeer.length;
  if (kind !== 'peer') hp.strandDoes({ type: 'addTlc', cmd: tlc(3n * CKB) });
  if (kind !== 'strand') hp.peerDoes({ type: 'addTlc', cmd: tlc(2n * CKB) });
  hp.deliver(cut);
  // Mid-round, the peer's last RevokeAndAck and CommitmentSigned of an earlier round again:
  // Strand may start completing them (its partial computed), and must drop them unsent.
  for (const type of ['RevokeAndAck', 'CommitmentSigned'] as const) {
    const stale = hp.fromPeer.slice(0, from).findLast((m) => m.type === type);
    if (stale) hp.strandReceives(stale);
  }
  hp.reconnect();
  // Settle what each side received (both at once after a collision).
  const s = received(hp.strand.ch);
  const p = received(hp.peer.ch);
  if (s !== undefined) hp.strandDoes({ type: 'removeTlc', id: s, reason: { preimage } });
  if (p !== undefined) hp.peerDoes({ type: 'removeTlc', id: p, reason: { preimage } });
  hp.deliver(cut);
  hp.reconnect();
  // Everything again: stale updates, CommitmentSigned, RevokeAndAck (a stale Reestablish is a
  // claim of lost state, and ends the channel: the 'peer-behind' closing).
  for (const m of hp.fromPeer.slice(from)) if (m.type !== 'ReestablishChannel') hp.strand.inbox.push(m);
  hp.deliver();
  hp.reconnect();
}

/** A force-close attempt by Strand: broadcast, or refused for lack of a nonce use and nothing changed. */
function forceAttempt(hp: HostilePeer, how: () => void): 'closed' | 'refused' | 'nothing' {
  const before = hp.snapshot();
  const refusals = hp.nonceRefusals().length;
  const broadcasts = hp.strand.seen.filter((e) => e.type === 'broadcast').length;
  how();
  const sent = hp.strand.seen.filter((e) => e.type === 'broadcast').length;
  let outcome: 'closed' | 'refused' | 'nothing' = sent > broadcasts ? 'closed' : 'nothing';
  if (hp.nonceRefusals().length > refusals) {
    expect(hp.snapshot()).toBe(before);
    expect(sent).toBe(broadcasts);
    outcome = 'refused';
  }
  hp.outcomes.push(outcome);
  return outcome;
}

/** A close script the channel never agreed on. */
const otherScript = () => lockOf(new Uint8Array(32).fill(0x5c));

/** The ways of closing, each followed by whatever else the peer can try. */
function close(hp: HostilePeer, how: Closing): void {
  const script = otherScript();
  const ask = () => hp.askForceClose();
  const force = () => hp.strandDoes({ type: 'shutdown', cmd: { force: true } });
  switch (how) {
    case 'peer-coop-withheld': {
      // The peer shuts down, takes Strand's ClosingSigned and never sends (or broadcasts) its own.
      hp.withhold = (m) => m.type === 'ClosingSigned';
      hp.peerDoes({ type: 'shutdown', cmd: {} });
      hp.deliver();
      hp.shutdownWith(2000n, script);
      hp.shutdownWith(5000n, lockOf(KEY_B));
      hp.shutdownWith(0n, script);
      hp.reconnect();
      hp.closingSignedWith(new Uint8Array(32).fill(9));
      hp.strandDoes({ type: 'shutdown', cmd: { feeRate: 4000n } });
      forceAttempt(hp, ask);
      forceAttempt(hp, force);
      forceAttempt(hp, ask);
      hp.reconnect();
      break;
    }
    case 'strand-coop-withheld': {
      hp.withhold = (m) => m.type === 'ClosingSigned';
      hp.strandDoes({ type: 'shutdown', cmd: { feeRate: 3000n, closeScript: scriptData(script) } });
      hp.deliver();
      hp.shutdownWith(1000n, lockOf(KEY_B));
      hp.reconnect();
      hp.strandDoes({ type: 'shutdown', cmd: { feeRate: 6000n } });
      forceAttempt(hp, force);
      forceAttempt(hp, ask);
      hp.reconnect();
      break;
    }
    case 'coop-completed': {
      hp.peerDoes({ type: 'shutdown', cmd: {} });
      hp.deliver();
      hp.reconnect();
      hp.shutdownWith(7000n, script);
      // Once its cooperative close is broadcast, Strand answers a force-close request with nothing
      // (a commitment would compete with the close for the funding cell).
      const coop = coopCloseBroadcast(hp.strand.ch);
      const asked = forceAttempt(hp, ask);
      if (coop) expect(asked).toBe('nothing');
      coopAsked.push(coop);
      forceAttempt(hp, force);
      break;
    }
    case 'force': {
      forceAttempt(hp, force);
      forceAttempt(hp, force);
      forceAttempt(hp, ask);
      hp.reconnect();
      hp.shutdownWith(1000n, script);
      break;
    }
    case 'peer-behind': {
      // A peer that "lost" state: Strand force-closes with its latest commitment.
      const { local, remote } = hp.strand.ch.commitmentNumbers;
      forceAttempt(hp, () => hp.reestablishAs(remote - 2n, local - 2n));
      forceAttempt(hp, ask);
      hp.reconnect();
      break;
    }
    case 'peer-ahead': {
      // A peer claiming newer state: Strand takes itself for outdated and signs nothing more.
      const { local, remote } = hp.strand.ch.commitmentNumbers;
      hp.reestablishAs(remote + 3n, local + 3n);
      forceAttempt(hp, ask);
      forceAttempt(hp, force);
      hp.reconnect();
      break;
    }
    case 'restored-current':
    case 'restored-stale': {
      // Strand is restored from a backup copy: the one just taken, or one taken before a round
      // (its counts would be low: the copy erased every secret instead).
      const copy = backupOf(hp.strand.ch);
      if (how === 'restored-stale') round(hp, 'peer');
      hp.strand.ch = copy;
      restored.add(hp);
      hp.reconnect();
      hp.peerDoes({ type: 'addTlc', cmd: tlc(1n * CKB) });
      hp.deliver();
      hp.reconnect();
      hp.peerDoes({ type: 'shutdown', cmd: {} });
      hp.deliver();
      hp.shutdownWith(3000n, script);
      forceAttempt(hp, ask);
      forceAttempt(hp, force);
      hp.reconnect();
      break;
    }
    case 'pending-tlc': {
      // Shutdown with a TLC in flight: the removal round runs while shutting down (cut and
      // resumed), then ClosingSigned, withheld by the peer; then a forced close.
      hp.peerDoes({ type: 'addTlc', cmd: tlc(4n * CKB) });
      hp.deliver();
      hp.withhold = (m) => m.type === 'ClosingSigned';
      hp.peerDoes({ type: 'shutdown', cmd: {} });
      hp.deliver();
      const id = received(hp.strand.ch);
      if (id !== undefined) hp.strandDoes({ type: 'removeTlc', id, reason: { preimage } });
      hp.deliver(3);
      hp.reconnect();
      hp.replayAll();
      hp.shutdownWith(2500n, script);
      forceAttempt(hp, ask);
      forceAttempt(hp, force);
      break;
    }
  }
}

type LastRound = 'none' | RoundKind | 'stalled';

/**
 * What comes before a closing. 'stalled': a collision, then the peer goes silent in the round
 * that follows (the loser's retry): neither its RevokeAndAck nor its CommitmentSigned arrive.
 */
function lastRound(hp: HostilePeer, last: LastRound): void {
  if (last === 'none') return;
  if (last !== 'stalled') {
    round(hp, last);
    return;
  }
  hp.strandDoes({ type: 'addTlc', cmd: tlc(3n * CKB) });
  hp.peerDoes({ type: 'addTlc', cmd: tlc(2n * CKB) });
  const n = hp.peer.ch.commitmentNumbers.remote;
  hp.withhold = (m) =>
    (m.type === 'RevokeAndAck' || m.type === 'CommitmentSigned') && hp.peer.ch.commitmentNumbers.remote > n;
  hp.deliver();
}

/** Each closing after a last round of some kind, Strand on either side. */
const PLAN: [Closing, LastRound][] = [
  ['force', 'stalled'],
  ['peer-coop-withheld', 'stalled'],
  ['peer-behind', 'stalled'],
  ['peer-behind', 'collision'],
  ['strand-coop-withheld', 'strand'],
  ['coop-completed', 'peer'],
  ['peer-ahead', 'none'],
  ['pending-tlc', 'collision'],
  ['force', 'strand'],
  ['force', 'peer'],
  ['peer-coop-withheld', 'peer'],
  ['strand-coop-withheld', 'collision'],
  ['coop-completed', 'stalled'],
  ['pending-tlc', 'none'],
  ['restored-current', 'strand'],
  ['restored-stale', 'peer'],
  ['restored-current', 'stalled'],
];

/**
 * The whole campaign: for Strand on either side, a channel through every kind of round cut at
 * every point, then closed; then a channel for each closing after a last round of some kind.
 */
function campaign(): HostilePeer[] {
  const peers: HostilePeer[] = [];
  const t = manyChannelChain();
  for (const role of ['A', 'B'] as const) {
    const hp = open(role, t);
    peers.push(hp);
    for (const kind of ['strand', 'peer', 'collision'] as const)
      for (let cut = 0; cut <= 8; cut++) round(hp, kind, cut);
    // The rounds went through (two commitments each, four after a collision), nothing pending.
    expect(hp.strand.ch.state).toBe('CHANNEL_READY');
    expect(hp.strand.ch.commitmentNumbers.local).toBeGreaterThan(60n);
    expect(hp.strand.ch.tlcs).toEqual([]);
    expect(hp.strand.ch.localBalance).toBe(hp.peer.ch.remoteBalance);
    close(hp, 'peer-coop-withheld');
    for (const [how, last] of PLAN) {
      const x = open(role, t);
      peers.push(x);
      lastRound(x, last);
      close(x, how);
    }
  }
  return peers;
}

/** Strand's funding keys in the campaign (one per side it played). */
const targets = (peers: HostilePeer[]) => [
  ...new Map(peers.map((p) => [hex(fundingPubkeyOf(p.strand.ch)), fundingPubkeyOf(p.strand.ch)])).values(),
];

describe('the key solver', () => {
  const party = () => {
    const d = secp256k1.utils.randomSecretKey();
    return { d, P: secp256k1.getPublicKey(d, true) };
  };

  it('three partial signatures under one nonce pair give the key; two leave it undetermined', () => {
    const me = party();
    const other = party();
    const keys = [me.P, other.P].sort(Buffer.compare);
    const nonce = newNonce(me.P, me.d);
    const sessions = [1, 2, 3].map((i) => {
      const theirs = newNonce(other.P, other.d).public;
      const msg = new Uint8Array(32).fill(i);
      const partial = signWithNonce({
        mySecret: me.d,
        myPubkey: me.P,
        myNonce: nonce,
        theirPubkey: other.P,
        theirNonce: theirs,
        keys,
        msg,
      });
      return equationOf({ signer: me.P, keys, nonce: nonce.public, others: [theirs], msg, partial });
    });
    const d = solveKey(sessions);
    expect(d).not.toBeNull();
    expect(hex(publicKeyOf(d as bigint))).toBe(hex(me.P));
    expect((d as bigint).toString(16).padStart(64, '0')).toBe(hex(me.d));
    // Two: no unique solution, and every key is consistent with some nonce pair.
    const two = sessions.slice(0, 2) as [(typeof sessions)[0], (typeof sessions)[0]];
    expect(solveKey(two)).toBeNull();
    for (const guess of [1n, 12345n, BigInt(`0x${hex(party().d)}`)]) {
      const k = noncesFor(two, guess);
      expect(k).not.toBeNull();
      const [k1, k2] = k as [bigint, bigint];
      for (const e of two) {
        const n = secp256k1.Point.Fn.ORDER;
        expect((((e.c[0] * k1 + e.c[1] * k2 + e.c[2] * guess - e.s) % n) + n) % n).toBe(0n);
      }
    }
    // The same session twice is one equation, not two.
    expect(solveKey([sessions[0], sessions[0], sessions[1]] as typeof sessions)).toBeNull();
  });

  it('a recorded partial that does not match its public data is rejected', () => {
    const me = party();
    const other = party();
    const keys = [me.P, other.P].sort(Buffer.compare);
    const nonce = newNonce(me.P, me.d);
    const theirs = newNonce(other.P, other.d).public;
    const msg = new Uint8Array(32).fill(5);
    const partial = signWithNonce({
      mySecret: me.d,
      myPubkey: me.P,
      myNonce: nonce,
      theirPubkey: other.P,
      theirNonce: theirs,
      keys,
      msg,
    });
    const args = { signer: me.P, keys, nonce: nonce.public, others: [theirs], msg, partial };
    expect(() => equationOf(args)).not.toThrow();
    expect(() => equationOf({ ...args, msg: new Uint8Array(32).fill(6) })).toThrow(/does not verify/);
  });
});

describe('a hostile peer against the fnn nonce ledger', () => {
  it('never solves for the funding key of the real signer, with two signatures under many nonces', () => {
    const peers = campaign();
    const keys = targets(peers);
    expect(keys.length).toBe(2);
    for (const target of keys) {
      const report = attack(target);
      console.info('hostile peer, real signer:', JSON.stringify(report));
      // Partials computed in a step that failed never leave (e.g. completing a stale RevokeAndAck:
      // the aggregate does not verify). Even counted, they add no equation: Strand's side of
      // such a session is the one it signs when the right message comes.
      const all = attack(target, { withDiscarded: true });
      console.info('  counting dropped partials too:', JSON.stringify(all));
      expect(all.signatures).toBeGreaterThan(report.signatures);
      expect(all.usesPerNonce[3]).toBeUndefined();
      expect(all.recovered).toBeNull();
      expect(report.recovered).toBeNull();
      // Not vacuous: many signatures, many nonce pairs with exactly two (revocations each way,
      // a commitment and a close or force close), none with three.
      expect(report.signatures).toBeGreaterThan(200);
      expect(report.usesPerNonce[2]).toBeGreaterThan(40);
      expect(report.usesPerNonce[3]).toBeUndefined();
    }
    // Everything Strand sent with a partial signature of its own is among what the solver had.
    for (const hp of peers) expect(untapped(hp.fromStrand, fundingPubkeyOf(hp.strand.ch))).toEqual([]);
    // The peer was refused the third signature (and nothing changed: `forceAttempt`).
    const refused = peers.flatMap((hp) => hp.nonceRefusals());
    expect(refused.length).toBeGreaterThan(0);
    // Each says why: a nonce that signed twice, or (a restored copy) one erased by the restore.
    for (const hp of peers)
      for (const r of hp.nonceRefusals())
        expect(r.error.message).toMatch(
          restored.has(hp)
            ? /third signature is refused|restored from a backup/
            : /third signature is refused/,
        );
    expect(
      [...restored]
        .flatMap((hp) => hp.nonceRefusals())
        .some((r) => /restored from a backup/.test(r.error.message)),
    ).toBe(true);
    // Every refusal is a ChannelError the shell handles (anything else would have thrown).
    expect(refused.every((r) => r.error instanceof NonceSpent)).toBe(true);
    // Where they were refused: only Strand on B (it loses collisions) after the peer stalled the
    // round that follows one; everywhere else a force close went through.
    const outcomes = (side: Role) =>
      peers.filter((p) => p.strand.name === side && !restored.has(p)).flatMap((p) => p.outcomes);
    expect(outcomes('A')).not.toContain('refused');
    expect(outcomes('A').filter((o) => o === 'closed').length).toBeGreaterThan(10);
    expect(outcomes('B').filter((o) => o === 'refused').length).toBeGreaterThan(3);
    expect(outcomes('B').filter((o) => o === 'closed').length).toBeGreaterThan(10);
    // A restored copy signs nothing new: every force close it is asked for is refused or moot
    // (a stale copy finds itself outdated and waits for the peer's commitment).
    for (const p of restored) expect(p.outcomes).not.toContain('closed');
    // The force-close request after a completed cooperative close was put (and ignored) at least once.
    expect(coopAsked).toContain(true);
    const closed = peers.filter((hp) =>
      hp.strand.seen.some((e) => e.type === 'broadcast' && e.tx.hash() === hp.strand.ch.shutdownTxHash),
    );
    expect(closed.length).toBeGreaterThan(10);
    // ~13 s alone here; a loaded CI machine has taken more than twice that.
  }, 120_000);

  it('recovers the key from a signer weakened on purpose (allowNonceReuseForTests): the detector works', () => {
    allowNonceReuseForTests(3);
    const peers = campaign();
    // Strand on B loses collisions (the larger funding key): that is where a third use is asked.
    const strandOnB = (peers.find((p) => p.strand.name === 'B') as HostilePeer).strand.ch;
    const target = fundingPubkeyOf(strandOnB);
    const report = attack(target);
    console.info(
      'hostile peer, weakened signer:',
      JSON.stringify({ ...report, recovered: !!report.recovered }),
    );
    expect(report.usesPerNonce[3]).toBeGreaterThan(0);
    expect(report.recovered).not.toBeNull();
    const d = report.recovered as bigint;
    expect(hex(publicKeyOf(d))).toBe(hex(target));
    // It is the channel's secret funding key.
    expect(d.toString(16).padStart(64, '0')).toBe(
      hex(deriveChannelKeys(hexToBytes(strandOnB.seed)).fundingKey),
    );
  });
});

describe('the refusal of a third signature', () => {
  it('a lost collision leaves the latest commitment on a nonce with two uses: a force close is refused, nothing changes, the cooperative close still works', () => {
    // Strand on B (the larger funding key) loses the collision: its first CommitmentSigned is
    // dropped by the peer, its second signs with the same nonce (the peer's `lcrn`), and its
    // new commitment waits on that nonce too.
    const hp = open('B');
    hp.strandDoes({ type: 'addTlc', cmd: tlc(3n * CKB) });
    hp.peerDoes({ type: 'addTlc', cmd: tlc(2n * CKB) });
    // Strand's retry round is held back: the peer withholds its RevokeAndAck.
    hp.withhold = (m) => m.type === 'RevokeAndAck' && hp.peer.ch.commitmentNumbers.remote > 3n;
    hp.deliver();
    const ledger = hp.strand.ch.fnn;
    const own = ledger?.mine.find((n) => n.public === ledger.own?.myNonce);
    expect(own).toMatchObject({ uses: 2, secret: '' });
    expect(forceAttempt(hp, () => hp.strandDoes({ type: 'shutdown', cmd: { force: true } }))).toBe('refused');
    expect(forceAttempt(hp, () => hp.askForceClose())).toBe('refused');
    const r = hp.nonceRefusals();
    expect(r.length).toBe(2);
    for (const x of r) expect(x.error).toBeInstanceOf(NonceSpent);
    expect(r[0]?.error.message).toBe(
      'fnn mode: our nonce already signed twice; a third signature is refused',
    );
    // The safe way: nothing was signed; once the peer lets the round finish, the channel closes.
    hp.withhold = () => false;
    hp.reconnect();
    expect(hp.strand.ch.round ?? null).toBeNull();
    expect(forceAttempt(hp, () => hp.strandDoes({ type: 'shutdown', cmd: { force: true } }))).toBe('closed');
    expect(attack(fundingPubkeyOf(hp.strand.ch)).recovered).toBeNull();
  });

  it('after a ClosingSigned the peer withholds, a second Shutdown (new fee, new script) gets no new signature', () => {
    const hp = open('A');
    round(hp, 'strand');
    hp.withhold = (m) => m.type === 'ClosingSigned';
    hp.peerDoes({ type: 'shutdown', cmd: {} });
    hp.deliver();
    const signed = hp.fromStrand.filter((m) => m.type === 'ClosingSigned');
    expect(signed.length).toBe(1);
    const count = tapped.length;
    hp.shutdownWith(9000n, otherScript());
    hp.reconnect();
    hp.shutdownWith(1000n, lockOf(KEY_B));
    // Only the stored partial again, byte for byte; no new signing at all.
    const again = hp.fromStrand.filter((m) => m.type === 'ClosingSigned');
    expect(again.length).toBeGreaterThan(1);
    for (const m of again) expect(m).toEqual(signed[0]);
    expect(tapped.slice(count).filter((x) => hex(x.signer) === hex(fundingPubkeyOf(hp.strand.ch)))).toEqual(
      [],
    );
  });
});

describe('a step back never brings a secret nonce back', () => {
  it('a lost collision keeps the announcement signed: its nonce stays spent and its partial stays', () => {
    // Strand on B loses collisions. The shell's announcement digest arrives while Strand's round
    // is unacknowledged; Strand signs (its partial leaves in AnnouncementSignatures), then the
    // peer's colliding round makes Strand step back to the state before its round. That state
    // held the announcement nonce's secret and no partial: restoring it would resurrect a spent
    // nonce (and the announcement could never complete).
    const t = manyChannelChain();
    const h = pairHarness(t);
    const { A, B } = h.readyPair({ rules: 'fnn', isPublic: true });
    const hp = new HostilePeer(B, A, h.env, () => {});
    hp.strandDoes({ type: 'addTlc', cmd: tlc(3n * CKB) });
    hp.peerDoes({ type: 'addTlc', cmd: tlc(2n * CKB) });
    const digest = new Uint8Array(32).fill(1);
    hp.strandDoes({ type: 'announcementDigest', digest, nodeSignature: new Uint8Array(64).fill(2) });
    const signed = B.ch.announcement;
    expect(signed?.myPartial).toBeTruthy();
    expect(signed?.myNonce?.secret).toBe('0x');
    hp.deliver();
    // The collision happened (Strand stepped back and re-offered its TLC after the peer's round).
    expect(hp.fromStrand.filter((m) => m.type === 'CommitmentSigned').length).toBeGreaterThan(2);
    expect(B.ch.announcement?.myNonce?.secret).toBe('0x');
    expect(B.ch.announcement?.myPartial).toBe(signed?.myPartial);
    // A second digest (a different one) signs nothing.
    const count = tapped.length;
    hp.strandDoes({
      type: 'announcementDigest',
      digest: new Uint8Array(32).fill(3),
      nodeSignature: new Uint8Array(64),
    });
    expect(tapped.length).toBe(count);
  });
});

describe('the weakening switch', () => {
  it('is test-only: nothing in src/ but the ledger names it, and it refuses outside the test runner', () => {
    const files: string[] = [];
    const walk = (d: string) => {
      for (const f of readdirSync(d)) {
        const p = join(d, f);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.ts')) files.push(p);
      }
    };
    walk(join(__dirname, '../../src'));
    const naming = files.filter((f) => readFileSync(f, 'utf8').includes('allowNonceReuseForTests'));
    expect(naming.map((f) => f.replace(/.*\/src\//, 'src/'))).toEqual(['src/channel/fnn-nonces.ts']);
    const saved = process.env.VITEST;
    delete process.env.VITEST;
    try {
      expect(() => allowNonceReuseForTests(3)).toThrow(/test suite only/);
    } finally {
      process.env.VITEST = saved;
    }
  });
});
