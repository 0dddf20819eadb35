/**
 * Pipelined TLC updates (`pipelined.ts`) between two real channels opened on the dev chain, with
 * real signatures: each side's messages travel in their own ordered queue, so a CommitmentSigned
 * may cross the peer's, a RevokeAndAck may cross a CommitmentSigned, updates may go while a
 * signature waits. The fuzz picks the interleavings; every CommitmentSigned and RevokeAndAck must
 * complete (the completer checks the aggregate against the commitment it built itself, so a
 * completion is both sides building the same transaction), honest peers never refuse each other,
 * and a quiet pair holds the same TLCs and balances on both sides, with no secret nonce that
 * signed twice.
 */
import { ccc } from '@ckb-ccc/core';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildCommitment } from '../../src/channel/commitment.ts';
import { ChannelError } from '../../src/channel/errors.ts';
import {
  addTlcP,
  canSign,
  onPeerMessageP,
  reconnectedP,
  removeTlcP,
  signP,
  spendable,
  startPipelined,
  viewChannel,
} from '../../src/channel/pipelined.ts';
import { type Channel, deserializeChannel, serializeChannel } from '../../src/channel/state.ts';
import type { MachineEnv, Step } from '../../src/channel/step.ts';
import type { TlcNotice } from '../../src/channel/tlc.ts';
import { CKB } from '../../src/channel/tx.ts';
import { type ChannelMessage, decodeChannelBody, encodeChannelBody } from '../../src/channel/wire.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { fuzzRuns } from '../helpers/fuzz-runs.ts';
import { pairHarness } from './pair-harness.ts';
import { overusedNonces, tapped } from './signer-tap.ts';

vi.mock('../../src/crypto/musig2-fast.ts', async (importOriginal) => {
  const { tapMusig } = await import('./signer-tap.ts');
  return tapMusig(await importOriginal<typeof import('../../src/crypto/musig2-fast.ts')>());
});

type Who = 'A' | 'B';
const otherOf = (w: Who): Who => (w === 'A' ? 'B' : 'A');

const chains: TestChain[] = [];
afterEach(() => {
  for (const t of chains.splice(0)) t.close();
});

/** Two pipelined channels and the two ordered queues between them. */
class Link {
  ch: Record<Who, Channel>;
  /** Messages on their way to each side, in the order sent. */
  inbox: Record<Who, ChannelMessage[]> = { A: [], B: [] };
  /** Messages each side let wait (`mayWait`), as the channel service holds them (`held-sends.ts`). */
  held: Record<Who, ChannelMessage[]> = { A: [], B: [] };
  /** Times a reconnection dropped held messages (the fuzz must reach it). */
  heldDropped = 0;
  notices: Record<Who, TlcNotice[]> = { A: [], B: [] };
  preimages = new Map<string, Uint8Array>();
  private nextPreimage = 1;

  constructor(
    readonly env: MachineEnv,
    a: Channel,
    b: Channel,
  ) {
    this.ch = { A: startPipelined(a), B: startPipelined(b) };
  }

  private apply(who: Who, s: Step): void {
    this.ch[who] = s.ch;
    for (const e of s.effects) {
      // Through the wire's bytes, as a connection carries them.
      if (e.type === 'send') {
        const m = {
          type: e.msg.type,
          value: decodeChannelBody(e.msg.type, encodeChannelBody(e.msg)),
        } as ChannelMessage;
        if (e.mayWait) this.held[who].push(m);
        else {
          this.release(who);
          this.inbox[otherOf(who)].push(m);
        }
      } else if (e.type === 'tlc') this.notices[who].push(e.notice);
    }
  }

  /** What `who` held goes out (ahead of its next message, or when the timer fires). */
  release(who: Who): boolean {
    if (this.held[who].length === 0) return false;
    this.inbox[otherOf(who)].push(...this.held[who].splice(0));
    return true;
  }

  /** A command refused in this state changes nothing (false); anything else is a defect. */
  private command(who: Who, f: () => Step): boolean {
    const signed = tapped.length;
    try {
      this.apply(who, f());
      return true;
    } catch (e) {
      if (!(e instanceof ChannelError)) throw e;
      for (const x of tapped.slice(signed)) x.discarded = true;
      return false;
    }
  }

  add(who: Who, amount: bigint): boolean {
    const preimage = new Uint8Array(32).fill(this.nextPreimage % 256);
    preimage[0] = this.nextPreimage++ >> 8;
    const hash = ckbHash(preimage);
    this.preimages.set(bytesToHex(hash), preimage);
    return this.command(who, () =>
      addTlcP(
        this.ch[who],
        { amount, paymentHash: hash, expiry: 1_800_000_000_000n, hashAlgorithm: 0, onion: new Uint8Array(0) },
        this.env,
      ),
    );
  }

  /** Received TLCs of `who` it may remove: irrevocably committed, not removed yet. */
  removable(who: Who) {
    return this.ch[who].tlcs.filter((t) => !t.offered && !t.removal && t.added === 'committed');
  }

  remove(who: Who, pick: number, settle: boolean): boolean {
    const list = this.removable(who);
    const t = list[pick % Math.max(list.length, 1)];
    if (!t) return false;
    const reason = settle
      ? { preimage: this.preimages.get(t.paymentHash) as Uint8Array }
      : { error: new Uint8Array([0x40, 0x0f]) };
    return this.command(who, () => removeTlcP(this.ch[who], t.id, reason));
  }

  sign(who: Who): boolean {
    const s = signP(this.ch[who], this.env);
    if (s) this.apply(who, s);
    return !!s;
  }

  /** Delivers the next message to `who`; honest peers never refuse each other's messages. */
  deliver(who: Who, autoSign: boolean): boolean {
    const msg = this.inbox[who].shift();
    if (!msg) return false;
    this.apply(who, onPeerMessageP(this.ch[who], msg, this.env));
    if (autoSign) this.sign(who);
    return true;
  }

  /**
   * The connection drops (what was on its way is lost) and comes back; `restart`: that side's
   * state is first read back from its serialized form, as after a crash.
   */
  reconnect(restart?: Who): void {
    this.inbox.A.length = 0;
    this.inbox.B.length = 0;
    // The service drops what it held for the old session.
    if (this.held.A.length + this.held.B.length > 0) this.heldDropped++;
    this.held.A.length = 0;
    this.held.B.length = 0;
    if (restart) this.ch[restart] = deserializeChannel(serializeChannel(this.ch[restart]));
    for (const w of ['A', 'B'] as const) this.apply(w, reconnectedP(this.ch[w]));
  }

  /** Both queues drained, each side signing whenever it may, until nothing moves. */
  settle(): void {
    for (let guard = 0; guard < 1000; guard++) {
      const moved = [this.deliver('A', true), this.deliver('B', true), this.sign('A'), this.sign('B')];
      // Nothing else moves: the held messages' timers fire.
      if (!moved.some(Boolean) && !this.release('A') && !this.release('B')) return;
    }
    throw new Error('the pair keeps talking');
  }

  /** The invariants of a quiet pair. */
  checkQuiet(): void {
    const { A, B } = this.ch;
    expect(this.inbox.A.length + this.inbox.B.length).toBe(0);
    expect(this.held.A.length + this.held.B.length).toBe(0);
    expect([canSign(A), canSign(B)]).toEqual([false, false]);
    const logA = A.pipelined!.log;
    const logB = B.pipelined!.log;
    expect([logA.awaitingRevoke, logB.awaitingRevoke]).toEqual([false, false]);
    expect([logA.local, logA.remote]).toEqual([logB.remote, logB.local]);
    // Every TLC is irrevocably committed and not being removed; both sides hold the same ones.
    for (const ch of [A, B])
      for (const t of ch.tlcs) expect([t.added, t.removal]).toEqual(['committed', undefined]);
    const side = (ch: Channel, offered: boolean) =>
      ch.tlcs
        .filter((t) => t.offered === offered)
        .map((t) => `${t.id}:${t.amount}:${t.paymentHash}:${offered ? t.localKey : t.remoteKey}`)
        .sort();
    expect(side(A, true)).toEqual(side(B, false));
    expect(side(A, false)).toEqual(side(B, true));
    expect([A.localBalance, A.remoteBalance]).toEqual([B.remoteBalance, B.localBalance]);
    expect([spendable(A, 'local'), spendable(A, 'remote')]).toEqual([A.localBalance, A.remoteBalance]);
    const pending = A.tlcs.reduce((s, t) => s + t.amount, 0n);
    const base = A.pipelined!.base;
    expect(A.localBalance + A.remoteBalance + pending).toBe(base.local + base.remote);
    // Each side's latest commitment is the one its peer builds for it.
    for (const [me, peer] of [
      [A, B],
      [B, A],
    ] as const) {
      const held = ccc.Transaction.fromBytes(me.latestCommitmentTx as string);
      const built = buildCommitment(
        viewChannel(peer, 'remote', peer.pipelined!.log.remote),
        true,
        this.env,
      ).tx;
      expect(held.outputs.map((o) => o.lock.args)).toEqual(built.outputs.map((o) => o.lock.args));
      expect(held.outputsData).toEqual(built.outputsData);
    }
  }
}

function newLink(): Link {
  tapped.length = 0;
  const t = openTestChain();
  chains.push(t);
  const h = pairHarness(t);
  const { A, B } = h.readyPair();
  return new Link(h.env(), A.ch, B.ch);
}

const types = (ns: TlcNotice[]) => ns.map((n) => n.type);

describe('pipelined updates', () => {
  it('carries a payment: add, commit, settle, commit, with the notices of the round model', () => {
    const l = newLink();
    const before = { a: l.ch.A.localBalance, b: l.ch.B.localBalance };
    expect(l.add('A', 10n * CKB)).toBe(true);
    // The AddTlc leaves alone; nothing covers it until A signs.
    expect(l.inbox.B.map((m) => m.type)).toEqual(['AddTlc']);
    l.settle();
    expect(types(l.notices.B)).toEqual(['announced', 'received']);
    expect(l.remove('B', 0, true)).toBe(true);
    expect(types(l.notices.B)).toEqual(['announced', 'received', 'preimage']);
    l.settle();
    expect(types(l.notices.A)).toEqual(['preimage', 'fulfilled']);
    expect(types(l.notices.B).at(-1)).toBe('fulfilled');
    l.checkQuiet();
    expect(l.ch.A.tlcs).toEqual([]);
    expect(l.ch.A.pipelined!.log.entries).toEqual([]);
    expect([l.ch.A.localBalance, l.ch.B.localBalance]).toEqual([before.a - 10n * CKB, before.b + 10n * CKB]);
    expect(overusedNonces()).toEqual([]);
  });

  it('lets both sides sign at once: the two CommitmentSigneds cross, and each covers its own add', () => {
    const l = newLink();
    l.add('A', 5n * CKB);
    l.add('B', 7n * CKB);
    l.sign('A');
    l.sign('B');
    expect(l.inbox.A.map((m) => m.type)).toEqual(['AddTlc', 'CommitmentSigned']);
    expect(l.inbox.B.map((m) => m.type)).toEqual(['AddTlc', 'CommitmentSigned']);
    l.settle();
    l.checkQuiet();
    expect(types(l.notices.A)).toEqual(['announced', 'received']);
    expect(types(l.notices.B)).toEqual(['announced', 'received']);
    expect(overusedNonces()).toEqual([]);
  });

  it('sends updates while a CommitmentSigned waits, and the next one covers them', () => {
    const l = newLink();
    l.add('A', 1n * CKB);
    l.sign('A');
    l.add('A', 2n * CKB);
    // One CommitmentSigned a direction until its RevokeAndAck: the second add waits uncovered.
    expect(l.sign('A')).toBe(false);
    expect(l.inbox.B.map((m) => m.type)).toEqual(['AddTlc', 'CommitmentSigned', 'AddTlc']);
    l.settle();
    l.checkQuiet();
    expect(l.ch.B.tlcs.map((t) => t.id)).toEqual([0n, 1n]);
  });

  it('refuses a removal of a TLC not yet irrevocably committed, and changes nothing', () => {
    const l = newLink();
    l.add('A', 3n * CKB);
    l.sign('A');
    // B received the AddTlc and the CommitmentSigned, and answered; A has not heard back.
    l.deliver('B', true);
    l.deliver('B', true);
    const tlc = l.ch.B.tlcs[0]!;
    expect(tlc.added).toBe('announced');
    expect(() => removeTlcP(l.ch.B, tlc.id, { error: new Uint8Array([1]) })).toThrow(
      /not found or not removable/,
    );
    const forged: ChannelMessage = {
      type: 'RemoveTlc',
      value: { channelId: ccc.bytesFrom(l.ch.A.id), tlcId: 0n, reason: { fail: new Uint8Array([1]) } },
    };
    expect(() => onPeerMessageP(l.ch.A, forged, l.env)).toThrow(/no TLC 0 to remove/);
  });

  it('spends only what every coming commitment leaves: a balance a removal may credit is not spent early', () => {
    const l = newLink();
    const all = spendable(l.ch.B, 'local');
    // B offers A's way what it has above its floor (less 1 CKB), A fails it: until the failure is
    // irrevocable, B cannot spend that amount again.
    const amount = all - 100n * CKB;
    expect(l.add('B', amount)).toBe(true);
    l.settle();
    expect(l.remove('A', 0, false)).toBe(true);
    l.deliver('B', false); // the RemoveTlc
    expect(l.ch.B.localBalance).toBe(all);
    expect(spendable(l.ch.B, 'local')).toBe(all - amount);
    expect(l.add('B', amount)).toBe(false);
    l.settle();
    expect(spendable(l.ch.B, 'local')).toBe(all);
    expect(l.add('B', amount)).toBe(true);
    l.settle();
    l.checkQuiet();
  });

  it('survives a reconnection whose replay puts a RevokeAndAck before an add that preceded it', () => {
    // Found by the fuzz: A's AddTlc, then its RevokeAndAck, then its CommitmentSigned, all lost.
    // The replay sends the RevokeAndAck first, then the add with the CommitmentSigned covering
    // it; the add's keys must not depend on which of them came first.
    const l = newLink();
    l.add('A', 1n * CKB);
    l.add('B', 1n * CKB);
    l.sign('B');
    l.deliver('A', false);
    l.deliver('A', false);
    l.sign('A');
    l.add('A', 2n * CKB);
    expect(l.inbox.B.map((m) => m.type)).toEqual([
      'AddTlc',
      'TxComplete',
      'RevokeAndAck',
      'CommitmentSigned',
      'AddTlc',
    ]);
    l.reconnect();
    l.settle();
    l.checkQuiet();
    expect(l.ch.B.tlcs.filter((t) => !t.offered).map((t) => t.id)).toEqual([0n, 1n]);
    expect(overusedNonces()).toEqual([]);
  });

  it('after a restart from the stored state, sends again what the peer lacks', () => {
    const l = newLink();
    l.add('A', 4n * CKB);
    l.sign('A');
    l.deliver('B', true);
    l.deliver('B', true); // B answered with RevokeAndAck + CommitmentSigned, all lost below
    l.reconnect('B');
    l.settle();
    l.checkQuiet();
    expect(types(l.notices.B)).toEqual(['announced', 'received']);
  });

  type Op =
    | { op: 'add'; from: Who; amount: number }
    | { op: 'settle' | 'fail'; by: Who; pick: number }
    | { op: 'deliver'; to: Who; n: number; autoSign: boolean }
    | { op: 'sign'; who: Who }
    | { op: 'timer'; who: Who }
    | { op: 'reconnect'; restart: Who | undefined };
  const who = fc.constantFrom<Who>('A', 'B');
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('add' as const),
        from: who,
        amount: fc.integer({ min: 1, max: 40 }),
      }),
    },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('settle' as const), by: who, pick: fc.nat(7) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('fail' as const), by: who, pick: fc.nat(7) }) },
    {
      weight: 8,
      arbitrary: fc.record({
        op: fc.constant('deliver' as const),
        to: who,
        n: fc.integer({ min: 1, max: 8 }),
        autoSign: fc.boolean(),
      }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('sign' as const), who }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('timer' as const), who }) },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('reconnect' as const),
        restart: fc.option(who, { nil: undefined }),
      }),
    },
  );

  const deliverAll = (to: Who): Op => ({ op: 'deliver', to, n: 8, autoSign: true });
  const covering: Op[] = [
    { op: 'add', from: 'A', amount: 5 },
    { op: 'add', from: 'B', amount: 7 },
    ...Array.from({ length: 3 }, () => [deliverAll('B'), deliverAll('A')]).flat(),
    { op: 'settle', by: 'B', pick: 0 },
    { op: 'settle', by: 'A', pick: 0 },
    ...Array.from({ length: 3 }, () => [deliverAll('B'), deliverAll('A')]).flat(),
    { op: 'add', from: 'A', amount: 3 },
    { op: 'reconnect', restart: undefined },
    ...Array.from({ length: 3 }, () => [deliverAll('B'), deliverAll('A')]).flat(),
  ];

  it('keeps both sides in step over any interleaving the two queues allow (fuzz)', () => {
    const stats = { crossed: 0, removals: 0, cutInFlight: 0, heldDropped: 0 };
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 20, maxLength: 80 }), (ops) => {
        const l = newLink();
        for (const o of ops) {
          if (o.op === 'add') l.add(o.from, BigInt(o.amount) * CKB);
          else if (o.op === 'sign') l.sign(o.who);
          else if (o.op === 'timer') l.release(o.who);
          else if (o.op === 'reconnect') {
            if (l.inbox.A.length + l.inbox.B.length > 0) stats.cutInFlight++;
            l.reconnect(o.restart);
          } else if (o.op === 'deliver') {
            if (l.ch.A.pipelined!.log.awaitingRevoke && l.ch.B.pipelined!.log.awaitingRevoke) stats.crossed++;
            for (let i = 0; i < o.n; i++) l.deliver(o.to, o.autoSign);
          } else if (l.remove(o.by, o.pick, o.op === 'settle')) stats.removals++;
        }
        stats.heldDropped += l.heldDropped;
        l.settle();
        l.checkQuiet();
        expect(overusedNonces()).toEqual([]);
        // Whatever was left pending settles too, and the pair is quiet and empty again.
        for (const w of ['A', 'B'] as const) while (l.remove(w, 0, true)) l.settle();
        l.checkQuiet();
        expect(l.ch.A.tlcs).toEqual([]);
      }),
      {
        numRuns: fuzzRuns(25),
        // Always run first: both sign at once (crossed), each settles what the other added, and a
        // reconnection cuts an add in flight. Random runs alone missed every removal in one of
        // 25-run CI runs, so the coverage checks below rest on this, not on luck.
        examples: [[covering]],
      },
    );
    // A generator gone blind would pass without exercising what matters.
    expect(stats.crossed).toBeGreaterThan(0);
    expect(stats.removals).toBeGreaterThan(0);
    expect(stats.cutInFlight).toBeGreaterThan(0);
    expect(stats.heldDropped).toBeGreaterThan(0);
  }, 300_000);
});
