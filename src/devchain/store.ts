/**
 * The dev chain's SQLite database (its own file in the chain's directory): blocks, transactions,
 * every cell ever created (with who spent it), and an input/output index for the indexer RPCs.
 * Script args and data are stored as lower-case hex text so that prefix search is an index range
 * (`args >= p AND args < p || 'g'`: 'g' sorts after every hex digit).
 */
import type { ccc } from '@ckb-ccc/core';
import { type SqliteDb as Db, type DomainSchema, openDatabase } from '../store/index.ts';

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
