/**
 * The indexer queries of CKB (`get_cells`, `get_cells_capacity`, `get_transactions`) over the dev
 * chain's tables: search by lock or type script (prefix, exact or partial args), filters (other
 * script, script length, data, data length, capacity, block range — ranges are [from, to)),
 * ascending or descending order, and cursor pagination. Only committed cells are indexed, as in CKB.
 */
import type { ccc } from '@ckb-ccc/core';
import type { SqliteDb as Db } from '../store/index.ts';
import type { CellRow } from './store.ts';

export type SearchMode = 'prefix' | 'exact' | 'partial';

export interface SearchKey {
  script: ccc.Script;
  scriptType: 'lock' | 'type';
  searchMode: SearchMode;
  filter?: {
    script?: ccc.Script;
    scriptLenRange?: [bigint, bigint];
    outputData?: ccc.Hex;
    outputDataFilterMode?: SearchMode;
    outputDataLenRange?: [bigint, bigint];
    outputCapacityRange?: [bigint, bigint];
    blockRange?: [bigint, bigint];
  };
  withData?: boolean;
  groupByTransaction?: boolean;
}

export interface Page<T> {
  objects: T[];
  lastCursor: string;
}

export class IndexerError extends Error {}

const MAX_LIMIT = 10_000;

interface Where {
  sql: string[];
  params: unknown[];
  /** Checks SQL cannot express exactly (partial matches on byte boundaries). */
  post: ((row: Record<string, unknown>) => boolean)[];
}

function scriptWhere(w: Where, prefix: 'lock' | 'type', script: ccc.Script, mode: SearchMode): void {
  w.sql.push(`${prefix}_code_hash = ?`, `${prefix}_hash_type = ?`);
  w.params.push(script.codeHash, script.hashType);
  const args = script.args.toLowerCase();
  if (mode === 'exact') {
    w.sql.push(`${prefix}_args = ?`);
    w.params.push(args);
  } else if (mode === 'prefix') {
    // 'g' sorts after every hex digit, so [p, p+'g') is exactly the strings starting with p.
    w.sql.push(`${prefix}_args >= ?`, `${prefix}_args < ?`);
    w.params.push(args, `${args}g`);
  } else {
    const needle = args.slice(2);
    w.sql.push(`instr(${prefix}_args, ?) > 0`);
    w.params.push(needle);
    w.post.push((row) => hexContains(String(row[`${prefix}_args`]), needle));
  }
}

function hexContains(hay: string, needle: string): boolean {
  const h = hay.slice(2);
  for (let i = h.indexOf(needle); i >= 0; i = h.indexOf(needle, i + 1)) if (i % 2 === 0) return true;
  return false;
}

/** SQLite integers are signed 64-bit; CKB's ranges are u64 (fnn asks up to u64::MAX). */
const SQL_INT_MAX = (1n << 63n) - 1n;

function range(w: Where, expr: string, r: [bigint, bigint] | undefined): void {
  if (!r) return;
  // No stored value reaches 2^63: a bound at or past it excludes everything (from) or nothing (to).
  if (r[0] > SQL_INT_MAX) {
    w.sql.push('0');
    return;
  }
  w.sql.push(`${expr} >= ?`);
  w.params.push(r[0]);
  if (r[1] <= SQL_INT_MAX) {
    w.sql.push(`${expr} < ?`);
    w.params.push(r[1]);
  }
}

function buildWhere(key: SearchKey, cells: boolean): Where {
  const w: Where = { sql: [], params: [], post: [] };
  scriptWhere(w, key.scriptType, key.script, key.searchMode);
  const other = key.scriptType === 'lock' ? 'type' : 'lock';
  const f = key.filter;
  if (f?.script) scriptWhere(w, other, f.script, 'prefix');
  if (f?.scriptLenRange) {
    range(
      w,
      `(CASE WHEN ${other}_code_hash IS NULL THEN 0 ELSE 33 + (length(${other}_args) - 2) / 2 END)`,
      f.scriptLenRange,
    );
  }
  range(w, 'block_number', f?.blockRange);
  if (cells) {
    range(w, 'length(data)', f?.outputDataLenRange);
    range(w, 'CAST(capacity AS INTEGER)', f?.outputCapacityRange);
    if (f?.outputData !== undefined) {
      const needle = f.outputData.slice(2).toLowerCase();
      const mode = f.outputDataFilterMode ?? 'prefix';
      w.post.push((row) => {
        const d = (row.data as Buffer).toString('hex');
        if (mode === 'exact') return d === needle;
        if (mode === 'prefix') return d.startsWith(needle);
        return hexContains(`0x${d}`, needle);
      });
    }
  }
  return w;
}

function cursorOf(parts: number[]): string {
  const b = Buffer.alloc(parts.length * 4);
  parts.forEach((p, i) => {
    b.writeUInt32BE(p, i * 4);
  });
  return `0x${b.toString('hex')}`;
}

function parseCursor(c: string | undefined, n: number): number[] | undefined {
  if (c === undefined || c === null || c === '0x') return undefined;
  if (!/^0x[0-9a-fA-F]*$/.test(c) || c.length !== 2 + n * 8) throw new IndexerError('invalid after_cursor');
  const b = Buffer.from(c.slice(2), 'hex');
  return Array.from({ length: n }, (_, i) => b.readUInt32BE(i * 4));
}

function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit <= 0) throw new IndexerError('limit should be greater than 0');
  if (limit > MAX_LIMIT) throw new IndexerError(`limit must be less than ${MAX_LIMIT}`);
}

/**
 * One page of rows after `afterCursor`: scans in batches, applying post-filters, until `limit`
 * matches or the end. The page's last cursor is the `cols` of its last row.
 */
function scanPage<R extends Record<string, unknown>>(
  db: Db,
  table: string,
  cols: string[],
  w: Where,
  order: 'asc' | 'desc',
  limit: number,
  afterCursor: string | undefined,
): Page<R> {
  const dir = order === 'desc' ? 'DESC' : 'ASC';
  const cmp = order === 'desc' ? '<' : '>';
  const out: R[] = [];
  const page = (): Page<R> => {
    const last = out[out.length - 1];
    return {
      objects: out,
      lastCursor: last ? cursorOf(cols.map((c) => Number(last[c]))) : (afterCursor ?? '0x'),
    };
  };
  let cursor = parseCursor(afterCursor, cols.length);
  for (;;) {
    const sql = [...w.sql];
    const params = [...w.params];
    if (cursor) {
      sql.push(`(${cols.join(', ')}) ${cmp} (${cols.map(() => '?').join(', ')})`);
      params.push(...cursor);
    }
    const batch = Math.max(limit - out.length, 100);
    const rows = db
      .prepare(
        `SELECT * FROM ${table} WHERE ${sql.join(' AND ')} ORDER BY ${cols.map((c) => `${c} ${dir}`).join(', ')} LIMIT ?`,
      )
      .all(...params, batch) as R[];
    for (const r of rows) {
      if (w.post.every((p) => p(r))) out.push(r);
      if (out.length === limit) return page();
    }
    if (rows.length < batch) return page();
    cursor = cols.map((c) => Number((rows[rows.length - 1] as R)[c]));
  }
}

export function getCells(
  db: Db,
  key: SearchKey,
  order: 'asc' | 'desc',
  limit: number,
  afterCursor?: string,
): Page<CellRow> {
  checkLimit(limit);
  const w = buildWhere(key, true);
  w.sql.push('spent_by IS NULL');
  const cols = ['block_number', 'tx_index', 'idx'];
  return scanPage<CellRow & Record<string, unknown>>(db, 'dc_cells', cols, w, order, limit, afterCursor);
}

export function getCellsCapacity(db: Db, key: SearchKey): bigint {
  const w = buildWhere(key, true);
  w.sql.push('spent_by IS NULL');
  let total = 0n;
  const stmt = db.prepare(`SELECT * FROM dc_cells WHERE ${w.sql.join(' AND ')}`);
  for (const r of stmt.iterate(...w.params) as Iterable<CellRow & Record<string, unknown>>) {
    if (w.post.every((p) => p(r))) total += BigInt(r.capacity);
  }
  return total;
}

export interface IoRow {
  tx_hash: string;
  block_number: number;
  tx_index: number;
  io_type: number;
  io_index: number;
}

export interface TxGroup {
  tx_hash: string;
  block_number: number;
  tx_index: number;
  cells: [0 | 1, number][];
}

export function getTransactions(
  db: Db,
  key: SearchKey,
  order: 'asc' | 'desc',
  limit: number,
  afterCursor?: string,
): Page<IoRow> | Page<TxGroup> {
  checkLimit(limit);
  const w = buildWhere(key, false);
  if (!key.groupByTransaction) {
    const cols = ['block_number', 'tx_index', 'io_type', 'io_index'];
    return scanPage<IoRow & Record<string, unknown>>(db, 'dc_io', cols, w, order, limit, afterCursor);
  }
  // Grouped: page over transactions (SQL GROUP BY), then list each one's matching cells.
  const after = parseCursor(afterCursor, 2);
  const dir = order === 'desc' ? 'DESC' : 'ASC';
  const sql = [...w.sql];
  const params = [...w.params];
  if (after) {
    sql.push(`(block_number, tx_index) ${order === 'desc' ? '<' : '>'} (?, ?)`);
    params.push(...after);
  }
  const txs = db
    .prepare(
      `SELECT tx_hash, block_number, tx_index FROM dc_io WHERE ${sql.join(' AND ')}
       GROUP BY block_number, tx_index ORDER BY block_number ${dir}, tx_index ${dir} LIMIT ?`,
    )
    .all(...params, limit) as { tx_hash: string; block_number: number; tx_index: number }[];
  const cellsOf = db.prepare(
    `SELECT * FROM dc_io WHERE ${w.sql.join(' AND ')} AND block_number = ? AND tx_index = ? ORDER BY io_type, io_index`,
  );
  const groups: TxGroup[] = [];
  for (const t of txs) {
    const rows = (
      cellsOf.all(...w.params, t.block_number, t.tx_index) as (IoRow & Record<string, unknown>)[]
    ).filter((r) => w.post.every((p) => p(r)));
    if (rows.length) groups.push({ ...t, cells: rows.map((r) => [r.io_type as 0 | 1, r.io_index]) });
  }
  const last = txs[txs.length - 1];
  return {
    objects: groups,
    lastCursor: last ? cursorOf([last.block_number, last.tx_index]) : (afterCursor ?? '0x'),
  };
}
