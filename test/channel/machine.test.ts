/**
 * Two pure channel machines talking to each other in memory, funded and broadcast on a real dev
 * chain (in-process): open → accept → funding collaboration → commitment signatures → funding
 * signatures → 4 confirmations → CHANNEL_READY on both, with the seed's reserve rule.
 */
import { ccc } from '@ckb-ccc/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCommitment } from '../../src/channel/commitment.ts';
import { ChannelError } from '../../src/channel/errors.ts';
import { deriveChannelKeys } from '../../src/channel/keys.ts';
import { step } from '../../src/channel/machine.ts';
import { aggregateXOnly, sorted2 } from '../../src/channel/musig.ts';
import { acceptChannel, checkOpenChannel } from '../../src/channel/open.ts';
import { reestablishMessage } from '../../src/channel/reestablish.ts';
import { CKB, revocationWitness } from '../../src/channel/tx.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { verifySchnorr } from '../../src/crypto/secp256k1.ts';
import { signSighashAll } from '../../src/crypto/sighash.ts';
import { cellsOf, KEY_A, KEY_B, lockOf, openTestChain, type TestChain } from '../devchain/helpers.ts';
import { pairHarness, type Side } from './pair-harness.ts';

let t: TestChain;
let h: ReturnType<typeof pairHarness>;
/** The same pair, for reconnects: a peer's message the machine refuses is dropped, as the service does. */
let lenient: ReturnType<typeof pairHarness>;
beforeEach(() => {
  t = openTestChain();
  h = pairHarness(t);
  lenient = pairHarness(t, undefined, { likeService: true });
});
afterEach(() => t.close());

const env = () => h.env();

const withDeps = (hex: string) => {
  const tx = ccc.Transaction.fromBytes(hex);
  tx.cellDeps = t.chain.scripts.funding_lock.cellDeps.map((d) => ccc.CellDep.from(d));
  return tx;
};

describe('TLC rounds between two machines', () => {
  it('add and fulfil move the balances; both commitments stay valid; the old one is revocable', () => {
    const { A, B } = h.readyPair();
    const oldA = A.ch.latestCommitmentTx!;
    const preimage = new Uint8Array(32).fill(9);
    h.feed(A, B, {
      type: 'addTlc',
      cmd: {
        amount: 100n * CKB,
        paymentHash: ckbHash(preimage),
        expiry: 1_800_000_000_000n,
        hashAlgorithm: 0,
        onion: new Uint8Array(0),
      },
    });
    h.run(A, B);
    expect(A.ch.round ?? null).toBeNull();
    expect(B.ch.round ?? null).toBeNull();
    expect([A.ch.localBalance, A.ch.remoteBalance]).toEqual([338n * CKB, 188n * CKB]);
    expect(B.ch.tlcs.map((x) => [x.id, x.offered, x.added])).toEqual([[0n, false, 'committed']]);
    expect(A.ch.commitmentNumbers).toEqual({ local: 3n, remote: 3n });
    // A wrong preimage is refused; the right one settles the TLC to B.
    expect(() =>
      step(B.ch, { type: 'removeTlc', id: 0n, reason: { preimage: new Uint8Array(32) } }, env()),
    ).toThrow(/does not match/);
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage } });
    h.run(A, B);
    expect([A.ch.localBalance, A.ch.remoteBalance]).toEqual([338n * CKB, 288n * CKB]);
    expect([B.ch.localBalance, B.ch.remoteBalance]).toEqual([288n * CKB, 338n * CKB]);
    expect(A.ch.tlcs).toEqual([]);
    expect(A.ch.localBalance + A.ch.remoteBalance).toBe(626n * CKB);
    // Pools stay mirrored and never run dry.
    expect(A.ch.nonces.mine.map((n) => n.public)).toEqual(B.ch.nonces.theirs);
    expect(B.ch.nonces.mine.map((n) => n.public)).toEqual(A.ch.nonces.theirs);
    // A publishes its revoked first commitment; B sweeps it with the revocation it holds.
    const old = withDeps(oldA);
    const oldHash = t.chain.sendTransaction(old);
    t.chain.generateBlock();
    const rev = B.ch.revocation!;
    expect(rev.version).toBeGreaterThanOrEqual(1n);
    const out = ccc.CellOutput.from({ capacity: old.outputs[0]!.capacity, lock: lockOf(KEY_B) });
    // The revocation output is signed as is; the fee comes from one of B's own cells.
    const feeCell = cellsOf(t.chain, lockOf(KEY_B)).find(
      (c) => !B.own.has(c.outPoint.txHash + c.outPoint.index),
    )!;
    const sweep = ccc.Transaction.from({
      version: 0,
      cellDeps: [
        ...t.chain.scripts.commitment_lock.cellDeps,
        ...t.chain.scripts.secp256k1_blake160_sighash_all.cellDeps,
      ],
      inputs: [
        { previousOutput: { txHash: oldHash, index: 0 }, since: 0n },
        { previousOutput: feeCell.outPoint, since: 0n },
      ],
      outputs: [out, { lock: lockOf(KEY_B), capacity: feeCell.output.capacity - 2000n }],
      outputsData: ['0x', '0x'],
      witnesses: [
        revocationWitness(
          [B.ch.local.fundingPubkey, A.ch.local.fundingPubkey].map((x) => ccc.bytesFrom(x)),
          rev.version,
          ccc.bytesFrom(rev.signature),
        ),
      ],
    });
    signSighashAll(sweep, [1], KEY_B);
    t.chain.sendTransaction(sweep);
  });

  it('the latest commitment with a pending TLC is accepted by the chain', () => {
    const { A, B } = h.readyPair();
    h.feed(A, B, {
      type: 'addTlc',
      cmd: {
        amount: 5n * CKB,
        paymentHash: new Uint8Array(32).fill(1),
        expiry: 1_800_000_000_000n,
        hashAlgorithm: 1,
        onion: new Uint8Array(3),
      },
    });
    h.run(A, B);
    t.chain.sendTransaction(withDeps(B.ch.latestCommitmentTx!));
    // A committed TLC no longer stops a cooperative close (it resolves first: shutdown-pending.test.ts).
    expect(step(A.ch, { type: 'shutdown', cmd: {} }, env()).ch.state).toBe('SHUTTING_DOWN');
  });

  it('a second TLC command during a round is refused with the reference text', () => {
    const { A, B } = h.readyPair();
    const cmd = {
      amount: CKB,
      paymentHash: new Uint8Array(32),
      expiry: 1_800_000_000_000n,
      hashAlgorithm: 0,
      onion: new Uint8Array(0),
    };
    h.feed(A, B, { type: 'addTlc', cmd });
    expect(() => step(A.ch, { type: 'addTlc', cmd }, env())).toThrow(
      'Unable to handle TLC command in waiting TLC ACK state',
    );
    expect(() => step(A.ch, { type: 'addTlc', cmd: { ...cmd, amount: 10_000n * CKB } }, env())).toThrow();
  });
});

/** Delivers at most `budget` messages (both directions, in turn), dropping the ones refused. */
const runSome = (a: Side, b: Side, budget: number) => lenient.runSteps(a, b, budget);

/** A opening cut after `k` messages. */
function openPairUntil(k: number) {
  const { A, B } = h.openingPair();
  runSome(A, B, k);
  return { A, B };
}

function reconnect(A: Side, B: Side) {
  A.inbox.length = 0;
  B.inbox.length = 0;
  B.inbox.push(reestablishMessage(A.ch));
  A.inbox.push(reestablishMessage(B.ch));
  runSome(A, B, 1000);
}

describe('reestablish after a disconnect mid-TLC', () => {
  it('resumes the round from any cut point; balances sum to the capacity; nonces stay in step', () => {
    const preimage = new Uint8Array(32).fill(4);
    const cmd = {
      amount: 7n * CKB,
      paymentHash: ckbHash(preimage),
      expiry: 1_800_000_000_000n,
      hashAlgorithm: 0,
      onion: new Uint8Array(0),
    };
    const { A, B } = h.readyPair();
    // Add (A offers) then fulfil (B settles), cutting the connection after k messages each time.
    for (let k = 0; k <= 9; k++) {
      const before = A.ch.localBalance;
      h.feed(A, B, { type: 'addTlc', cmd });
      runSome(A, B, k);
      reconnect(A, B);
      expect(A.ch.round ?? null).toBeNull();
      expect(B.ch.round ?? null).toBeNull();
      expect(A.ch.localBalance).toBe(before - 7n * CKB);
      const tlc = B.ch.tlcs.find((x) => !x.offered && !x.removal)!;
      h.feed(B, A, { type: 'removeTlc', id: tlc.id, reason: { preimage } });
      runSome(A, B, k);
      reconnect(A, B);
      expect(A.ch.round ?? null).toBeNull();
      expect(B.ch.round ?? null).toBeNull();
      expect(A.ch.localBalance + A.ch.remoteBalance).toBe(626n * CKB);
      expect([B.ch.localBalance, B.ch.remoteBalance]).toEqual([A.ch.remoteBalance, A.ch.localBalance]);
      expect(A.ch.nonces.mine.map((n) => n.public)).toEqual(B.ch.nonces.theirs);
      expect(B.ch.nonces.mine.map((n) => n.public)).toEqual(A.ch.nonces.theirs);
      expect(A.ch.commitmentNumbers).toEqual({
        local: B.ch.commitmentNumbers.remote,
        remote: B.ch.commitmentNumbers.local,
      });
    }
    expect(B.ch.localBalance).toBe(188n * CKB + 10n * 7n * CKB);
    // Nothing stale was replayed: every message after every reconnect was taken.
    expect([...A.refused, ...B.refused]).toEqual([]);
    // The latest commitment of each side is still fully signed and valid.
    t.chain.sendTransaction(withDeps(A.ch.latestCommitmentTx!));
  });

  it('an opening cut after any message either aborts on both sides or goes on to CHANNEL_READY', () => {
    const outcomes = new Set<string>();
    for (let k = 0; k <= 12; k++) {
      const { A, B } = openPairUntil(k);
      reconnect(A, B);
      const a = A.ch;
      const b = B.ch;
      if (a.state === 'CLOSED' || b.state === 'CLOSED') {
        // Aborted: both sides, and no funding tx was ever fully signed, so nothing is on chain.
        expect([a.state, b.state]).toEqual(['CLOSED', 'CLOSED']);
        expect(a.flags).toEqual(['FUNDING_ABORTED']);
        outcomes.add('aborted');
        continue;
      }
      expect([a.state, b.state]).toEqual(['AWAITING_CHANNEL_READY', 'AWAITING_CHANNEL_READY']);
      for (let i = 0; i < 5; i++) t.chain.generateBlock();
      h.feed(A, B, { type: 'fundingConfirmed' });
      h.feed(B, A, { type: 'fundingConfirmed' });
      runSome(A, B, 100);
      expect([A.ch.state, B.ch.state]).toEqual(['CHANNEL_READY', 'CHANNEL_READY']);
      expect(A.ch.localBalance + A.ch.remoteBalance).toBe(626n * CKB);
      outcomes.add('ready');
    }
    expect([...outcomes].sort()).toEqual(['aborted', 'ready']);
  });

  it('a reconnect before the funding is signed aborts the opening cleanly on both sides', () => {
    const { A, B } = openPairUntil(3);
    expect(A.ch.state).not.toBe('AWAITING_CHANNEL_READY');
    reconnect(A, B);
    expect(A.ch.state).toBe('CLOSED');
    expect(A.ch.flags).toEqual(['FUNDING_ABORTED']);
    expect(B.ch.state).toBe('CLOSED');
  });
});

describe('colliding rounds', () => {
  it('both sides adding at once: the smaller funding key wins, the other re-issues; both TLCs commit', () => {
    const { A, B } = h.readyPair();
    const pa = new Uint8Array(32).fill(0xa);
    const pb = new Uint8Array(32).fill(0xb);
    const cmd = (amount: bigint, pre: Uint8Array) => ({
      amount,
      paymentHash: ckbHash(pre),
      expiry: 1_800_000_000_000n,
      hashAlgorithm: 0,
      onion: new Uint8Array(0),
    });
    h.feed(A, B, { type: 'addTlc', cmd: cmd(10n * CKB, pa) });
    h.feed(B, A, { type: 'addTlc', cmd: cmd(3n * CKB, pb) });
    runSome(A, B, 1000);
    expect(A.ch.round ?? null).toBeNull();
    expect(B.ch.round ?? null).toBeNull();
    expect(A.ch.tlcs.map((x) => [x.offered, x.amount, x.added]).sort()).toEqual([
      [false, 3n * CKB, 'committed'],
      [true, 10n * CKB, 'committed'],
    ]);
    expect([A.ch.localBalance, A.ch.remoteBalance]).toEqual([428n * CKB, 185n * CKB]);
    expect([B.ch.localBalance, B.ch.remoteBalance]).toEqual([185n * CKB, 428n * CKB]);
    // And both settle at once.
    h.feed(A, B, { type: 'removeTlc', id: 0n, reason: { preimage: pb } });
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage: pa } });
    runSome(A, B, 1000);
    expect(A.ch.tlcs).toEqual([]);
    expect(B.ch.tlcs).toEqual([]);
    expect([A.ch.localBalance, A.ch.remoteBalance]).toEqual([431n * CKB, 195n * CKB]);
    expect(A.ch.nonces.mine.map((n) => n.public)).toEqual(B.ch.nonces.theirs);
    expect(B.ch.nonces.mine.map((n) => n.public)).toEqual(A.ch.nonces.theirs);
    t.chain.sendTransaction(withDeps(B.ch.latestCommitmentTx!));
  });
});

describe('public channels', () => {
  it('exchange AnnouncementSignatures into one BIP340 signature by the funding aggregate key', () => {
    const { A, B } = h.readyPair({ isPublic: true });
    expect(A.ch.state).toBe('CHANNEL_READY');
    expect(A.ch.isPublic && B.ch.isPublic).toBe(true);
    const digest = ckbHash(new TextEncoder().encode('announcement'));
    h.feed(A, B, { type: 'announcementDigest', digest, nodeSignature: new Uint8Array(64).fill(1) });
    h.feed(B, A, { type: 'announcementDigest', digest, nodeSignature: new Uint8Array(64).fill(2) });
    h.run(A, B);
    const sig = A.ch.announcement!.signature!;
    expect(B.ch.announcement!.signature).toBe(sig);
    expect(A.ch.announcement!.theirNodeSignature).toBe(`0x${'02'.repeat(64)}`);
    const xonly = aggregateXOnly(
      sorted2(ccc.bytesFrom(A.ch.local.fundingPubkey), ccc.bytesFrom(B.ch.local.fundingPubkey)),
    );
    expect(verifySchnorr(ccc.bytesFrom(sig), digest, xonly)).toBe(true);
    // The announcement nonce's secret is gone.
    expect(A.ch.announcement!.myNonce!.secret).toBe('0x');
  });
});

describe('channel opening between two machines', () => {
  it('500 CKB with the peer adding 250 ends CHANNEL_READY: 438/188 and 188/438, 750 CKB on chain', () => {
    const { A, B } = h.openingPair();
    h.run(A, B);
    expect(A.ch.state).toBe('AWAITING_CHANNEL_READY');
    expect(B.ch.state).toBe('AWAITING_CHANNEL_READY');
    expect(A.ch.id).toBe(B.ch.id);
    expect(A.ch.id).not.toBe(A.ch.tempId);
    // The funding tx was broadcast by the second signer (A contributes more, so B signs first).
    const hash = A.ch.fundingTxHash!;
    expect(B.ch.fundingTxHash).toBe(hash);
    for (let i = 0; i < 5; i++) t.chain.generateBlock();
    const cell = t.chain.liveCell({ txHash: hash, index: 0 });
    expect(cell !== 'dead' && cell?.output.capacity).toBe(750n * CKB);
    h.feed(A, B, { type: 'fundingConfirmed' });
    h.run(A, B);
    expect(A.ch.state).toBe('AWAITING_CHANNEL_READY');
    h.feed(B, A, { type: 'fundingConfirmed' });
    h.run(A, B);
    expect(A.ch.state).toBe('CHANNEL_READY');
    expect(B.ch.state).toBe('CHANNEL_READY');
    expect([A.ch.localBalance, A.ch.remoteBalance]).toEqual([438n * CKB, 188n * CKB]);
    expect([B.ch.localBalance, B.ch.remoteBalance]).toEqual([188n * CKB, 438n * CKB]);
    expect(A.ch.commitmentNumbers).toEqual({ local: 2n, remote: 2n });
    // The secret nonces used for the commitments are gone; the pools mirror each other.
    expect(A.ch.nonces.mine.map((n) => n.public)).toEqual(B.ch.nonces.theirs);
    expect(B.ch.nonces.mine.map((n) => n.public)).toEqual(A.ch.nonces.theirs);
    expect(A.ch.nonces.mine).toHaveLength(2);
    // Each side's stored commitment is fully signed: the chain accepts it (either one).
    const commitA = ccc.Transaction.fromBytes(A.ch.latestCommitmentTx!);
    commitA.cellDeps = t.chain.scripts.funding_lock.cellDeps.map((d) => ccc.CellDep.from(d));
    t.chain.sendTransaction(commitA);
    const out = commitA.outputs[0]!;
    expect(out.capacity).toBe(750n * CKB - 419n);
    // B's commitment as A computes it is B's own (same bytes, unsigned).
    const bView = buildCommitment(A.ch, true, env());
    expect(bView.tx.hash()).not.toBe(commitA.hash());
  });

  it('a peer contributing only its reserve has a zero balance on both sides', () => {
    const { A: a, B: b } = h.openingPair({ acceptAmount: 62n * CKB });
    h.run(a, b);
    expect(b.ch.localBalance).toBe(0n);
    expect(a.ch.state).toBe('AWAITING_CHANNEL_READY');
    expect(a.ch.remoteBalance).toBe(0n);
  });

  it('an OpenChannel with a wrong chain or bad flags is refused', () => {
    const { A, B } = h.openingPair();
    h.run(A, B);
    const bad = (x: Partial<Parameters<typeof checkOpenChannel>[0]>) =>
      checkOpenChannel({ ...(sampleOpen as Parameters<typeof checkOpenChannel>[0]), ...x }, env());
    expect(bad({ chainHash: new Uint8Array(32) })).toBe('chain hash mismatch');
    expect(bad({ channelFlags: 8 })).toMatch(/undefined channel flags/);
    expect(bad({ fundingFeeRate: 999n })).toBe('Funding fee rate is less than 1000');
    expect(() => acceptChannel({ ...A.ch }, { fundingAmount: 0n }, env())).toThrow(ChannelError);
  });
});

let sampleOpen: unknown;
beforeEach(() => {
  const k = deriveChannelKeys(new Uint8Array(32).fill(3));
  sampleOpen = {
    chainHash: ccc.bytesFrom(t.chain.genesisHash),
    channelId: new Uint8Array(32),
    fundingUdtTypeScript: null,
    fundingAmount: 100n,
    shutdownScript: lockOf(KEY_A),
    reservedCkbAmount: 62n * CKB,
    fundingFeeRate: 1000n,
    commitmentFeeRate: 1000n,
    maxTlcValueInFlight: 1n,
    maxTlcNumberInFlight: 1n,
    commitmentDelayEpoch: 0x0000010000000001n,
    fundingPubkey: k.fundingPubkey,
    tlcBasepoint: k.tlcBasepoint,
    firstPerCommitmentPoint: k.fundingPubkey,
    secondPerCommitmentPoint: k.fundingPubkey,
    channelAnnouncementNonce: null,
    nextCommitmentNonce: new Uint8Array(66),
    nextRevocationNonce: new Uint8Array(66),
    channelFlags: 0,
  };
});
