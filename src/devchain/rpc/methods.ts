/**
 * The dev chain's CKB JSON-RPC methods (positional params, CKB's shapes and error codes), plus
 * the dev-only `generate_block`, `generate_epochs`, and Strand's `faucet`, `get_dev_scripts` and
 * `increase_time` (moves block timestamps forward, to reach timestamp locks without waiting).
 */
import { ccc } from '@ckb-ccc/core';
import { z } from 'zod';
import { addressToScript } from '../../chain/index.ts';
import { toHexQuantity as q } from '../../codec/index.ts';
import type { DevChain } from '../chain.ts';
import { ChainTxError } from '../errors.ts';
import { getCells, getCellsCapacity, getTransactions, type IoRow, type TxGroup } from '../indexer.ts';
import { epochFromFull, epochOfBlock } from '../since.ts';
import type { CellRow } from '../store.ts';
import { consensusJson, epochJson } from './consensus.ts';
import {
  blockJson,
  bytes,
  cellRowJson,
  devScriptsJson,
  h256,
  headerJson,
  outPoint,
  parseTransaction,
  script,
  searchKeySchema,
  txJson,
  u32,
  u64,
} from './json.ts';

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: string,
  ) {
    super(message);
  }
}

type Handler = (params: unknown[]) => unknown;

/** Parses positional params with a tuple schema; trailing optional params may be absent or null. */
function args<S extends z.ZodTypeAny[]>(
  params: unknown[],
  ...schemas: S
): { [K in keyof S]: z.output<S[K]> } {
  if (params.length > schemas.length) throw new RpcError(-32602, 'InvalidParams: too many params');
  const out = schemas.map((s, i) => {
    const r = s.safeParse(params[i]);
    if (!r.success) {
      const issue = r.error.issues[0];
      const name = s.description ? ` (${s.description})` : '';
      const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
      throw new RpcError(-32602, `InvalidParams: param ${i}${name}: ${where}${issue?.message}`);
    }
    return r.data;
  });
  return out as { [K in keyof S]: z.output<S[K]> };
}

const opt = <T extends z.ZodTypeAny>(s: T) => s.nullish();
const order = z.enum(['asc', 'desc']);
const limit = u32.transform((v) => Number(v));

export function devchainMethods(chain: DevChain): Map<string, Handler> {
  const header = (h: { header: Parameters<typeof headerJson>[0]; hash: string } | undefined) =>
    h ? headerJson(h.header, h.hash) : null;
  const m = new Map<string, Handler>();
  m.set('get_tip_header', (p) => {
    args(p, opt(u32));
    return headerJson(chain.tip, chain.tipHash);
  });
  m.set('get_tip_block_number', (p) => {
    args(p);
    return q(chain.tip.number);
  });
  m.set('get_header', (p) => header(chain.headerByHash(args(p, h256, opt(u32))[0])));
  m.set('get_header_by_number', (p) => header(chain.headerByNumber(args(p, u64, opt(u32))[0])));
  m.set('get_block_hash', (p) => chain.headerByNumber(args(p, u64)[0])?.hash ?? null);
  const block = (n: bigint | undefined) => {
    if (n === undefined) return null;
    const b = chain.blockByNumber(n);
    return b ? blockJson(b) : null;
  };
  m.set('get_block', (p) =>
    block(chain.headerByHash(args(p, h256, opt(u32), opt(z.boolean()))[0])?.header.number),
  );
  m.set('get_block_by_number', (p) => block(args(p, u64, opt(u32), opt(z.boolean()))[0]));
  m.set('get_block_median_time', (p) => {
    const t = chain.medianTime(args(p, h256)[0]);
    return t === undefined ? null : q(t);
  });
  m.set('get_blockchain_info', (p) => {
    args(p);
    return {
      alerts: [],
      chain: 'ckb_dev',
      difficulty: '0x1',
      epoch: q(chain.tip.epoch),
      is_initial_block_download: false,
      median_time: q(chain.medianTime(chain.tipHash) as bigint),
    };
  });
  m.set('get_current_epoch', (p) => {
    args(p);
    return epochJson(chain, epochFromFull(epochOfBlock(chain.tip.number, chain.epochLength)).number);
  });
  m.set('get_epoch_by_number', (p) => epochJson(chain, args(p, u64)[0]));
  m.set('get_consensus', (p) => {
    args(p);
    return consensusJson(chain);
  });
  m.set('get_transaction', (p) => {
    const [hash] = args(p, h256, opt(u32), opt(z.boolean()));
    const r = chain.transaction(hash);
    if (!r) {
      return {
        cycles: null,
        time_added_to_pool: null,
        transaction: null,
        tx_status: { block_hash: null, block_number: null, reason: null, status: 'unknown', tx_index: null },
      };
    }
    return {
      cycles: '0x0',
      time_added_to_pool: null,
      transaction: txJson(r.tx),
      tx_status: {
        block_hash: r.blockHash ?? null,
        block_number: r.blockNumber === undefined ? null : q(r.blockNumber),
        reason: null,
        status: r.status,
        tx_index: r.txIndex === undefined ? null : q(r.txIndex),
      },
    };
  });
  m.set('get_live_cell', (p) => {
    const [op, withData] = args(p, outPoint, z.boolean(), opt(z.boolean()));
    const c = chain.liveCell(op);
    if (!c || c === 'dead') return { cell: null, status: 'unknown' };
    return {
      cell: {
        data: withData ? { content: ccc.hexFrom(c.data), hash: c.dataHash } : null,
        output: {
          capacity: q(c.output.capacity),
          lock: {
            code_hash: c.output.lock.codeHash,
            hash_type: c.output.lock.hashType,
            args: c.output.lock.args,
          },
          type: c.output.type
            ? {
                code_hash: c.output.type.codeHash,
                hash_type: c.output.type.hashType,
                args: c.output.type.args,
              }
            : null,
        },
      },
      status: 'live',
    };
  });
  m.set('send_transaction', (p) => {
    if (p.length < 1 || p.length > 2)
      throw new RpcError(-32602, 'InvalidParams: expected [transaction, outputs_validator?]');
    return chain.sendTransaction(parseTx(p[0]));
  });
  const dryRun = (p: unknown[]) => {
    if (p.length !== 1) throw new RpcError(-32602, 'InvalidParams: expected [transaction]');
    chain.dryRun(parseTx(p[0]));
    return { cycles: '0x0' };
  };
  m.set('dry_run_transaction', dryRun);
  m.set('estimate_cycles', dryRun);
  // CKB's Pool module: drops every pending tx (tests use it to lose a broadcast).
  m.set('clear_tx_pool', (p) => {
    args(p);
    chain.clearPool();
    return null;
  });
  m.set('tx_pool_info', (p) => {
    args(p);
    return {
      last_txs_updated_at: '0x0',
      max_tx_pool_size: q(180_000_000),
      min_fee_rate: '0x3e8',
      min_rbf_rate: '0x5dc',
      orphan: '0x0',
      pending: q(chain.pendingCount()),
      proposed: '0x0',
      tip_hash: chain.tipHash,
      tip_number: q(chain.tip.number),
      total_tx_cycles: '0x0',
      total_tx_size: '0x0',
      tx_size_limit: q(512_000),
      verify_queue_size: '0x0',
    };
  });
  m.set('get_fee_rate_statistics', (p) => {
    args(p, opt(u64));
    // The pool's minimum rate: what a dev chain's blocks always accept (shannons/KB).
    return { mean: '0x3e8', median: '0x3e8' };
  });
  m.set('get_indexer_tip', (p) => {
    args(p);
    return { block_hash: chain.tipHash, block_number: q(chain.tip.number) };
  });
  m.set('get_cells', (p) => {
    const [key, ord, lim, cursor] = args(p, searchKeySchema, order, limit, opt(bytes));
    const page = getCells(chain.db, key, ord, lim, cursor ?? undefined);
    return {
      last_cursor: page.lastCursor,
      objects: page.objects.map((r: CellRow) => cellRowJson(r, key.withData !== false)),
    };
  });
  m.set('get_cells_capacity', (p) => {
    const [key] = args(p, searchKeySchema);
    return {
      block_hash: chain.tipHash,
      block_number: q(chain.tip.number),
      capacity: q(getCellsCapacity(chain.db, key)),
    };
  });
  m.set('get_transactions', (p) => {
    const [key, ord, lim, cursor] = args(p, searchKeySchema, order, limit, opt(bytes));
    const page = getTransactions(chain.db, key, ord, lim, cursor ?? undefined);
    const io = (t: number) => (t === 0 ? 'input' : 'output');
    return {
      last_cursor: page.lastCursor,
      objects: key.groupByTransaction
        ? (page.objects as TxGroup[]).map((g) => ({
            block_number: q(g.block_number),
            cells: g.cells.map(([t, i]) => [io(t), q(i)]),
            tx_hash: g.tx_hash,
            tx_index: q(g.tx_index),
          }))
        : (page.objects as IoRow[]).map((r) => ({
            block_number: q(r.block_number),
            io_index: q(r.io_index),
            io_type: io(r.io_type),
            tx_hash: r.tx_hash,
            tx_index: q(r.tx_index),
          })),
    };
  });
  m.set('generate_block', (p) => {
    args(p, opt(z.unknown()));
    return chain.generateBlock();
  });
  m.set('generate_epochs', (p) => {
    const [epochs] = args(p, u64);
    try {
      return q(chain.generateEpochs(epochs));
    } catch (e) {
      if (e instanceof RangeError) throw new RpcError(-32602, `InvalidParams: ${e.message}`);
      throw e;
    }
  });
  m.set('increase_time', (p) => {
    const [ms] = args(p, u64);
    try {
      return q(chain.increaseTime(ms));
    } catch (e) {
      if (e instanceof RangeError) throw new RpcError(-32602, `InvalidParams: ${e.message}`);
      throw e;
    }
  });
  m.set('get_dev_scripts', (p) => {
    args(p);
    return devScriptsJson(chain.scripts);
  });
  m.set('faucet', (p) => {
    const [to, capacity, udt, xudt] = args(
      p,
      z.union([z.string().max(1000), script]).describe('address or lock script'),
      u64.describe('capacity in shannons'),
      opt(u64).describe('test UDT amount'),
      opt(u64).describe('test xUDT amount'),
    );
    const lock = typeof to === 'string' ? addressToScriptOrThrow(to, 'param 0 (address)') : to;
    try {
      return chain.faucet(lock, capacity, udt ?? 0n, xudt ?? 0n);
    } catch (e) {
      if (e instanceof ChainTxError) throw e;
      throw new RpcError(-32000, `Faucet: ${(e as Error).message}`);
    }
  });
  return m;
}

function parseTx(json: unknown): ccc.Transaction {
  try {
    return parseTransaction(json);
  } catch (e) {
    if (e instanceof z.ZodError) {
      const issue = e.issues[0];
      throw new RpcError(-32602, `InvalidParams: transaction.${issue?.path.join('.')}: ${issue?.message}`);
    }
    throw e;
  }
}

function addressToScriptOrThrow(address: string, field: string): ccc.Script {
  try {
    return addressToScript(address);
  } catch (e) {
    throw new RpcError(
      -32602,
      `InvalidParams: ${field}: ${(e as Error).message} (expected a CKB address, ckt1… on a dev chain)`,
    );
  }
}
