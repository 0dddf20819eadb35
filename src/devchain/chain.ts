/**
 * The embedded dev chain: one process-local ledger with a mempool, blocks on demand or on a timer,
 * persisted in SQLite (`devchain.sqlite` in its directory) so a restarted chain keeps its state.
 *
 * Start-up builds the genesis and a setup block (`setup.ts`). Every later block holds a cellbase
 * without outputs (no rewards: total capacity only shrinks by fees) followed by the pending
 * transactions.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import type { SqliteDb as Db } from '../store/index.ts';
import { type Block, type Header, makeBlock, ZERO_HASH } from './block.ts';
import { ChainTxError } from './errors.ts';
import { buildFunding, type DevAccount, type FundingSource, SIGHASH_TYPE_HASH } from './funding.ts';
import { cellbaseInput, cellbaseWitness } from './genesis.ts';
import { type DevScripts, initialise, withTestXudt } from './setup.ts';
import {
  epochFromFull,
  epochOfBlock,
  epochRational,
  MEDIAN_TIME_BLOCK_COUNT,
  medianOf,
  rationalLess,
  type SinceEnv,
} from './since.ts';
import { type CellRow, commitBlock, headerFromJson, openChainDb } from './store.ts';
import { txBytesOf, txHashOf } from './txcache.ts';
import {
  type ChainView,
  checkShape,
  createdCells,
  dataHashOf,
  outPointKey,
  type ViewCell,
  verifyTransaction,
} from './validate.ts';

export { type DevAccount, SIGHASH_TYPE_HASH };

export interface DevChainOptions {
  dir: string;
  specToml?: string;
  /** Blocks per epoch after genesis (default: the spec's genesis_epoch_length). */
  epochLength?: bigint;
  faucetKey?: ccc.Hex;
  accounts?: DevAccount[];
  /** Milliseconds clock, for tests. */
  now?: () => bigint;
  logger?: { info(msg: string): void; warn(msg: string): void };
}

export interface TxRecord {
  tx: ccc.Transaction;
  status: 'pending' | 'committed';
  blockHash?: ccc.Hex;
  blockNumber?: bigint;
  txIndex?: number;
}

interface PoolEntry {
  tx: ccc.Transaction;
  hash: ccc.Hex;
  fee: bigint;
  size: number;
  addedAt: bigint;
}

export const MIN_FEE_RATE = 1000n;
/** A dev RPC must not be able to stall the chain for minutes. */
export const MAX_GENERATED_BLOCKS = 100_000n;

export class DevChain {
  readonly db: Db;
  readonly genesisHash: ccc.Hex;
  readonly epochLength: bigint;
  readonly scripts: DevScripts;
  private readonly headers: Header[] = [];
  private readonly hashes: ccc.Hex[] = [];
  private readonly byHash = new Map<string, number>();
  private readonly live = new Map<string, ViewCell>();
  private readonly pool = new Map<string, PoolEntry>();
  private readonly poolSpent = new Map<string, string>();
  private readonly poolCells = new Map<string, ViewCell>();
  private readonly now: () => bigint;
  /** Added to the clock for block timestamps (`increase_time`); persisted, so time never goes back. */
  private timeOffset = 0n;
  private genesisBlock?: Block;
  private timer?: NodeJS.Timeout;
  private closed = false;

  private constructor(
    db: Db,
    now: () => bigint,
    private readonly logger: NonNullable<DevChainOptions['logger']>,
  ) {
    this.db = db;
    this.now = now;
    for (const row of db.prepare('SELECT number, hash, header FROM dc_blocks ORDER BY number').all() as {
      number: number;
      hash: string;
      header: string;
    }[]) {
      this.pushHeader(headerFromJson(row.header), row.hash as ccc.Hex);
    }
    for (const row of db
      .prepare('SELECT * FROM dc_cells WHERE spent_by IS NULL')
      .iterate() as Iterable<CellRow>) {
      this.live.set(`${row.tx_hash}:${row.idx}`, this.cellFromRow(row));
    }
    const meta = (k: string) =>
      (db.prepare('SELECT value FROM dc_meta WHERE key = ?').get(k) as { value: string })?.value;
    this.genesisHash = this.hashes[0] as ccc.Hex;
    this.epochLength = BigInt(meta('epoch_length'));
    this.timeOffset = BigInt(meta('time_offset') ?? '0');
    this.scripts = withTestXudt(JSON.parse(meta('scripts')));
  }

  /** Opens the chain in `dir`, creating genesis and the setup block on first use. */
  static open(opts: DevChainOptions): DevChain {
    fs.mkdirSync(opts.dir, { recursive: true });
    const file = path.join(opts.dir, 'devchain.sqlite');
    let db: Db;
    try {
      db = openChainDb(file);
    } catch (e) {
      // SQLITE_BUSY ("database is locked"): another process holds the chain's exclusive lock.
      if (String((e as { code?: unknown }).code).startsWith('SQLITE_BUSY')) {
        throw new Error(
          `the dev chain in ${opts.dir} is already open in another process (database is locked)`,
        );
      }
      throw e;
    }
    const now = opts.now ?? (() => BigInt(Date.now()));
    try {
      // One writer per chain: hold SQLite's exclusive lock for as long as this chain is open,
      // so a second process on the same directory fails at once instead of forking the chain.
      db.pragma('busy_timeout = 100');
      db.pragma('locking_mode = EXCLUSIVE');
      try {
        db.prepare("INSERT OR REPLACE INTO dc_meta (key, value) VALUES ('opened_at', ?)").run(String(now()));
      } catch (e) {
        throw new Error(
          `the dev chain in ${opts.dir} is already open in another process (${(e as Error).message})`,
        );
      }
      const has = db.prepare("SELECT value FROM dc_meta WHERE key = 'scripts'").get();
      if (!has) initialise(db, opts, now);
      const chain = new DevChain(
        db,
        now,
        opts.logger ?? { info: () => {}, warn: (m) => process.stderr.write(`${m}\n`) },
      );
      chain.restorePool();
      return chain;
    } catch (e) {
      db.close();
      throw e;
    }
  }

  // ---- queries -------------------------------------------------------------------------------

  get tip(): Header {
    return this.headers[this.headers.length - 1] as Header;
  }

  get tipHash(): ccc.Hex {
    return this.hashes[this.hashes.length - 1] as ccc.Hex;
  }

  headerByNumber(n: bigint): { header: Header; hash: ccc.Hex } | undefined {
    if (n < 0n || n >= BigInt(this.headers.length)) return undefined;
    return { header: this.headers[Number(n)] as Header, hash: this.hashes[Number(n)] as ccc.Hex };
  }

  headerByHash(hash: string): { header: Header; hash: ccc.Hex } | undefined {
    const n = this.byHash.get(hash.toLowerCase());
    return n === undefined ? undefined : this.headerByNumber(BigInt(n));
  }

  blockByNumber(n: bigint): Block | undefined {
    const h = this.headerByNumber(n);
    if (!h) return undefined;
    if (n === 0n && this.genesisBlock) return this.genesisBlock;
    const rows = this.db
      .prepare('SELECT raw FROM dc_txs WHERE block_number = ? ORDER BY tx_index')
      .all(Number(n)) as {
      raw: Buffer;
    }[];
    const block = {
      header: h.header,
      hash: h.hash,
      transactions: rows.map((r) => ccc.Transaction.fromBytes(r.raw)),
    };
    if (n === 0n) this.genesisBlock = block;
    return block;
  }

  /** Median of the timestamps of up to 37 blocks ending at `hash`. */
  medianTime(hash: string): bigint | undefined {
    const n = this.byHash.get(hash.toLowerCase());
    if (n === undefined) return undefined;
    const from = Math.max(0, n - MEDIAN_TIME_BLOCK_COUNT + 1);
    return medianOf(this.headers.slice(from, n + 1).map((h) => h.timestamp));
  }

  transaction(hash: string): TxRecord | undefined {
    const p = this.pool.get(hash.toLowerCase());
    if (p) return { tx: p.tx, status: 'pending' };
    const row = this.db
      .prepare('SELECT block_number, tx_index, raw FROM dc_txs WHERE hash = ?')
      .get(hash.toLowerCase()) as { block_number: number; tx_index: number; raw: Buffer } | undefined;
    if (!row) return undefined;
    return {
      tx: ccc.Transaction.fromBytes(row.raw),
      status: 'committed',
      blockNumber: BigInt(row.block_number),
      blockHash: this.hashes[row.block_number] as ccc.Hex,
      txIndex: row.tx_index,
    };
  }

  /** A committed live cell ('dead' if spent on chain, undefined if never seen). */
  liveCell(op: ccc.OutPointLike): ViewCell | 'dead' | undefined {
    const c = this.live.get(outPointKey(op));
    if (c) return c;
    const row = this.db
      .prepare('SELECT 1 FROM dc_cells WHERE tx_hash = ? AND idx = ?')
      .get(ccc.hexFrom(op.txHash), Number(op.index));
    return row ? 'dead' : undefined;
  }

  pendingCount(): number {
    return this.pool.size;
  }

  /** The position a transaction submitted now is checked against. */
  nextEnv(): SinceEnv {
    const number = this.tip.number + 1n;
    return {
      blockNumber: number,
      epoch: epochOfBlock(number, this.epochLength),
      medianTime: this.medianTime(this.tipHash) as bigint,
    };
  }

  // ---- commands ------------------------------------------------------------------------------

  /** Verifies and queues a transaction; returns its hash or throws ChainTxError. */
  sendTransaction(tx: ccc.Transaction): ccc.Hex {
    checkShape(tx);
    const hash = txHashOf(tx);
    if (this.pool.has(hash) || this.db.prepare('SELECT 1 FROM dc_txs WHERE hash = ?').get(hash)) {
      throw new ChainTxError(
        'PoolRejectedDuplicatedTransaction',
        `Transaction(Byte32(${hash})) already exists in transaction_pool`,
      );
    }
    const v = verifyTransaction(tx, this.view(), this.nextEnv());
    // CKB's pool minimum: 1000 shannons per 1000 bytes (weight = size with no cycles counted).
    const minFee = (BigInt(v.size) * MIN_FEE_RATE) / 1000n;
    if (v.fee < minFee) {
      throw new ChainTxError(
        'PoolRejectedTransactionByMinFeeRate',
        `The min fee rate is ${MIN_FEE_RATE} shannons/KW, requiring a transaction fee of at least ${minFee} shannons, but the fee provided is only ${v.fee}`,
      );
    }
    const entry: PoolEntry = { tx, hash, fee: v.fee, size: v.size, addedAt: this.now() };
    // Persisted before the hash is returned: an accepted transaction survives a restart.
    this.db
      .prepare('INSERT OR IGNORE INTO dc_pool (hash, raw) VALUES (?, ?)')
      .run(hash, Buffer.from(txBytesOf(tx)));
    this.pool.set(hash, entry);
    for (const input of tx.inputs) this.poolSpent.set(outPointKey(input.previousOutput), hash);
    for (const [key, cell] of createdCells(tx, hash)) this.poolCells.set(key, cell);
    return hash;
  }

  /** CKB's `clear_tx_pool`: every pending transaction dropped, as a restarted node's pool. */
  clearPool(): void {
    this.pool.clear();
    this.poolSpent.clear();
    this.poolCells.clear();
    this.db.prepare('DELETE FROM dc_pool').run();
  }

  /** Re-queues the persisted pending transactions; those no longer valid are dropped. */
  private restorePool(): void {
    const rows = this.db.prepare('SELECT hash, raw FROM dc_pool ORDER BY seq').all() as {
      hash: string;
      raw: Buffer;
    }[];
    for (const r of rows) {
      try {
        this.sendTransaction(ccc.Transaction.fromBytes(r.raw));
      } catch (e) {
        if (e instanceof ChainTxError && e.kind === 'PoolRejectedDuplicatedTransaction') continue;
        this.db.prepare('DELETE FROM dc_pool WHERE hash = ?').run(r.hash);
      }
    }
  }

  /** Verifies without queueing (dry run); returns the fee. */
  dryRun(tx: ccc.Transaction): { fee: bigint; size: number } {
    const v = verifyTransaction(tx, this.view(), this.nextEnv());
    return { fee: v.fee, size: v.size };
  }

  /** Commits a new block with every pending transaction; returns its hash. */
  generateBlock(): ccc.Hex {
    const number = this.tip.number + 1n;
    const clock = this.now() + this.timeOffset;
    const timestamp = clock > this.tip.timestamp ? clock : this.tip.timestamp + 1n;
    const cellbase = ccc.Transaction.from({
      version: 0,
      inputs: [cellbaseInput(number)],
      outputs: [],
      outputsData: [],
      witnesses: [cellbaseWitness(ccc.Script.from({ codeHash: ZERO_HASH, hashType: 'data', args: '0x' }))],
    });
    const txs = [cellbase, ...[...this.pool.values()].map((p) => p.tx)];
    const block = makeBlock(
      {
        version: 0,
        compactTarget: this.tip.compactTarget,
        timestamp,
        number,
        epoch: epochOfBlock(number, this.epochLength),
        parentHash: this.tipHash,
        proposalsHash: ZERO_HASH,
        extraHash: ZERO_HASH,
        dao: this.tip.dao,
        nonce: 0n,
      },
      txs,
    );
    commitBlock(this.db, block, (op) => this.live.get(outPointKey(op)));
    this.applyBlock(block);
    return block.hash;
  }

  /**
   * Moves the chain's clock forward by `ms` for the blocks that follow (a dev tool to reach
   * timestamp locks without waiting); returns the clock's new reading.
   */
  increaseTime(ms: bigint): bigint {
    if (ms < 0n || ms > 10n * 365n * 86_400_000n)
      throw new RangeError('increase_time takes 0 to 10 years of milliseconds');
    this.timeOffset += ms;
    this.db
      .prepare(
        "INSERT INTO dc_meta (key, value) VALUES ('time_offset', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
      )
      .run(this.timeOffset.toString());
    return this.now() + this.timeOffset;
  }

  /** Generates blocks until the tip has advanced by `epochs` (an EpochNumberWithFraction value). */
  generateEpochs(epochs: bigint): bigint {
    const start = epochRational(epochFromFull(epochOfBlock(this.tip.number, this.epochLength)));
    const add = epochRational(epochFromFull(epochs));
    const target: [bigint, bigint] = [start[0] * add[1] + add[0] * start[1], start[1] * add[1]];
    let current = epochOfBlock(this.tip.number, this.epochLength);
    // Blocks needed: target·L − (position of the tip), rounded up.
    const need = (target[0] * this.epochLength + target[1] - 1n) / target[1] - this.tip.number;
    if (need > MAX_GENERATED_BLOCKS) {
      throw new RangeError(
        `generate_epochs would produce ${need} blocks; the limit per call is ${MAX_GENERATED_BLOCKS}`,
      );
    }
    while (rationalLess(epochRational(epochFromFull(current)), target)) {
      this.generateBlock();
      current = this.tip.epoch;
    }
    return current;
  }

  /** Produces a block every `ms` (0 = never) until `close()`. */
  startMining(ms: number): void {
    this.stopMining();
    if (ms <= 0) return;
    this.timer = setInterval(() => {
      try {
        this.generateBlock();
      } catch (e) {
        // A timer must not crash the process (e.g. the disk is full); the chain stays as it was.
        this.logger.warn(`devchain: block production failed: ${(e as Error).message}`);
      }
    }, ms);
  }

  stopMining(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Sends `capacity` shannons (and optionally test UDT and test xUDT) from the faucet to `lock`. */
  faucet(lock: ccc.ScriptLike, capacity: bigint, udt = 0n, xudt = 0n): ccc.Hex {
    const key = (
      this.db.prepare("SELECT value FROM dc_meta WHERE key = 'faucet_key'").get() as { value: string }
    ).value;
    // Candidates include the faucet's unconfirmed change, so calls in quick succession chain.
    const source: FundingSource = {
      scripts: this.scripts,
      liveCellsByLock: (l) => [
        ...this.liveCellsByLock(l),
        ...[...this.poolCells.values()].filter(
          (c) => c.output.lock.eq(l) && !c.output.type && c.data.length === 0,
        ),
      ],
    };
    const tx = buildFunding(
      source,
      key as ccc.Hex,
      [{ lock, capacity, udt, xudt }],
      [],
      (op) => !this.poolSpent.has(outPointKey(op)),
    );
    return this.sendTransaction(tx);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopMining();
    this.db.close();
  }

  /** Live cells with this lock (committed, not spent by a pending tx), for the faucet. */
  liveCellsByLock(lock: ccc.Script): ViewCell[] {
    const rows = this.db
      .prepare(
        'SELECT * FROM dc_cells WHERE lock_code_hash = ? AND lock_hash_type = ? AND lock_args = ? AND type_code_hash IS NULL AND spent_by IS NULL ORDER BY block_number, tx_index, idx',
      )
      .all(lock.codeHash, lock.hashType, lock.args) as CellRow[];
    return rows.map((r) => this.cellFromRow(r));
  }

  // ---- internals -----------------------------------------------------------------------------

  private view(): ChainView {
    return {
      cell: (op) => {
        const key = outPointKey(op);
        if (this.poolSpent.has(key)) return 'dead';
        return (
          this.live.get(key) ?? this.poolCells.get(key) ?? (this.liveCell(op) === 'dead' ? 'dead' : undefined)
        );
      },
      hasHeader: (h) => this.byHash.has(h.toLowerCase()),
    };
  }

  private pushHeader(h: Header, hash: ccc.Hex): void {
    this.byHash.set(hash, this.headers.length);
    this.headers.push(h);
    this.hashes.push(hash);
  }

  private applyBlock(block: Block): void {
    this.pushHeader(block.header, block.hash);
    const commit = {
      blockNumber: block.header.number,
      epoch: block.header.epoch,
      timestamp: block.header.timestamp,
    };
    block.transactions.forEach((tx, txIndex) => {
      const hash = txHashOf(tx);
      if (txIndex > 0) for (const input of tx.inputs) this.live.delete(outPointKey(input.previousOutput));
      tx.outputs.forEach((output, index) => {
        const key = `${hash}:${index}`;
        const data = ccc.bytesFrom(tx.outputsData[index] ?? '0x');
        const pooled = this.poolCells.get(key);
        this.live.set(key, {
          outPoint: ccc.OutPoint.from({ txHash: hash, index }),
          output,
          data,
          dataHash: pooled?.dataHash ?? dataHashOf(data),
          commit,
        });
        this.poolCells.delete(key);
      });
      if (this.pool.delete(hash))
        for (const input of tx.inputs) this.poolSpent.delete(outPointKey(input.previousOutput));
    });
  }

  private cellFromRow(row: CellRow): ViewCell {
    const header = this.headers[row.block_number] as Header;
    return {
      outPoint: ccc.OutPoint.from({ txHash: row.tx_hash, index: row.idx }),
      output: ccc.CellOutput.from({
        capacity: BigInt(row.capacity),
        lock: {
          codeHash: row.lock_code_hash,
          hashType: row.lock_hash_type as ccc.HashType,
          args: row.lock_args,
        },
        type: row.type_code_hash
          ? {
              codeHash: row.type_code_hash,
              hashType: row.type_hash_type as ccc.HashType,
              args: row.type_args as string,
            }
          : undefined,
      }),
      data: new Uint8Array(row.data),
      dataHash: row.data_hash as ccc.Hex,
      commit: { blockNumber: BigInt(row.block_number), epoch: header.epoch, timestamp: header.timestamp },
    };
  }
}
