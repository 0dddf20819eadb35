/**
 * Our part of a channel's funding tx, for the channel service: the wallet's CKB cells (or an
 * external funder's, under its lock, unsigned), the token cells of a UDT channel, and our
 * secp256k1 signatures of the inputs that are ours. Cells promised to a funding tx not on chain
 * yet are kept here until the channel is ready or closed, so that two openings never pick the
 * same cell.
 */
import { ccc } from '@ckb-ccc/core';
import type { Wallet } from '../chain/index.ts';
import { type ChainClient, scriptToJson } from '../chain/index.ts';
import { signSighashAll } from '../crypto/index.ts';
import { ChannelError } from './errors.ts';
import { fundFromLock } from './external-funder.ts';
import { toScript } from './script-data.ts';
import type { Channel, ScriptData } from './state.ts';

export interface WalletFundingOptions {
  wallet: Wallet;
  chain: ChainClient;
  /** The wallet's key, to sign our inputs ourselves; the wallet signs when absent. */
  walletSecretKey?: Uint8Array;
}

export class WalletFunding {
  /**
   * Cells promised to a funding tx not on chain yet, by channel (temp id): an external funder's
   * CKB cells, and the token cells of a UDT funding (ours or the funder's). Another opening must
   * not pick them (its funding tx would conflict and never confirm). The wallet keeps its own
   * reservations for the plain CKB cells it funds with.
   */
  private readonly promisedCells = new Map<string, string[]>();
  /** External fundings run one at a time, so two never pick the same cells of a funder. */
  private funderQueue: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: WalletFundingOptions) {}

  /** The channel's funding is on chain (or never will be): its cells are no longer promised. */
  settled(tempId: string): void {
    this.promisedCells.delete(tempId);
  }

  async fund(
    ch: Channel,
    tx: ccc.Transaction,
    contribution: bigint,
    udtAmount: bigint,
  ): Promise<ccc.Transaction> {
    const udtDeps = (ch.udtCellDeps ?? []).map((d) => ccc.CellDep.from(d));
    const addDeps = (t: ccc.Transaction) => {
      for (const d of udtDeps) if (!t.cellDeps.some((x) => x.eq(d))) t.cellDeps.push(d);
    };
    if (!ch.isAcceptor) {
      const t = await this.o.wallet.fund(tx.clone());
      if (udtAmount > 0n) await this.withUdtInputs(ch, t, udtAmount);
      addDeps(t);
      return t;
    }
    // The acceptor adds its part: its cells and change, and its amount into output 0.
    const lock = tx.outputs[0]?.lock;
    if (!lock) throw new ChannelError('MissingState', 'funding tx without a funding cell');
    const part = await this.o.wallet.fund(
      ccc.Transaction.from({ version: 0, outputs: [{ lock, capacity: contribution }], outputsData: ['0x'] }),
    );
    if (udtAmount > 0n) await this.withUdtInputs(ch, part, udtAmount);
    const merged = tx.clone();
    (merged.outputs[0] as ccc.CellOutput).capacity += contribution;
    if (ch.udt) {
      const have = ccc.numLeFromBytes(ccc.bytesFrom(merged.outputsData[0] ?? '0x'));
      merged.outputsData[0] = ccc.hexFrom(ccc.numLeToBytes(have + udtAmount, 16));
    }
    for (const d of part.cellDeps) if (!merged.cellDeps.some((x) => x.eq(d))) merged.cellDeps.push(d);
    addDeps(merged);
    merged.inputs.push(...part.inputs);
    for (let i = 1; i < part.outputs.length; i++) {
      merged.outputs.push(part.outputs[i] as ccc.CellOutput);
      merged.outputsData.push(part.outputsData[i] ?? '0x');
    }
    merged.witnesses = [];
    return merged;
  }

  /**
   * The opener's part paid by an external funder: cells of `ch.external.lock` (and its tokens for
   * a UDT channel), change back to it; nothing signed. The cells stay promised to this channel.
   */
  fundExternal(ch: Channel, tx0: ccc.Transaction, udtAmount: bigint): Promise<ccc.Transaction> {
    const run = this.funderQueue.then(() => this.fundExternalNow(ch, tx0, udtAmount));
    this.funderQueue = run.catch(() => undefined);
    return run;
  }

  private async fundExternalNow(
    ch: Channel,
    tx0: ccc.Transaction,
    udtAmount: bigint,
  ): Promise<ccc.Transaction> {
    const ext = ch.external as NonNullable<Channel['external']>;
    const lock = toScript(ext.lock as ScriptData);
    const wallet = this.o.wallet.lockScript;
    // The default lock's deps when the funder uses it; a custom lock brings its own.
    const deps =
      lock.codeHash === wallet.codeHash && lock.hashType === wallet.hashType
        ? [...(await this.o.wallet.cellDeps())]
        : [];
    for (const d of [...(ext.cellDeps ?? []), ...(ch.udtCellDeps ?? [])]) deps.push(ccc.CellDep.from(d));
    const tx = tx0.clone();
    const reserved = new Set([...this.promisedCells.values()].flat());
    const used = await fundFromLock({
      chain: this.o.chain,
      tx,
      lock,
      cellDeps: deps,
      feeRate: ch.fundingFeeRate,
      reserved,
    });
    this.promisedCells.set(ch.tempId, used);
    if (udtAmount > 0n) await this.addUdtInputs(ch, tx, udtAmount, lock);
    return tx;
  }

  /** `addUdtInputs` for a tx the wallet funded: its CKB inputs go back to it when tokens lack. */
  private async withUdtInputs(ch: Channel, tx: ccc.Transaction, amount: bigint): Promise<void> {
    try {
      await this.addUdtInputs(ch, tx, amount);
    } catch (e) {
      this.o.wallet.release(tx);
      throw e;
    }
  }

  /**
   * Our UDT cells for `amount` tokens (or the external funder's, under `lock`): inputs, and one
   * change cell keeping their capacity and the tokens left over. The bytes they add are paid
   * from the CKB change under the same lock (2000 shannons per cell).
   */
  private async addUdtInputs(
    ch: Channel,
    tx: ccc.Transaction,
    amount: bigint,
    lock: ccc.Script = this.o.wallet.lockScript,
  ): Promise<void> {
    const udt = toScript(ch.udt as ScriptData);
    const page = await this.o.chain.getCells(
      {
        script: scriptToJson(lock),
        script_type: 'lock',
        script_search_mode: 'exact',
        filter: { script: scriptToJson(udt) },
        with_data: true,
      },
      'asc',
      100,
    );
    let tokens = 0n;
    let capacity = 0n;
    let used = 0;
    const promised = new Set([...this.promisedCells.values()].flat());
    const picked: string[] = [];
    for (const c of page.objects) {
      if (tokens >= amount) break;
      const data = ccc.bytesFrom(c.output_data ?? '0x');
      const key = `${c.out_point.tx_hash}:${Number(c.out_point.index)}`;
      if (data.length < 16 || promised.has(key)) continue;
      picked.push(key);
      tx.inputs.push(
        ccc.CellInput.from({
          previousOutput: { txHash: c.out_point.tx_hash, index: c.out_point.index },
          since: 0n,
        }),
      );
      tokens += ccc.numLeFromBytes(data.subarray(0, 16));
      capacity += BigInt(c.output.capacity);
      used++;
    }
    if (tokens < amount)
      throw new ChannelError(
        'InsufficientFunds',
        `insufficient UDT in the wallet: need ${amount}, have ${tokens}`,
      );
    // Promised in the same turn as picked: a concurrent opening cannot take them in between.
    this.promisedCells.set(ch.tempId, [...(this.promisedCells.get(ch.tempId) ?? []), ...picked]);
    tx.addOutput({ lock, type: udt, capacity }, ccc.numLeToBytes(tokens - amount, 16));
    const change = tx.outputs.findIndex((o, i) => i > 0 && o.lock.eq(lock) && !o.type);
    if (change < 0) throw new ChannelError('InsufficientFunds', 'no CKB change to pay for the UDT inputs');
    (tx.outputs[change] as ccc.CellOutput).capacity -= 2000n * BigInt(used);
  }

  /** Signs every input of ours (broadcasting is the machine's decision, once it is persisted). */
  async sign(tx0: ccc.Transaction): Promise<ccc.Transaction> {
    const tx = tx0.clone();
    const key = this.o.walletSecretKey;
    if (!key) return this.o.wallet.sign(tx);
    const lock = this.o.wallet.lockScript;
    const ours: number[] = [];
    for (const [i, input] of tx.inputs.entries()) {
      const live = (await this.o.chain.getLiveCell(input.previousOutput, false)) as {
        status: string;
        cell?: { output?: { lock?: { code_hash: string; hash_type: string; args: string } } };
      };
      const l = live.cell?.output?.lock;
      if (
        l &&
        ccc.Script.from({ codeHash: l.code_hash, hashType: l.hash_type as ccc.HashType, args: l.args }).eq(
          lock,
        )
      )
        ours.push(i);
    }
    if (ours.length) signSighashAll(tx, ours, key);
    return tx;
  }
}
