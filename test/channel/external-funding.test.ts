/**
 * External funding between two pure channel machines on an in-process dev chain: the opener's
 * part paid from a third key's cells (the "external funder"), the frozen tx signed off-machine
 * and submitted; both TxSignatures orders; refusals that change nothing; the abort path.
 */
import { ccc } from '@ckb-ccc/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  EXTERNAL_TIMEOUT_REASON,
  externalDeadline,
  withFunderWitnesses,
} from '../../src/channel/external-funding.ts';
import { deriveChannelKeys, tempChannelId } from '../../src/channel/keys.ts';
import {
  acceptChannel,
  ChannelError,
  checkOpenChannel,
  type Effect,
  type Event,
  fail,
  type MachineEnv,
  openChannel,
  receiveOpen,
  scriptData,
  step,
} from '../../src/channel/machine.ts';
import type { Channel } from '../../src/channel/state.ts';
import { CKB, reserveFor } from '../../src/channel/tx.ts';
import type { ChannelMessage } from '../../src/channel/wire.ts';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { signSighashAll } from '../../src/crypto/sighash.ts';
import { cellsOf, KEY_A, KEY_B, lockOf, openTestChain, type TestChain } from '../devchain/helpers.ts';

const KEY_F = hexToBytes(`0x${'f3'.repeat(32)}`);
const NOW = 1_700_000_000_000;

let t: TestChain;
beforeEach(() => {
  t = openTestChain({}, [
    { lock: lockOf(KEY_A), capacity: 10_000n * CKB },
    { lock: lockOf(KEY_B), capacity: 10_000n * CKB },
    { lock: lockOf(KEY_F), capacity: 10_000n * CKB },
  ]);
});
afterEach(() => t.close());

const env = (): MachineEnv => ({
  chainHash: t.chain.genesisHash,
  fundingLock: t.chain.scripts.funding_lock,
  commitmentLock: t.chain.scripts.commitment_lock,
  now: () => NOW,
});
const sighashCodeHash = () => lockOf(KEY_F).codeHash;

interface Side {
  name: 'A' | 'B';
  /** Whose cells pay this side's part: the funder's for A, B's own wallet for B. */
  payer: Uint8Array;
  ch?: Channel;
  inbox: ChannelMessage[];
  own: Set<string>;
  sent: ChannelMessage[];
}

const depsOfSighash = () =>
  t.chain.scripts.secp256k1_blake160_sighash_all.cellDeps.map((d) => ccc.CellDep.from(d));

/** Plays effects the way the shell does: A's part from the funder's cells, A "signs" with the submitted witnesses. */
function perform(me: Side, other: Side, effects: Effect[], events: Event[]): void {
  for (const e of effects) {
    switch (e.type) {
      case 'send':
        other.inbox.push(e.msg);
        me.sent.push(e.msg);
        break;
      case 'fund': {
        const tx = e.tx.clone();
        const cell = cellsOf(t.chain, lockOf(me.payer))[0]!;
        me.own.add(cell.outPoint.txHash + cell.outPoint.index);
        for (const d of depsOfSighash()) if (!tx.cellDeps.some((x) => x.eq(d))) tx.cellDeps.push(d);
        tx.inputs.push(ccc.CellInput.from({ previousOutput: cell.outPoint, since: 0n }));
        if (me.name === 'B') tx.outputs[0]!.capacity += e.contribution;
        tx.addOutput(
          { lock: lockOf(me.payer), capacity: cell.output.capacity - e.contribution - 5000n },
          '0x',
        );
        events.push({ type: 'funded', tx });
        break;
      }
      case 'signFunding': {
        if (me.name === 'A') {
          events.push({ type: 'fundingSigned', tx: withFunderWitnesses(me.ch!, e.tx) });
          break;
        }
        const tx = e.tx.clone();
        const mine = tx.inputs
          .map((i, n) => (me.own.has(i.previousOutput.txHash + i.previousOutput.index) ? n : -1))
          .filter((n) => n >= 0);
        signSighashAll(tx, mine, me.payer);
        events.push({ type: 'fundingSigned', tx });
        break;
      }
      case 'broadcast':
        try {
          t.chain.sendTransaction(e.tx);
        } catch (err) {
          if (!/Duplicated|already/.test((err as Error).message)) throw err;
        }
        break;
      default:
        break;
    }
  }
}

function feed(me: Side, other: Side, ev: Event) {
  const events = [ev];
  while (events.length) {
    const r = step(me.ch!, events.shift()!, env());
    me.ch = r.ch;
    perform(me, other, r.effects, events);
  }
}

function run(a: Side, b: Side): void {
  for (let guard = 0; guard < 200; guard++) {
    let moved = false;
    for (const [me, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const msg = me.inbox.shift();
      if (!msg || !me.ch) continue;
      moved = true;
      feed(me, other, { type: 'peer', msg });
    }
    if (!moved) return;
  }
}

/** A opens with the funder paying `openAmount`; B accepts with `acceptAmount`; run to the frozen tx. */
function openExternal(openAmount: bigint, acceptAmount: bigint) {
  const A: Side = { name: 'A', payer: KEY_F, inbox: [], own: new Set(), sent: [] };
  const B: Side = { name: 'B', payer: KEY_B, inbox: [], own: new Set(), sent: [] };
  const shutdown = lockOf(KEY_F);
  const reserve = reserveFor(shutdown);
  const seedA = new Uint8Array(32).fill(0x31);
  const o = openChannel(
    {
      peer: 'B',
      seed: seedA,
      tempId: bytesToHex(tempChannelId(deriveChannelKeys(seedA).tlcBasepoint)),
      isPublic: false,
      fundingAmount: openAmount - reserve,
      reserve,
      shutdownScript: scriptData(shutdown),
      udt: null,
      fundingFeeRate: 1000n,
      commitmentFeeRate: 1000n,
      delayEpoch: 0x0000010000000001n,
      maxTlcValueInFlight: (1n << 128n) - 1n,
      maxTlcNumberInFlight: 125n,
      tlcExpiryDelta: 14_400_000n,
      tlcMinValue: 0n,
      tlcFeeProportionalMillionths: 1000n,
      external: { lock: scriptData(lockOf(KEY_F)), cellDeps: [] },
    },
    env(),
  );
  A.ch = o.ch;
  const open = o.effects[0] as Extract<Effect, { type: 'send' }>;
  if (open.msg.type !== 'OpenChannel') throw new Error('expected OpenChannel');
  expect(open.msg.value.channelFlags).toBe(4);
  expect(checkOpenChannel(open.msg.value, env())).toBeNull();
  B.ch = receiveOpen(
    open.msg.value,
    { peer: 'A', seed: new Uint8Array(32).fill(0x32), shutdownScript: scriptData(lockOf(KEY_B)), reserve },
    env(),
    { tlcExpiryDelta: 14_400_000n, tlcMinValue: 0n, tlcFeeProportionalMillionths: 1000n },
  );
  expect(B.ch.external).toEqual({ submitted: false });
  const acc = acceptChannel(B.ch, { fundingAmount: acceptAmount - reserve });
  B.ch = acc.ch;
  perform(B, A, acc.effects, []);
  run(A, B);
  return { A, B };
}

/** The user's signature of the frozen tx, as `sign_external_funding_tx` makes it. */
function userSigns(unsigned: Channel, key = KEY_F): ccc.Transaction {
  const tx = ccc.Transaction.fromBytes(unsigned.fundingTx!);
  signSighashAll(tx, [0], key);
  return tx;
}

function confirmAndReady(A: Side, B: Side) {
  for (let i = 0; i < 5; i++) t.chain.generateBlock();
  feed(A, B, { type: 'fundingConfirmed' });
  feed(B, A, { type: 'fundingConfirmed' });
  run(A, B);
}

describe('external funding between two machines', () => {
  it('parks both sides at AWAITING_EXTERNAL_FUNDING with a frozen tx and no signature sent', () => {
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    for (const s of [A, B]) {
      expect(s.ch!.state).toBe('NEGOTIATING_FUNDING');
      expect(s.ch!.flags).toEqual(['AWAITING_EXTERNAL_FUNDING']);
      expect(s.ch!.external?.startedAt).toBe(NOW);
    }
    expect(A.ch!.fundingTxHash).toBe(B.ch!.fundingTxHash);
    expect(A.ch!.external?.inputs).toBe(1);
    const tx = ccc.Transaction.fromBytes(A.ch!.fundingTx!);
    expect(tx.outputs[0]!.capacity).toBe(750n * CKB);
    // The funder's change goes back to the funder's lock.
    expect(tx.outputs[1]!.lock.eq(lockOf(KEY_F))).toBe(true);
    const types = [...A.sent, ...B.sent].map((m) => m.type);
    expect(types).not.toContain('CommitmentSigned');
    expect(types).not.toContain('TxSignatures');
    expect(externalDeadline(A.ch!, 300_000)).toBe(NOW + 300_000);
  });

  it('submitted and signed (acceptor signs first): CHANNEL_READY, 438/188, the funder paid 500 CKB', () => {
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    const funderBefore = cellsOf(t.chain, lockOf(KEY_F)).reduce((s, c) => s + c.output.capacity, 0n);
    const signed = userSigns(A.ch!);
    feed(A, B, { type: 'submitFunding', tx: signed, sighashCodeHash: sighashCodeHash() });
    // The TxUpdate announcing the submission carries no witness of the funder.
    const update = B.inbox.find((m) => m.type === 'TxUpdate');
    expect(update?.type === 'TxUpdate' && update.value.tx.witnesses).toEqual([]);
    expect(update?.type === 'TxUpdate' && update.value.tx.hash()).toBe(signed.hash());
    expect(A.ch!.state).toBe('SIGNING_COMMITMENT');
    expect(A.ch!.external?.submitted).toBe(true);
    run(A, B);
    expect(A.ch!.state).toBe('AWAITING_CHANNEL_READY');
    expect(B.ch!.state).toBe('AWAITING_CHANNEL_READY');
    confirmAndReady(A, B);
    expect(A.ch!.state).toBe('CHANNEL_READY');
    expect(B.ch!.state).toBe('CHANNEL_READY');
    expect([A.ch!.localBalance, A.ch!.remoteBalance]).toEqual([438n * CKB, 188n * CKB]);
    expect([B.ch!.localBalance, B.ch!.remoteBalance]).toEqual([188n * CKB, 438n * CKB]);
    const cell = t.chain.liveCell({ txHash: A.ch!.fundingTxHash!, index: 0 });
    expect(cell !== 'dead' && cell?.output.capacity).toBe(750n * CKB);
    const funderAfter = cellsOf(t.chain, lockOf(KEY_F)).reduce((s, c) => s + c.output.capacity, 0n);
    expect(funderBefore - funderAfter).toBe(500n * CKB + 5000n);
    // A's stored commitment is fully signed: the chain would take it.
    expect(A.ch!.latestCommitmentTx).not.toBeNull();
  });

  it('the opener signing first (contributing less) releases the funder witnesses in TxSignatures', () => {
    const { A, B } = openExternal(100n * CKB, 250n * CKB);
    feed(A, B, { type: 'submitFunding', tx: userSigns(A.ch!), sighashCodeHash: sighashCodeHash() });
    run(A, B);
    const sigs = A.sent.find((m) => m.type === 'TxSignatures');
    expect(sigs?.type === 'TxSignatures' && ccc.hexFrom(sigs.value.witnesses[0]!)).not.toBe('0x');
    confirmAndReady(A, B);
    expect(A.ch!.state).toBe('CHANNEL_READY');
    expect([A.ch!.localBalance, B.ch!.localBalance]).toEqual([38n * CKB, 188n * CKB]);
  });

  it('refuses a wrong, unsigned, foreign-signed or repeated submission, changing nothing', () => {
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    const before = structuredClone(A.ch!);
    const submit = (tx: ccc.Transaction) =>
      step(A.ch!, { type: 'submitFunding', tx, sighashCodeHash: sighashCodeHash() }, env());
    const other = userSigns(A.ch!);
    other.outputs[1]!.capacity -= 1n;
    expect(() => submit(other)).toThrow(
      'Invalid parameter: Signed funding transaction raw data mismatch; only witnesses may change for external funding',
    );
    expect(() => submit(ccc.Transaction.fromBytes(A.ch!.fundingTx!))).toThrow(
      'Invalid parameter: Signed funding transaction has no witness for the funding inputs',
    );
    expect(() => submit(userSigns(A.ch!, KEY_A))).toThrow(
      'Invalid parameter: Signed funding transaction is not signed by the funding lock script',
    );
    expect(() => step(B.ch!, { type: 'submitFunding', tx: userSigns(A.ch!) }, env())).toThrow(
      'Invalid state: Channel is not configured for external funding',
    );
    expect(A.ch).toEqual(before);
    feed(A, B, { type: 'submitFunding', tx: userSigns(A.ch!), sighashCodeHash: sighashCodeHash() });
    expect(() => submit(userSigns(A.ch!))).toThrow(
      'Repeated processing message: Signed funding tx has already been submitted',
    );
  });

  it('a submission before the tx is frozen is refused with the state it is in', () => {
    const { A } = openExternal(500n * CKB, 250n * CKB);
    const early: Channel = { ...A.ch!, state: 'COLLABORATING_FUNDING_TX', flags: ['OUR_TX_COMPLETE_SENT'] };
    expect(() => step(early, { type: 'submitFunding', tx: userSigns(A.ch!) }, env())).toThrow(
      'Invalid state: Expected channel in AWAITING_EXTERNAL_FUNDING-compatible state, but got CollaboratingFundingTx(OUR_TX_COMPLETE_SENT)',
    );
  });

  it('the acceptor refuses an announced tx that is not the frozen one', () => {
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    const changed = ccc.Transaction.fromBytes(A.ch!.fundingTx!);
    changed.outputs[1]!.capacity -= 1n;
    expect(() =>
      step(
        B.ch!,
        { type: 'peer', msg: { type: 'TxUpdate', value: { channelId: hexToBytes(B.ch!.id), tx: changed } } },
        env(),
      ),
    ).toThrow(ChannelError);
  });

  it('an abort while waiting (the timeout) closes both sides and spends nothing of the funder', () => {
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    const funderCells = cellsOf(t.chain, lockOf(KEY_F)).length;
    const r = fail(A.ch!, EXTERNAL_TIMEOUT_REASON);
    A.ch = r.ch;
    perform(A, B, r.effects, []);
    run(A, B);
    for (const s of [A, B]) {
      expect(s.ch!.state).toBe('CLOSED');
      expect(s.ch!.flags).toEqual(['FUNDING_ABORTED']);
    }
    expect(A.ch!.failureDetail).toBe(EXTERNAL_TIMEOUT_REASON);
    expect(externalDeadline(A.ch!, 300_000)).toBeNull();
    expect(() => step(A.ch!, { type: 'submitFunding', tx: userSigns(A.ch!) }, env())).toThrow(
      'Invalid state: Expected channel in AWAITING_EXTERNAL_FUNDING-compatible state, but got Closed(FUNDING_ABORTED)',
    );
    for (let i = 0; i < 3; i++) t.chain.generateBlock();
    expect(cellsOf(t.chain, lockOf(KEY_F))).toHaveLength(funderCells);
  });
});
