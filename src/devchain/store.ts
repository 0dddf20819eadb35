/**
 * The dev chain's SQLite database (its own file in the chain's directory): blocks, transactions,
 * every cell ever created (with who spent it), and an input/output index for the indexer RPCs.
 * Script args and data are stored as lower-case hex text so that prefix search is an index range
 * (`args >= p AND args < p || 'g'`: 'g' sorts after every hex digit).
 */
import { ccc } from '@ckb-ccc/core';
import { type SqliteDb as Db, type DomainSchema, openDatabase } from '../store/index.ts';
import type { Block, Header } from './block.ts';
import { txBytesOf, txHashOf } from './txcache.ts';
import { dataHashOf, type ViewCell } from './validate.ts';

export const DEVCHAIN_SCHEMA: DomainSchema = {
  domain: 'devchain',
  migrations: [
    {
      version: 1,
      up: `
        CREATE TABLE dc_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE dc_blocks (
          number INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE, header TEXT NOT NULL, timestamp INTEGER NOT NULL
        );
        CREATE TABLE dc_txs (
          hash TEXT PRIMARY KEY, block_number INTEGER NOT NULL, tx_index INTEGER NOT NULL, raw BLOB NOT NULL
        );
        CREATE INDEX dc_txs_pos ON dc_txs (block_number, tx_index);
        CREATE TABLE dc_cells (
          tx_hash TEXT NOT NULL, idx INTEGER NOT NULL, block_number INTEGER NOT NULL, tx_index INTEGER NOT NULL,
          capacity TEXT NOT NULL,
          lock_code_hash TEXT NOT NULL, lock_hash_type TEXT NOT NULL, lock_args TEXT NOT NULL,
          type_code_hash TEXT, type_hash_type TEXT, type_args TEXT,
          data BLOB NOT NULL, data_hash TEXT NOT NULL,
          spent_by TEXT, spent_block INTEGER,
          PRIMARY KEY (tx_hash, idx)
        );
        CREATE INDEX dc_cells_lock ON dc_cells (lock_code_hash, lock_hash_type, lock_args);
        CREATE INDEX dc_cells_type ON dc_cells (type_code_hash, type_hash_type, type_args);
        CREATE INDEX dc_cells_live ON dc_cells (spent_by);
        CREATE TABLE dc_io (
          tx_hash TEXT NOT NULL, block_number INTEGER NOT NULL, tx_index INTEGER NOT NULL,
          io_type INTEGER NOT NULL, io_index INTEGER NOT NULL,
          lock_code_hash TEXT NOT NULL, lock_hash_type TEXT NOT NULL, lock_args TEXT NOT NULL,
          type_code_hash TEXT, type_hash_type TEXT, type_args TEXT,
          PRIMARY KEY (block_number, tx_index, io_type, io_index)
        );
        CREATE INDEX dc_io_lock ON dc_io (lock_code_hash, lock_hash_type, lock_args);
        CREATE INDEX dc_io_type ON dc_io (type_code_hash, type_hash_type, type_args);
      `,
    },
    {
      // Pending transactions survive a restart: they are re-verified and re-queued on open.
      version: 2,
      up: 'CREATE TABLE dc_pool (seq INTEGER PRIMARY KEY AUTOINCREMENT, hash TEXT NOT NULL UNIQUE, raw BLOB NOT NULL)',
    },
  ],
};

export function openChainDb(file: string): Db {
  return openDatabase(file, [DEVCHAIN_SCHEMA]);
}

export interface CellRow {
  tx_hash: string;
  idx: number;
  block_number: number;
  tx_index: number;
  capacity: string;
  lock_code_hash: string;
  lock_hash_type: string;
  lock_args: string;
  type_code_hash: string | null;
  type_hash_type: string | null;
  type_args: string | null;
  data: Buffer;
  data_hash: string;
  spent_by: string | null;
  spent_block: number | null;
}

export function scriptColumns(s: ccc.Script | undefined): [string | null, string | null, string | null] {
  return s ? [s.codeHash, s.hashType, s.args] : [null, null, null];
}

/** Writes a block: its header, transactions, created cells, spent cells and the io index. */
export function commitBlock(
  db: Db,
  block: Block,
  spentCell: (op: ccc.OutPoint) => ViewCell | undefined,
): void {
  const insBlock = db.prepare('INSERT INTO dc_blocks (number, hash, header, timestamp) VALUES (?, ?, ?, ?)');
  const insTx = db.prepare('INSERT INTO dc_txs (hash, block_number, tx_index, raw) VALUES (?, ?, ?, ?)');
  const insCell = db.prepare(
    `INSERT INTO dc_cells (tx_hash, idx, block_number, tx_index, capacity, lock_code_hash, lock_hash_type, lock_args,
       type_code_hash, type_hash_type, type_args, data, data_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
  );
  const spend = db.prepare('UPDATE dc_cells SET spent_by = ?, spent_block = ? WHERE tx_hash = ? AND idx = ?');
  const unpool = db.prepare('DELETE FROM dc_pool WHERE hash = ?');
  const insIo = db.prepare(
    `INSERT INTO dc_io (tx_hash, block_number, tx_index, io_type, io_index, lock_code_hash, lock_hash_type, lock_args,
       type_code_hash, type_hash_type, type_args) VALUES (?,?,?,?,?,?,?,?,?,?,?)`,
  );
  const n = Number(block.header.number);
  db.transaction(() => {
    insBlock.run(n, block.hash, headerToJson(block.header), Number(block.header.timestamp));
    block.transactions.forEach((tx, txIndex) => {
      const hash = txHashOf(tx);
      insTx.run(hash, n, txIndex, Buffer.from(txBytesOf(tx)));
      unpool.run(hash);
      // A cellbase (tx 0 of every block) spends nothing.
      if (txIndex !== 0) {
        tx.inputs.forEach((input, i) => {
          const cell = spentCell(input.previousOutput);
          spend.run(hash, n, input.previousOutput.txHash, Number(input.previousOutput.index));
          if (cell)
            insIo.run(
              hash,
              n,
              txIndex,
              0,
              i,
              ...scriptColumns(cell.output.lock),
              ...scriptColumns(cell.output.type),
            );
        });
      }
      tx.outputs.forEach((o, i) => {
        const data = ccc.bytesFrom(tx.outputsData[i] ?? '0x');
        insCell.run(
          hash,
          i,
          n,
          txIndex,
          o.capacity.toString(),
          ...scriptColumns(o.lock),
          ...scriptColumns(o.type),
          Buffer.from(data),
          dataHashOf(data),
        );
        insIo.run(hash, n, txIndex, 1, i, ...scriptColumns(o.lock), ...scriptColumns(o.type));
      });
    });
  })();
}

function headerToJson(h: Header): string {
  return JSON.stringify({
    ...h,
    timestamp: h.timestamp.toString(),
    number: h.number.toString(),
    epoch: h.epoch.toString(),
    nonce: h.nonce.toString(),
  });
}

export function headerFromJson(s: string): Header {
  const o = JSON.parse(s);
  return {
    ...o,
    timestamp: BigInt(o.timestamp),
    number: BigInt(o.number),
    epoch: BigInt(o.epoch),
    nonce: BigInt(o.nonce),
  };
}
