/**
 * The node's wallet: one secp256k1 key, its default lock (secp256k1-blake160 sighash-all), cells
 * collected through the indexer, transactions built with a fee of `feeRate` shannons per 1000
 * bytes of the serialised transaction (as it sits in a block: + 4 bytes), signed sighash-all, sent.
 * Cells spent by transactions this wallet sent are skipped until the indexer stops listing them.
 * Sends are serialised so two transfers never pick the same cells. A transfer the pool refuses
 * for its fee (below the pool's minimum, or outbid under RBF) is rebuilt at a higher rate and sent
 * again; the wallet keeps the raised rate for what it funds next.
 */
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import { bytesToHex, SHANNONS_PER_CKB } from '../codec/index.ts';
import { lockArgsOf, signSighashAll } from '../crypto/index.ts';
import { scriptToAddress, sighashLock } from './address.ts';
import { type ChainClient, CkbRpcError, type IndexerCell, scriptToJson } from './client.ts';
import { ChainError, chainErrorOf } from './errors.ts';

export { SHANNONS_PER_CKB };
/** Occupied capacity of a plain secp256k1-blake160 cell: 8 + 32 + 1 + 20 bytes. */
export const MIN_SIGHASH_CELL = 61n * SHANNONS_PER_CKB;

export class InsufficientFunds extends chainErrorOf('InsufficientFunds') {}

/** Sends of one transfer refused for their fee before the wallet gives up. */
const FEE_RAISES = 4;
/** The highest rate a raise goes to, as a multiple of the configured rate. */
const MAX_RAISE_FACTOR = 64n;

const PLACEHOLDER_WITNESS = ccc.hexFrom(
  ccc.WitnessArgs.from({ lock: ccc.hexFrom(new Uint8Array(65)) }).toBytes(),
);

export interface WalletOptions {
  client: ChainClient;
  secretKey: Uint8Array;
  /** Shannons per 1000 bytes (default 1000, CKB's minimum relay rate and fnn's fixed rate). */
  feeRate?: bigint;
  logger?: { warn(obj: object, msg?: string): void };
  /** Address prefix: `ckt` (default) or `ckb` for mainnet. */
  addressPrefix?: string;
  /**
   * How long a funding that finds too little waits while transactions of ours are in flight
   * (their change comes back once they commit) before it fails (default 30 s).
   */
  pendingWaitMs?: number;
}

export interface Wallet {
  readonly lockScript: ccc.Script;
  readonly address: string;
  /** Capacity of all live cells under the wallet lock, in shannons. */
  balance(): Promise<bigint>;
  /** The rate fund() pays now (shannons/KB): the configured one, or what a refusal raised it to. */
  feeRate(): bigint;
  /** Sends `amount` shannons to `toLock`; resolves to the transaction hash once accepted by the pool. */
  transfer(toLock: ccc.ScriptLike, amount: bigint): Promise<ccc.Hex>;
  /**
   * Adds wallet cells as inputs to cover the outputs plus the fee and appends change (when the
   * change would be too small to stand as a cell, it goes to the fee). Does not sign. The inputs
   * stay reserved (no later fund() picks them) until the chain spends them or release() is called.
   */
  fund(tx: ccc.Transaction): Promise<ccc.Transaction>;
  /** Signs the inputs fund() added (one sighash-all group). Call after the tx is final. */
  sign(tx: ccc.Transaction): ccc.Transaction;
  /** Un-reserves the inputs fund() added, for a transaction that will not be sent. */
  release(tx: ccc.Transaction): void;
  /**
   * Signs every input whose live cell is locked by the wallet lock, found through the chain
   * (`get_live_cell`): for a transaction funded before a restart, or by several parties.
   */
  signOwnInputs(tx: ccc.Transaction): Promise<ccc.Transaction>;
  /** The cell deps a transaction spending wallet cells needs. */
  cellDeps(): Promise<ccc.CellDep[]>;
}

export function feeFor(sizeInBlock: number, feeRate: bigint): bigint {
  return (BigInt(sizeInBlock) * feeRate + 999n) / 1000n;
}

export function createWallet(opts: WalletOptions): Wallet {
  const { client } = opts;
  const baseFeeRate = opts.feeRate ?? 1000n;
  let feeRate = baseFeeRate;
  const lockScript = sighashLock(bytesToHex(lockArgsOf(opts.secretKey)));
  const address = scriptToAddress(lockScript, opts.addressPrefix ?? 'ckt');
  const searchKey = {
    script: scriptToJson(lockScript),
    script_type: 'lock' as const,
    script_search_mode: 'exact' as const,
  };
  const pendingSpent = new Set<string>();
  let deps: ccc.CellDep[] | undefined;
  let queue: Promise<unknown> = Promise.resolve();

  async function cellDeps(): Promise<ccc.CellDep[]> {
    if (deps) return deps;
    // Strand's dev chain names them; otherwise CKB's dev-chain convention: genesis tx 1, output 0.
    try {
      const s = await client.call<{ secp256k1_blake160_sighash_all: { cell_deps: unknown[] } }>(
        'get_dev_scripts',
      );
      deps = s.secp256k1_blake160_sighash_all.cell_deps.map((d) =>
        cccA.JsonRpcTransformers.cellDepTo(d as Parameters<typeof cccA.JsonRpcTransformers.cellDepTo>[0]),
      );
    } catch {
      const block = await client.call<{ transactions: { hash: string }[] }>('get_block_by_number', ['0x0']);
      const tx1 = block.transactions[1];
      if (!tx1)
        throw new ChainError('NoDepGroup', 'the chain has no dep-group transaction in its genesis block');
      deps = [ccc.CellDep.from({ outPoint: { txHash: tx1.hash, index: 0 }, depType: 'depGroup' })];
    }
    return deps;
  }

  /** Plain cells (no type, no data) of the wallet, oldest first, minus those we already spent. */
  async function* spendable(): AsyncGenerator<IndexerCell> {
    const seen = new Set<string>();
    let cursor: string | undefined;
    const key = {
      ...searchKey,
      filter: { script_len_range: ['0x0', '0x1'], output_data_len_range: ['0x0', '0x1'] },
      with_data: false,
    };
    for (;;) {
      const page = await client.getCells(key, 'asc', 100, cursor);
      for (const c of page.objects) {
        const k = `${c.out_point.tx_hash}:${Number(c.out_point.index)}`;
        seen.add(k);
        if (!pendingSpent.has(k)) yield c;
      }
      if (page.objects.length < 100) break;
      cursor = page.last_cursor;
    }
    // A full scan: anything we marked that the indexer no longer lists is spent on chain.
    for (const k of pendingSpent) if (!seen.has(k)) pendingSpent.delete(k);
  }

  async function fund(tx: ccc.Transaction): Promise<ccc.Transaction> {
    for (const d of await cellDeps()) if (!tx.cellDeps.some((x) => x.eq(d))) tx.cellDeps.push(d);
    // Inputs already present (e.g. a peer's, in a shared funding transaction) are not ours to
    // count: we cover our outputs against our own inputs only.
    const outSum = tx.outputs.reduce((s, o) => s + o.capacity, 0n);
    const firstOwn = tx.inputs.length;
    const change = ccc.CellOutput.from({ lock: lockScript, capacity: 0n });
    const fee = (withChange: boolean) => {
      const t = tx.clone();
      if (withChange) t.addOutput(change, '0x');
      while (t.witnesses.length < t.inputs.length) t.witnesses.push('0x');
      t.witnesses[firstOwn] = PLACEHOLDER_WITNESS;
      return feeFor(t.toBytes().length + 4, feeRate);
    };
    let inSum = 0n;
    for await (const c of spendable()) {
      tx.inputs.push(
        ccc.CellInput.from({
          previousOutput: { txHash: c.out_point.tx_hash, index: c.out_point.index },
          since: 0n,
        }),
      );
      inSum += BigInt(c.output.capacity);
      const withChange = fee(true);
      if (inSum >= outSum + withChange + MIN_SIGHASH_CELL) {
        change.capacity = inSum - outSum - withChange;
        tx.addOutput(change, '0x');
        return tx;
      }
    }
    // No change cell possible: accept only if the remainder is what the fee needs anyway.
    if (tx.inputs.length > firstOwn && inSum >= outSum + fee(false) && inSum - outSum < MIN_SIGHASH_CELL)
      return tx;
    tx.inputs.splice(firstOwn);
    throw new InsufficientFunds(
      `insufficient CKB in wallet ${address}: need ${outSum} shannons plus fee, have ${inSum} spendable`,
    );
  }

  function sign(tx: ccc.Transaction): ccc.Transaction {
    // Our inputs are the ones fund() added (remembered by out point).
    const ours = tx.inputs.map((_, i) => i).filter((i) => ownInputs.has(key(tx.inputs[i] as ccc.CellInput)));
    if (ours.length) signSighashAll(tx, ours, opts.secretKey);
    return tx;
  }

  const ownInputs = new Set<string>();
  const key = (i: ccc.CellInput) => `${i.previousOutput.txHash}:${Number(i.previousOutput.index)}`;

  /**
   * `fund`, waiting out our own transactions in flight when the wallet is short: a cell they
   * spend is reserved, and their change is spendable only once they commit (the indexer lists
   * committed cells). Two operations in a row (a claim, then an opening) must not fail for that.
   */
  async function fundWaiting(tx: ccc.Transaction): Promise<void> {
    const end = Date.now() + (opts.pendingWaitMs ?? 30_000);
    for (;;) {
      try {
        await fund(tx);
        return;
      } catch (e) {
        if (!(e instanceof InsufficientFunds) || pendingSpent.size === 0 || Date.now() > end) throw e;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  async function fundAndRemember(tx: ccc.Transaction): Promise<ccc.Transaction> {
    const before = tx.inputs.length;
    await fundWaiting(tx);
    // Reserved from now on: a second fund() must not pick them while this tx is in flight.
    for (const i of tx.inputs.slice(before)) {
      ownInputs.add(key(i));
      pendingSpent.add(key(i));
    }
    return tx;
  }

  async function signOwnInputs(tx: ccc.Transaction): Promise<ccc.Transaction> {
    const ours: number[] = [];
    for (const [i, input] of tx.inputs.entries()) {
      const r = (await client.getLiveCell(input.previousOutput, false)) as {
        status: string;
        cell: { output: { lock: { code_hash: string; hash_type: string; args: string } } } | null;
      };
      const lock = r.cell?.output.lock;
      if (
        r.status === 'live' &&
        lock?.code_hash === lockScript.codeHash &&
        lock.hash_type === lockScript.hashType &&
        lock.args === lockScript.args
      ) {
        ours.push(i);
      }
    }
    if (ours.length) signSighashAll(tx, ours, opts.secretKey);
    return tx;
  }

  /** Gives back the inputs fund() reserved for a transaction that will not be sent. */
  function release(tx: ccc.Transaction): void {
    for (const i of tx.inputs) {
      pendingSpent.delete(key(i));
      ownInputs.delete(key(i));
    }
  }

  /** Twice the rate, at least what the pool states or its recent median; capped. */
  async function raisedFeeRate(e: CkbRpcError): Promise<bigint> {
    let next = feeRate * 2n;
    const stated = e.minFeeRate;
    if (stated !== undefined && stated > next) next = stated;
    const median = await client.feeRate(next).catch(() => next);
    if (median > next) next = median;
    const cap = baseFeeRate * MAX_RAISE_FACTOR;
    return next > cap ? cap : next;
  }

  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = queue.then(fn, fn);
    queue = run.catch(() => undefined);
    return run;
  }

  return {
    lockScript,
    address,
    balance: () => client.getCellsCapacity(searchKey),
    feeRate: () => feeRate,
    fund: (tx) => serial(() => fundAndRemember(tx)),
    sign,
    release,
    signOwnInputs,
    cellDeps,
    transfer(toLock, amount) {
      return serial(async () => {
        if (amount < MIN_SIGHASH_CELL) {
          throw new ChainError(
            'AmountBelowCellMinimum',
            `transfer amount ${amount} is below the 61 CKB a cell needs`,
          );
        }
        for (let raises = 0; ; raises++) {
          const tx = ccc.Transaction.from({
            version: 0,
            outputs: [{ lock: toLock, capacity: amount }],
            outputsData: ['0x'],
          });
          await fundAndRemember(tx);
          sign(tx);
          try {
            return await client.sendTransaction(tx);
          } catch (e) {
            release(tx);
            if (!(e instanceof CkbRpcError) || e.kind !== 'fee_too_low' || raises >= FEE_RAISES) throw e;
            const before = feeRate;
            feeRate = await raisedFeeRate(e);
            if (feeRate <= before) throw e;
            opts.logger?.warn(
              { tx: tx.hash(), fee_rate: String(before), new_fee_rate: String(feeRate), err: e.message },
              'fee refused by the pool: sending again at a higher rate',
            );
          }
        }
      });
    },
  };
}
