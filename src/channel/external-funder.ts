/**
 * External funding, the shell's part (`external-funding.ts` is the pure part):
 * - `fundFromLock`: the opener's part of the funding tx paid from cells of the external funder's
 *   lock (found through the indexer), change back to that lock; nothing is signed here;
 * - `ExternalFundingWatch`: the `open_channel_with_external_funding` callers waiting for the frozen
 *   tx, and the `external_funding_timeout_seconds` deadlines of channels waiting for the signed tx.
 */
import { ccc } from '@ckb-ccc/core';
import { type ChainClient, feeFor, scriptToJson } from '../chain/index.ts';
import { SHANNONS_PER_CKB as CKB } from '../codec/index.ts';
import { fundingTxOf } from './commitment.ts';
import { ChannelError } from './errors.ts';
import { EXTERNAL_TIMEOUT_REASON, externalDeadline, isAwaitingExternalFunding } from './external-funding.ts';
import type { Channel } from './state.ts';

/** A sighash-all witness with an empty 65-byte signature: what the funder's first input will carry. */
const PLACEHOLDER_WITNESS = ccc.hexFrom(
  ccc.WitnessArgs.from({ lock: ccc.hexFrom(new Uint8Array(65)) }).toBytes(),
);

export interface FundFromLock {
  chain: Pick<ChainClient, 'getCells'>;
  /** The tx to complete: output 0 is the funding cell; it gets the funder's inputs and change. */
  tx: ccc.Transaction;
  lock: ccc.Script;
  cellDeps: ccc.CellDep[];
  /** Shannons per 1000 bytes. */
  feeRate: bigint;
  /** Out points (`hash:index`) already promised to another funding tx: skipped. */
  reserved: Set<string>;
}

const outPointKey = (txHash: string, index: string | number | bigint) => `${txHash}:${Number(index)}`;

/**
 * Adds the funder's plain cells (no type, no data) as inputs until they cover the outputs, the fee
 * (at `feeRate`, with a placeholder signature) and a change cell under the funder's lock; returns
 * the out points used. Fails, changing nothing, when the lock's cells do not suffice.
 */
export async function fundFromLock(o: FundFromLock): Promise<string[]> {
  const { tx, lock } = o;
  for (const d of o.cellDeps) if (!tx.cellDeps.some((x) => x.eq(d))) tx.cellDeps.push(d);
  const outSum = tx.outputs.reduce((s, x) => s + x.capacity, 0n);
  const firstOwn = tx.inputs.length;
  const change = ccc.CellOutput.from({ lock, capacity: 0n });
  const minChange = BigInt(change.occupiedSize) * CKB;
  const feeWithChange = () => {
    const t = tx.clone();
    t.addOutput(change, '0x');
    while (t.witnesses.length < t.inputs.length) t.witnesses.push('0x');
    t.witnesses[firstOwn] = PLACEHOLDER_WITNESS;
    return feeFor(t.toBytes().length + 4, o.feeRate);
  };
  const used: string[] = [];
  let inSum = 0n;
  let cursor: string | undefined;
  for (;;) {
    const page = await o.chain.getCells(
      {
        script: scriptToJson(lock),
        script_type: 'lock',
        script_search_mode: 'exact',
        filter: { script_len_range: ['0x0', '0x1'], output_data_len_range: ['0x0', '0x1'] },
        with_data: false,
      },
      'asc',
      100,
      cursor,
    );
    for (const c of page.objects) {
      const key = outPointKey(c.out_point.tx_hash, c.out_point.index);
      if (o.reserved.has(key)) continue;
      tx.inputs.push(
        ccc.CellInput.from({
          previousOutput: { txHash: c.out_point.tx_hash, index: c.out_point.index },
          since: 0n,
        }),
      );
      used.push(key);
      inSum += BigInt(c.output.capacity);
      const fee = feeWithChange();
      if (inSum >= outSum + fee + minChange) {
        change.capacity = inSum - outSum - fee;
        tx.addOutput(change, '0x');
        return used;
      }
    }
    if (page.objects.length < 100) break;
    cursor = page.last_cursor;
  }
  tx.inputs.splice(firstOwn);
  throw new ChannelError(
    'InsufficientFunds',
    `insufficient CKB under the funding lock script: need ${outSum} shannons plus fee, have ${inSum}`,
  );
}

interface Waiter {
  resolve(r: { channelId: string; tx: ccc.Transaction }): void;
  reject(e: Error): void;
}

/**
 * Waiters for the frozen funding tx, and deadlines. Fed every committed channel (`observe`); calls
 * `onDeadline(tempId)` when an external channel is still waiting for the signed tx at its deadline.
 */
export class ExternalFundingWatch {
  private readonly waiters = new Map<string, Waiter>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();

  constructor(
    private readonly timeoutMs: number,
    private readonly onDeadline: (tempId: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Resolves with the frozen unsigned tx of channel `ch` (by temp id), or rejects when it fails. */
  waitForUnsignedTx(ch: Channel): Promise<{ channelId: string; tx: ccc.Transaction }> {
    const p = new Promise<{ channelId: string; tx: ccc.Transaction }>((resolve, reject) => {
      this.waiters.set(ch.tempId, { resolve, reject });
    });
    this.observe(ch);
    return p;
  }

  /** A channel as just committed: settle its waiter, (re)arm or clear its deadline. */
  observe(ch: Channel): void {
    if (!ch.external) return;
    const w = this.waiters.get(ch.tempId);
    if (w && isAwaitingExternalFunding(ch) && ch.fundingTx) {
      this.waiters.delete(ch.tempId);
      w.resolve({ channelId: ch.id, tx: fundingTxOf(ch) });
    } else if (w && ch.state === 'CLOSED') {
      this.waiters.delete(ch.tempId);
      w.reject(
        new ChannelError(
          'FundingFailed',
          ch.failureDetail === EXTERNAL_TIMEOUT_REASON
            ? 'Timeout waiting for unsigned funding tx'
            : `Channel Hash256(${ch.id}) stopped before unsigned external funding tx was returned: ${ch.failureDetail ?? ch.flags.join('|')}`,
        ),
      );
    }
    const at = externalDeadline(ch, this.timeoutMs);
    const cur = this.timers.get(ch.tempId);
    if (cur && cur.at === at) return;
    if (cur) clearTimeout(cur.timer);
    this.timers.delete(ch.tempId);
    if (at === null) return;
    const timer = setTimeout(
      () => {
        this.timers.delete(ch.tempId);
        this.onDeadline(ch.tempId);
      },
      // setTimeout holds at most 2^31-1 ms; a later deadline is re-armed by the early call.
      Math.min(Math.max(0, at - this.now()), 2 ** 31 - 1),
    );
    timer.unref?.();
    this.timers.set(ch.tempId, { at, timer });
  }

  /** Whether the deadline of `ch` has passed (checked again inside the channel's actor). */
  due(ch: Channel): boolean {
    const at = externalDeadline(ch, this.timeoutMs);
    return at !== null && this.now() >= at;
  }

  stop(): void {
    for (const t of this.timers.values()) clearTimeout(t.timer);
    this.timers.clear();
    for (const w of this.waiters.values())
      w.reject(new ChannelError('NodeStopping', 'the node is shutting down'));
    this.waiters.clear();
  }
}
