/**
 * What the channel service watches on chain, each channel's events fed back through `deliver`:
 * a funding or closing tx until it is deep enough (resent while the chain does not know it), our
 * share after a force close once the delay has passed (or the watchtower's settlement of it), and
 * a ready channel's funding cell spent by the peer's commitment.
 */
import { ccc } from '@ckb-ccc/core';
import { type ChainClient, scriptToJson, txConfirmation } from '../chain/index.ts';
import { hexToBytes } from '../codec/index.ts';
import { blake160 } from '../crypto/index.ts';
import { buildCommitment, fundingTxOf } from './commitment.ts';
import { deriveChannelKeys } from './keys.ts';
import { resendable } from './rebroadcast.ts';
import { toScript } from './script-data.ts';
import { shareSettled } from './share-settled.ts';
import type { Channel } from './state.ts';
import type { Event, MachineEnv } from './step.ts';
import { partySettlementTx, type ScriptInfo } from './tx.ts';
import { latestCommitmentView } from './views.ts';

/** A lost broadcast is sent again every this many polls that find the tx unknown. */
const RESEND_EVERY = 5;

export interface ChannelLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ChainWatchOptions {
  chain: ChainClient;
  commitmentLock: ScriptInfo;
  env: MachineEnv;
  log: ChannelLogger;
  pollMs: number;
  /** Depth at which a funding tx counts as confirmed. */
  confirmations: number;
  /** The channel's current state. */
  channel(tempId: string): Channel | undefined;
  /** Feeds an event to the channel (through its queue). */
  deliver(tempId: string, ev: Event): Promise<void>;
}

export class ChainWatch {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly o: ChainWatchOptions) {}

  stop(): void {
    for (const t of this.timers.values()) clearInterval(t);
    this.timers.clear();
  }

  /** The funding tx, until it is `confirmations` deep: then `fundingConfirmed`. */
  funding(ch: Channel): void {
    if (!ch.fundingTxHash) return;
    this.tx(ch.tempId, ch.fundingTxHash, this.o.confirmations, { type: 'fundingConfirmed' });
  }

  /**
   * Polls the chain until `hash` is `need` blocks deep, then feeds `ev` to the channel. While the
   * chain does not know the tx (a lost broadcast, `rebroadcast.ts`), the same bytes go out again
   * every `RESEND_EVERY` such polls (not on the first: the broadcast itself may be on its way).
   */
  tx(tempId: string, hash: string, need: number, ev: Event): void {
    const key = `${tempId}:${hash}`;
    if (this.timers.has(key)) return;
    let busy = false;
    let missing = 0;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      txConfirmation(this.o.chain, hash)
        .then((c) => {
          if (c.status === 'committed' && c.depth >= need) {
            clearInterval(timer);
            this.timers.delete(key);
            return this.o.deliver(tempId, ev);
          }
          if (c.status !== 'unknown' && c.status !== 'rejected') return;
          if (++missing % RESEND_EVERY !== 0) return;
          const ch = this.o.channel(tempId);
          const tx = ch && resendable(ch, hash);
          if (!tx) return;
          this.o.log.warn(
            { channel: ch.id, tx: hash, status: c.status },
            'the chain does not know our tx: sending it again',
          );
          return this.o.chain.sendTransaction(tx).then(
            () => undefined,
            // A duplicate counts as sent in the chain client (CKB's -1107).
            (err) =>
              this.o.log.warn({ channel: ch.id, tx: hash, err: (err as Error).message }, 'resend refused'),
          );
        })
        .catch((e) =>
          this.o.log.warn({ channel: tempId, err: (e as Error).message }, 'confirmation check failed'),
        )
        .finally(() => {
          busy = false;
        });
    }, this.o.pollMs);
    timer.unref?.();
    this.timers.set(key, timer);
  }

  /**
   * After a force close: once the commitment delay has passed, our share (balance + reserve)
   * goes to our shutdown script. Retried each poll while the chain says "immature" or while the
   * other side must settle first (see `partySettlementTx`).
   */
  settlement(ch0: Channel): void {
    const key = `${ch0.tempId}:settle`;
    if (this.timers.has(key)) return;
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      this.trySettle(ch0.tempId)
        .then((hash) => {
          if (!hash) return;
          clearInterval(timer);
          this.timers.delete(key);
          return this.o.deliver(ch0.tempId, { type: 'settled', txHash: hash });
        })
        .catch((e) =>
          this.o.log.info({ channel: ch0.id, err: (e as Error).message }, 'settlement not possible yet'),
        )
        .finally(() => {
          busy = false;
        });
    }, this.o.pollMs);
    timer.unref?.();
    this.timers.set(key, timer);
  }

  private async trySettle(tempId: string): Promise<string | null> {
    const ch = this.o.channel(tempId);
    if (!ch?.latestCommitmentTx || !ch.flags.includes('WAITING_ONCHAIN_SETTLEMENT')) return null;
    const settleKey = deriveChannelKeys(hexToBytes(ch.seed)).tlcBaseKey;
    const base = {
      settleKey,
      to: toScript(ch.local.shutdownScript),
      fee: 1000n,
      cellDeps: this.o.commitmentLock.cellDeps,
      delayEpoch: ch.delayEpoch,
    };
    if (ch.flags.includes('LOCAL_STATE_OUTDATED')) return this.outdatedSettled(ch);
    const peers = ch.flags.includes('UNCOOPERATIVE_REMOTE');
    const { script } = buildCommitment(latestCommitmentView(ch, peers), peers, this.o.env);
    // With TLCs pending, a share taken first lets the other side take the TLCs with its own.
    if (ch.udt || script[0] !== 0) return this.towerSettled(ch, peers);
    // From the commitment cell, or from what the peer's settlement left of it if it went first.
    return this.settleFromCells(ch, base, !peers);
  }

  /**
   * The share of a UDT channel, or of a commitment with TLCs pending, is the watchtower's to
   * settle (`share-settled.ts`): done once it is out.
   */
  private async towerSettled(ch: Channel, peers: boolean): Promise<string | null> {
    const hash = peers ? ch.shutdownTxHash : ch.latestCommitmentTxHash;
    if (!hash) return null;
    const { args } = buildCommitment(latestCommitmentView(ch, peers), peers, this.o.env);
    const done = await shareSettled(this.o.chain, this.o.commitmentLock, hash, args, !peers);
    return done ? hash : null;
  }

  /**
   * Our share of the peer's commitment (unlock 0xFF), from the commitment cell or from what the
   * peer's own settlement left of it. A commitment whose settlement script is not the one we
   * signed last (an old, revoked one) is left to the watchtower.
   */
  private async settleFromCells(
    ch: Channel,
    base: Omit<Parameters<typeof partySettlementTx>[0], 'cell' | 'script' | 'holder'>,
    holder: boolean,
  ): Promise<string | null> {
    // The version in the args (bytes 28..36) may be one below our counter (the peer's
    // commitment): search by the key hash and delay only, and recognise the cell by its
    // settlement script hash.
    const { script, args } = buildCommitment(latestCommitmentView(ch, !holder), !holder, this.o.env);
    const page = await this.commitmentCells(args, 10);
    for (const c of page.objects) {
      const cellArgs = ccc.bytesFrom(c.output.lock.args);
      // The fresh commitment cell, or the continuation the other side's settlement left (its
      // block zeroed: the holder's is the first of the two, the other's the second).
      const zeroed = holder
        ? [...script.subarray(0, script.length - 36), ...new Uint8Array(36)]
        : [
            ...script.subarray(0, script.length - 72),
            ...new Uint8Array(36),
            ...script.subarray(script.length - 36),
          ];
      const candidates = [script, Uint8Array.from(zeroed)];
      const s = candidates.find((x) => ccc.hexFrom(blake160(x)) === ccc.hexFrom(cellArgs.subarray(36, 56)));
      if (!s) continue;
      const tx = partySettlementTx({
        ...base,
        cell: {
          outPoint: { txHash: c.out_point.tx_hash, index: BigInt(c.out_point.index) },
          output: ccc.CellOutput.from({
            capacity: BigInt(c.output.capacity),
            lock: ccc.Script.from({
              codeHash: c.output.lock.code_hash,
              hashType: c.output.lock.hash_type as ccc.HashType,
              args: c.output.lock.args,
            }),
          }),
        },
        script: s,
        holder,
      });
      return this.o.chain.sendTransaction(tx);
    }
    return null;
  }

  /**
   * An outdated channel closed by the peer: our state cannot rebuild the settlement script of the
   * peer's newer commitment, so the built-in watchtower takes our share once the peer's own
   * settlement reveals it on chain. Settled when no cell is left under the commitment lock of
   * the peer's commitments (found by the key hash and delay, which do not change with versions).
   */
  private async outdatedSettled(ch: Channel): Promise<string | null> {
    if (!ch.shutdownTxHash) return null;
    const { args } = buildCommitment(latestCommitmentView(ch, true), true, this.o.env);
    const page = await this.commitmentCells(args, 1);
    const done =
      page.objects.length === 0 &&
      (await txConfirmation(this.o.chain, ch.shutdownTxHash)).status === 'committed';
    return done ? ch.shutdownTxHash : null;
  }

  /**
   * Notices a force close by the peer: the funding cell of a ready channel spent by a transaction
   * that is neither our close nor our commitment.
   */
  async fundingSpent(ch: Channel): Promise<void> {
    if (!ch.fundingTxHash) return;
    const live = (await this.o.chain.getLiveCell({ txHash: ch.fundingTxHash, index: 0 }, false)) as {
      status: string;
    };
    if (live.status === 'live') return;
    const fundingLockScript = fundingTxOf(ch).outputs[0]?.lock;
    if (!fundingLockScript) return;
    const txs = await this.o.chain.call<{ objects: { tx_hash: string; io_type: string }[] }>(
      'get_transactions',
      [
        { script: scriptToJson(fundingLockScript), script_type: 'lock', script_search_mode: 'exact' },
        'desc',
        '0xa',
      ],
    );
    const spender = txs.objects.find((t) => t.io_type === 'input')?.tx_hash;
    if (!spender || spender === ch.shutdownTxHash || spender === ch.latestCommitmentTxHash) return;
    await this.o.deliver(ch.tempId, { type: 'remoteCommitment', txHash: spender });
  }

  /**
   * Cells under the commitment lock whose args start as `args` do (key hash and delay, bytes
   * 0..28): a commitment of the channel or what a settlement left of it, whatever its version.
   */
  private commitmentCells(args: Uint8Array, limit: number) {
    const lock = {
      codeHash: this.o.commitmentLock.codeHash,
      hashType: this.o.commitmentLock.hashType,
      args: ccc.hexFrom(args.subarray(0, 28)),
    };
    return this.o.chain.getCells(
      { script: scriptToJson(lock), script_type: 'lock', script_search_mode: 'prefix' },
      'desc',
      limit,
    );
  }
}
