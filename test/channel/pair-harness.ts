/**
 * Two pure channel machines wired to each other in memory and funded on an in-process dev chain:
 * the harness of the machine and lifecycle tests (opening, TLC rounds, shutdown with pending TLCs,
 * TLC expiry, external funding). Messages wait in inboxes until `run` delivers them, so a test can
 * cut the link (drop an inbox) at any point.
 */
import { ccc } from '@ckb-ccc/core';
import { expect } from 'vitest';
import { ChannelError } from '../../src/channel/errors.ts';
import { withFunderWitnesses } from '../../src/channel/external-funding.ts';
import { deriveChannelKeys, tempChannelId } from '../../src/channel/keys.ts';
import { step } from '../../src/channel/machine.ts';
import { acceptChannel, checkOpenChannel, openChannel, receiveOpen } from '../../src/channel/open.ts';
import { abortable } from '../../src/channel/reestablish.ts';
import { type ChannelRules, reserveFor } from '../../src/channel/reserve.ts';
import { scriptData } from '../../src/channel/script-data.ts';
import type { Channel } from '../../src/channel/state.ts';
import { type Effect, type Event, fail, type MachineEnv, type Step } from '../../src/channel/step.ts';
import { CKB } from '../../src/channel/tx.ts';
import type { ChannelMessage, OpenChannel } from '../../src/channel/wire.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { signSighashAll } from '../../src/crypto/sighash.ts';
import { cellsOf, KEY_A, KEY_B, lockOf, type TestChain } from '../devchain/helpers.ts';

export const NOW = 1_700_000_000_000;

export interface Side {
  name: 'A' | 'B';
  /** Whose cells pay this side's part (and sign for them): the side's own, or its external funder's. */
  key: Uint8Array;
  ch: Channel;
  inbox: ChannelMessage[];
  /**
   * Messages the machine let wait (`mayWait`), as the channel service holds them
   * (`held-sends.ts`): they go ahead of this side's next message, or when `run` finds the link idle
   * (the service's timer).
   */
  held: ChannelMessage[];
  own: Set<string>;
  /** Effects other than messages, in order (broadcasts, TLC notices, …). */
  seen: Effect[];
  /** Every message this side sent, in order. */
  sent: ChannelMessage[];
  /** Peer messages the machine refused (`likeService` only; the service logs and drops them). */
  refused: string[];
  /** How this side signs the funding tx; by default with `key`, for the inputs it added. */
  signFunding?: (ch: Channel, tx: ccc.Transaction) => ccc.Transaction;
}

export interface PairOptions {
  /** What A puts in (its reserve included); 500 CKB by default. */
  openAmount?: bigint;
  /** What B puts in (its reserve included); 250 CKB by default. */
  acceptAmount?: bigint;
  isPublic?: boolean;
  /**
   * A's part paid from this key's cells and its shutdown script this key's lock; A "signs" the
   * funding with the witnesses submitted to it (`submitFunding`), as with
   * `open_channel_with_external_funding`.
   */
  externalFunder?: Uint8Array;
  /** Both sides on these channel rules ('fnn': fnn's nonce schedule); Strand's by default. */
  rules?: ChannelRules;
}

export function pairHarness(
  t: TestChain,
  now: () => number = () => NOW,
  opts: { likeService?: boolean; nonce?: MachineEnv['nonce'] } = {},
) {
  const env = (): MachineEnv => ({
    chainHash: t.chain.genesisHash,
    fundingLock: t.chain.scripts.funding_lock,
    commitmentLock: t.chain.scripts.commitment_lock,
    now,
    ...(opts.nonce ? { nonce: opts.nonce } : {}),
  });

  function perform(me: Side, other: Side, effects: Effect[], events: Event[]): void {
    for (const e of effects) {
      if (e.type !== 'send') me.seen.push(e);
      switch (e.type) {
        case 'send':
          if (e.mayWait) {
            me.held.push(e.msg);
            break;
          }
          release(me, other);
          other.inbox.push(e.msg);
          me.sent.push(e.msg);
          break;
        case 'fund': {
          const tx = e.tx.clone();
          const cell = cellsOf(t.chain, lockOf(me.key)).find(
            (c) => !me.own.has(c.outPoint.txHash + c.outPoint.index),
          )!;
          me.own.add(cell.outPoint.txHash + cell.outPoint.index);
          for (const d of t.chain.scripts.secp256k1_blake160_sighash_all.cellDeps) {
            const dep = ccc.CellDep.from(d);
            if (!tx.cellDeps.some((x) => x.eq(dep))) tx.cellDeps.push(dep);
          }
          tx.inputs.push(ccc.CellInput.from({ previousOutput: cell.outPoint, since: 0n }));
          if (tx.outputs.length > 0 && me.name === 'B') tx.outputs[0]!.capacity += e.contribution;
          tx.addOutput(
            { lock: lockOf(me.key), capacity: cell.output.capacity - e.contribution - 5000n },
            '0x',
          );
          events.push({ type: 'funded', tx });
          break;
        }
        case 'signFunding': {
          if (me.signFunding) {
            events.push({ type: 'fundingSigned', tx: me.signFunding(me.ch, e.tx) });
            break;
          }
          const tx = e.tx.clone();
          const mine = tx.inputs
            .map((i, n) => (me.own.has(i.previousOutput.txHash + i.previousOutput.index) ? n : -1))
            .filter((n) => n >= 0);
          signSighashAll(tx, mine, me.key);
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

  /** What `me` held goes out now. */
  function release(me: Side, other: Side): boolean {
    if (me.held.length === 0) return false;
    other.inbox.push(...me.held);
    me.sent.push(...me.held);
    me.held.length = 0;
    return true;
  }

  /** Feeds `ev` to `me` and plays the effects (and the events they produce). */
  function feed(me: Side, other: Side, ev: Event): void {
    const events = [ev];
    while (events.length) {
      const next = events.shift()!;
      let r: Step;
      try {
        r = step(me.ch, next, env());
      } catch (e) {
        // As the channel service does with a peer's message the machine refuses: log it, and
        // abort an opening that can still be aborted (only with `likeService`; tests that
        // want the refusal itself leave it off).
        if (!opts.likeService || next.type !== 'peer' || !(e instanceof ChannelError)) throw e;
        me.refused.push(`${next.msg.type}: ${e.message}`);
        if (!abortable(me.ch)) continue;
        r = fail(me.ch, e.message);
      }
      me.ch = r.ch;
      perform(me, other, r.effects, events);
    }
  }

  /** Delivers messages both ways until both inboxes are empty. */
  function run(a: Side, b: Side): void {
    for (let guard = 0; guard < 200; guard++) {
      let moved = false;
      for (const [me, other] of [
        [a, b],
        [b, a],
      ] as const) {
        const msg = me.inbox.shift();
        if (!msg) continue;
        moved = true;
        feed(me, other, { type: 'peer', msg });
      }
      // Both inboxes dry: the held messages' timers fire.
      if (!moved && !release(a, b) && !release(b, a)) return;
    }
    throw new Error('the machines keep talking');
  }

  /**
   * Delivers at most `limit` messages, alternating sides as `run` does; returns how many it
   * delivered (fewer than `limit` when both inboxes ran dry).
   */
  function runSteps(a: Side, b: Side, limit: number): number {
    let n = 0;
    while (n < limit) {
      let moved = false;
      for (const [me, other] of [
        [a, b],
        [b, a],
      ] as const) {
        if (n >= limit) break;
        const msg = me.inbox.shift();
        if (!msg) continue;
        moved = true;
        n++;
        feed(me, other, { type: 'peer', msg });
      }
      // Both inboxes dry: the held messages' timers fire.
      if (!moved && !release(a, b) && !release(b, a)) break;
    }
    return n;
  }

  /**
   * A opens (500 CKB) and B accepts (250); the messages wait in the inboxes. Also returns the
   * OpenChannel A sent (the machine's own check finds nothing wrong with it) and B's channel as
   * `receiveOpen` made it.
   */
  function openingPair(o: PairOptions = {}): { A: Side; B: Side; open: OpenChannel; received: Channel } {
    const { openAmount = 500n * CKB, acceptAmount = 250n * CKB, isPublic = false, externalFunder } = o;
    const aKey = externalFunder ?? KEY_A;
    const rules = o.rules ?? 'strand';
    const reserve = reserveFor(lockOf(aKey), null, 'strand');
    const seedA = new Uint8Array(32).fill(0x11);
    const opened = openChannel(
      {
        peer: 'B',
        rules,
        seed: seedA,
        tempId: bytesToHex(tempChannelId(deriveChannelKeys(seedA).tlcBasepoint)),
        isPublic,
        fundingAmount: openAmount - reserve,
        reserve,
        shutdownScript: scriptData(lockOf(aKey)),
        udt: null,
        fundingFeeRate: 1000n,
        commitmentFeeRate: 1000n,
        delayEpoch: 0x0000010000000001n,
        maxTlcValueInFlight: (1n << 128n) - 1n,
        maxTlcNumberInFlight: 125n,
        tlcExpiryDelta: 14_400_000n,
        tlcMinValue: 0n,
        tlcFeeProportionalMillionths: 1000n,
        ...(externalFunder ? { external: { lock: scriptData(lockOf(externalFunder)), cellDeps: [] } } : {}),
      },
      env(),
    );
    const open = opened.effects[0] as Extract<Effect, { type: 'send' }>;
    if (open.msg.type !== 'OpenChannel') throw new Error('expected OpenChannel');
    expect(checkOpenChannel(open.msg.value, env())).toBeNull();
    const received = receiveOpen(
      open.msg.value,
      {
        peer: 'A',
        rules,
        seed: new Uint8Array(32).fill(0x22),
        shutdownScript: scriptData(lockOf(KEY_B)),
        reserve,
      },
      env(),
      { tlcExpiryDelta: 14_400_000n, tlcMinValue: 0n, tlcFeeProportionalMillionths: 1000n },
    );
    const acc = acceptChannel(received, { fundingAmount: acceptAmount - reserve }, env());
    const side = (name: 'A' | 'B', key: Uint8Array, ch: Channel): Side => ({
      name,
      key,
      ch,
      inbox: [],
      held: [],
      own: new Set(),
      seen: [],
      sent: [],
      refused: [],
    });
    const A = side('A', aKey, opened.ch);
    const B = side('B', KEY_B, acc.ch);
    if (externalFunder) A.signFunding = withFunderWitnesses;
    perform(B, A, acc.effects, []);
    return { A, B, open: open.msg.value, received };
  }

  /** A opens 500 CKB, B adds 250 (unless `o` says otherwise): CHANNEL_READY on both (438 / 188 each way). */
  function readyPair(o: PairOptions = {}): { A: Side; B: Side } {
    const { A, B } = openingPair(o);
    run(A, B);
    for (let i = 0; i < 5; i++) t.chain.generateBlock();
    feed(A, B, { type: 'fundingConfirmed' });
    feed(B, A, { type: 'fundingConfirmed' });
    run(A, B);
    expect([A.ch.state, B.ch.state]).toEqual(['CHANNEL_READY', 'CHANNEL_READY']);
    for (const s of [A, B]) {
      s.seen.length = 0;
      s.sent.length = 0;
    }
    return { A, B };
  }

  return { env, feed, run, runSteps, openingPair, readyPair, perform };
}
