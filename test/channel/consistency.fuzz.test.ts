/**
 * Model-based fuzz of two channel machines, in the manner of LDK's `chanmon_consistency`: random
 * interleavings of TLC adds, fulfils and fails from either side, partial deliveries, duplicated
 * messages, dropped connections (reestablish) and restarts from storage (the state serialized and
 * read back) at any point. After every run the link is healed and the pair must be consistent:
 *
 * - no round left open, and each side's view mirrors the other's (balances, commitment numbers,
 *   the pending TLCs, the nonce pools);
 * - the balances and the pending TLCs add up to the channel's liquid capacity;
 * - every pending TLC the model knows is there on both sides, every one it saw settled moved its
 *   amount to the receiver;
 * - no secret nonce of either side signed two different messages (under fnn's rules: more than
 *   two, its schedule's bound), every partial signature tapped at the signer (`signer-tap.ts`);
 *
 * `FUZZ_RUNS` raises the number of runs (`npm run fuzz`); the default suite runs a few.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ChannelError } from '../../src/channel/errors.ts';
import { type Channel, deserializeChannel, serializeChannel } from '../../src/channel/state.ts';
import { CKB } from '../../src/channel/tx.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { fuzzRuns } from '../helpers/fuzz-runs.ts';
import { pairHarness, type Side } from './pair-harness.ts';
import { overusedNonces, tapped } from './signer-tap.ts';

vi.mock('../../src/crypto/musig2-fast.ts', async (importOriginal) => {
  const { tapMusig } = await import('./signer-tap.ts');
  return tapMusig(await importOriginal<typeof import('../../src/crypto/musig2-fast.ts')>());
});

/** A 500 / 250 CKB pair: what both sides hold apart from the reserves. */
const LIQUID = 626n * CKB;

type Who = 'A' | 'B';
type Op =
  | { op: 'add'; from: Who; amount: number }
  | { op: 'settle'; by: Who; pick: number }
  | { op: 'fail'; by: Who; pick: number }
  | { op: 'deliver'; n: number }
  | { op: 'duplicate'; to: Who }
  | { op: 'disconnect' }
  | { op: 'restart'; who: Who }
  /** The timer of the messages `who` holds (`held-sends.ts`) fires. */
  | { op: 'timer'; who: Who };

const who = fc.constantFrom<Who>('A', 'B');
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('add' as const),
      from: who,
      amount: fc.integer({ min: 1, max: 30 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('settle' as const), by: who, pick: fc.nat(7) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('fail' as const), by: who, pick: fc.nat(7) }) },
  {
    weight: 5,
    arbitrary: fc.record({ op: fc.constant('deliver' as const), n: fc.integer({ min: 1, max: 6 }) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('duplicate' as const), to: who }) },
  { weight: 1, arbitrary: fc.constant({ op: 'disconnect' as const }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('restart' as const), who }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('timer' as const), who }) },
);

const chains: TestChain[] = [];
/** What the runs exercised, so that a generator gone blind fails the test instead of passing it. */
const stats = { settledOffChain: 0, restartsWithTlcs: 0, disconnectsMidRound: 0, heldDropped: 0 };
afterEach(() => {
  for (const t of chains.splice(0)) t.close();
});

function play(ops: Op[], rules: 'strand' | 'fnn'): void {
  tapped.length = 0;
  const t = openTestChain();
  chains.push(t);
  let clock = 1_700_000_000_000;
  const h = pairHarness(t, () => clock, { likeService: true });
  const { A, B } = h.readyPair({ rules });
  const sides = { A, B };
  const other = (s: Side) => (s === A ? B : A);
  /** Preimages by payment hash, and the amounts the model expects to move. */
  const preimages = new Map<string, Uint8Array>();
  let nextPreimage = 1;

  /**
   * Feeds one event. A step that throws (a command refused in this state, a peer's message the
   * machine refuses) changes nothing and sends nothing: the partial signatures it computed
   * never leave the node, so the tap marks them discarded.
   */
  const tryFeed = (me: Side, ev: Parameters<typeof h.feed>[2]) => {
    const signed = tapped.length;
    const refused = me.refused.length;
    try {
      h.feed(me, other(me), ev);
    } catch (e) {
      if (!(e instanceof ChannelError)) throw e;
      for (const x of tapped.slice(signed)) x.discarded = true;
      return;
    }
    if (me.refused.length > refused) for (const x of tapped.slice(signed)) x.discarded = true;
  };
  /** Delivers up to `n` messages, alternating sides (as `runSteps`), each through `tryFeed`. */
  const deliver = (n: number) => {
    let left = n;
    while (left > 0) {
      let moved = false;
      for (const me of [A, B]) {
        const msg = left > 0 ? me.inbox.shift() : undefined;
        if (!msg) continue;
        moved = true;
        left--;
        tryFeed(me, { type: 'peer', msg });
      }
      // Both inboxes dry: the held messages' timers fire.
      if (!moved && !release(A) && !release(B)) return;
    }
  };
  /** What `me` held goes out, as when its timer fires. */
  const release = (me: Side): boolean => {
    if (me.held.length === 0) return false;
    other(me).inbox.push(...me.held);
    me.held.length = 0;
    return true;
  };
  /** A new connection: what was in flight is lost, and each side sends its counters. */
  const reconnect = () => {
    A.inbox.length = 0;
    B.inbox.length = 0;
    // The service drops what it held for the old session.
    if (A.held.length || B.held.length) stats.heldDropped++;
    A.held.length = 0;
    B.held.length = 0;
    tryFeed(A, { type: 'reconnected' });
    tryFeed(B, { type: 'reconnected' });
  };
  /** Received TLCs of `me` not being removed, oldest first. */
  const received = (me: Side) =>
    me.ch.tlcs.filter((x) => !x.offered && !x.removal && x.added === 'committed');

  for (const o of ops) {
    clock += 1000;
    switch (o.op) {
      case 'add': {
        const preimage = new Uint8Array(32).fill(nextPreimage++ % 256);
        preimage[0] = nextPreimage >> 8;
        const hash = ckbHash(preimage);
        preimages.set(bytesToHex(hash), preimage);
        tryFeed(sides[o.from], {
          type: 'addTlc',
          cmd: {
            amount: BigInt(o.amount) * CKB,
            paymentHash: hash,
            expiry: 1_800_000_000_000n,
            hashAlgorithm: 0,
            onion: new Uint8Array(0),
          },
        });
        break;
      }
      case 'settle':
      case 'fail': {
        const me = sides[o.by];
        const list = received(me);
        const tlc = list[o.pick % Math.max(list.length, 1)];
        if (!tlc) break;
        const preimage = preimages.get(tlc.paymentHash) as Uint8Array;
        tryFeed(me, {
          type: 'removeTlc',
          id: tlc.id,
          reason: o.op === 'settle' ? { preimage } : { error: new Uint8Array([0x40, 0x0f]) },
        });
        break;
      }
      case 'deliver':
        deliver(o.n);
        break;
      case 'duplicate': {
        const me = sides[o.to];
        const head = me.inbox[0];
        if (head) me.inbox.unshift(head);
        break;
      }
      case 'timer':
        release(sides[o.who]);
        break;
      case 'disconnect':
        if (A.ch.round || B.ch.round) stats.disconnectsMidRound++;
        reconnect();
        break;
      case 'restart': {
        // The state read back from its serialized form, as after a crash and a restart; the
        // connection went down with it.
        const me = sides[o.who];
        if (me.ch.tlcs.length) stats.restartsWithTlcs++;
        me.ch = deserializeChannel(serializeChannel(me.ch)) as Channel;
        reconnect();
        break;
      }
    }
  }
  // Heal: reconnect and let both sides talk until they are quiet.
  reconnect();
  deliver(1000);
  // A removal announced but not yet in a round goes out in the next one.
  for (let i = 0; i < 3 && (A.ch.tlcs.some((x) => x.removal) || B.ch.tlcs.some((x) => x.removal)); i++) {
    tryFeed(A, { type: 'signCommitment' });
    deliver(1000);
    tryFeed(B, { type: 'signCommitment' });
    deliver(1000);
  }
  check(A.ch, B.ch);
  expect(overusedNonces(rules === 'fnn' ? 2 : 1)).toEqual([]);
  // A's balance moved: some TLC was settled off chain during the run.
  if (A.ch.localBalance !== 438n * CKB) stats.settledOffChain++;
  for (const s of [A, B]) expect(s.ch.latestCommitmentTx).toBeTruthy();
}

function check(a: Channel, b: Channel): void {
  expect(a.round ?? null).toBeNull();
  expect(b.round ?? null).toBeNull();
  expect([a.state, b.state]).toEqual(['CHANNEL_READY', 'CHANNEL_READY']);
  expect([a.localBalance, a.remoteBalance]).toEqual([b.remoteBalance, b.localBalance]);
  expect(a.commitmentNumbers).toEqual({
    local: b.commitmentNumbers.remote,
    remote: b.commitmentNumbers.local,
  });
  const pending = (c: Channel) =>
    c.tlcs
      .filter((x) => !x.removal)
      .map((x) => `${x.offered ? 'out' : 'in'}:${x.id}:${x.amount}:${x.paymentHash}`)
      .sort();
  const flip = (s: string) => (s.startsWith('out') ? `in${s.slice(3)}` : `out${s.slice(2)}`);
  expect(pending(a)).toEqual(pending(b).map(flip).sort());
  const inFlight = a.tlcs.filter((x) => !x.removal).reduce((n, x) => n + x.amount, 0n);
  expect(a.localBalance + a.remoteBalance + inFlight).toBe(LIQUID);
  // Strand's pools: ours are the peer's view of them (fnn's nonces follow its own ledger).
  if (a.rules !== 'fnn') {
    expect(a.nonces.mine.map((n) => n.public)).toEqual(b.nonces.theirs);
    expect(b.nonces.mine.map((n) => n.public)).toEqual(a.nonces.theirs);
  }
}

/** The fuzzer's shrunk counterexample of CI seed 399901200: a restart with TLCs in flight. */
const RESTART_MID_ROUND: Op[] = [
  { op: 'add', from: 'B', amount: 1 },
  { op: 'deliver', n: 1 },
  { op: 'deliver', n: 1 },
  { op: 'deliver', n: 2 },
  { op: 'restart', who: 'A' },
  { op: 'add', from: 'B', amount: 1 },
  { op: 'duplicate', to: 'A' },
  { op: 'deliver', n: 4 },
  { op: 'add', from: 'A', amount: 1 },
];

/**
 * A round ends with the responder's fresh nonce held (`mayWait`), and the connection drops before
 * its timer fires: the reestablish advertises it again; then a round each way, settled.
 */
const HELD_THEN_CUT: Op[] = [
  { op: 'add', from: 'A', amount: 3 },
  { op: 'deliver', n: 3 },
  { op: 'disconnect' },
  { op: 'add', from: 'B', amount: 2 },
  { op: 'deliver', n: 6 },
  { op: 'settle', by: 'B', pick: 0 },
  { op: 'deliver', n: 6 },
  { op: 'settle', by: 'A', pick: 0 },
];

describe('two channel machines under random interleavings, drops, duplicates and restarts', () => {
  // Runs the fuzzer once found failing, kept as they were shrunk.
  it('an update sent on a new connection before the peer reestablished waits for it (CI, seed 399901200)', () => {
    // A restarts having missed B's last RevokeAndAck; B, unaware, starts its next round at once.
    // Its AddTlc reached A before the RevokeAndAck the reestablish replays: A took it into the
    // round it was still in, then refused the replayed one, and B's round never ended.
    play(RESTART_MID_ROUND, 'fnn');
  });
  for (const rules of ['strand', 'fnn'] as const) {
    it(`${rules} rules: stay consistent, keep the capacity, no nonce signs beyond its rule`, () => {
      Object.assign(stats, {
        settledOffChain: 0,
        restartsWithTlcs: 0,
        disconnectsMidRound: 0,
        heldDropped: 0,
      });
      fc.assert(
        fc.property(fc.array(opArb, { minLength: 5, maxLength: 40 }), (ops) => {
          for (const t of chains.splice(0)) t.close();
          play(ops, rules);
        }),
        // The known restart mid-round runs every time, so the places below are always reached.
        { numRuns: fuzzRuns(8), examples: [[RESTART_MID_ROUND], [HELD_THEN_CUT]] },
      );
      // The runs did reach the interesting places.
      expect(stats.settledOffChain).toBeGreaterThan(0);
      expect(stats.restartsWithTlcs + stats.disconnectsMidRound).toBeGreaterThan(0);
      if (rules === 'strand') expect(stats.heldDropped).toBeGreaterThan(0);
    }, 600_000);
  }
});
