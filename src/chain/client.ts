/**
 * The node's CKB JSON-RPC client: everything chain-related goes through it, so a node can point
 * at Strand's dev chain or at a real CKB node (with its indexer). Network failures are retried
 * with exponential backoff and logged; when the chain stays unreachable the call fails with a
 * ChainUnreachableError naming the URL. JSON-RPC errors (a rejected transaction, bad params) are
 * returned as CkbRpcError at once, never retried.
 */
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import { z } from 'zod';
import { DomainError } from '../codec/errors.ts';
import { toHexQuantity as q } from '../codec/hex.ts';

export interface ChainLogger {
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
}

export interface ChainClientOptions {
  rpcUrl: string;
  logger?: ChainLogger;
  /** Per-request timeout (default 10 s). */
  timeoutMs?: number;
  /** Attempts for a network failure before giving up (default 5: about 3 s of backoff). */
  attempts?: number;
  /** First backoff delay; doubles each retry (default 200 ms). */
  backoffMs?: number;
}

export class ChainUnreachableError extends DomainError {}

/** The chain answered, but with something that is not a valid result for the method. */
export class ChainProtocolError extends DomainError {}

// Chain data is hostile input too: results the node relies on are checked before use.
const hexQ = z.string().regex(/^0x(0|[1-9a-fA-F][0-9a-fA-F]{0,31})$/);
const hexBytes = z.string().regex(/^0x([0-9a-fA-F]{2})*$/);
const h256 = z.string().regex(/^0x[0-9a-fA-F]{64}$/);
const scriptSchema = z.object({
  code_hash: h256,
  hash_type: z.enum(['data', 'type', 'data1', 'data2']),
  args: hexBytes,
});
const cellsSchema = z.object({
  last_cursor: hexBytes,
  objects: z.array(
    z.object({
      output: z.object({ capacity: hexQ, lock: scriptSchema, type: scriptSchema.nullish() }),
      output_data: hexBytes.nullish(),
      out_point: z.object({ tx_hash: h256, index: hexQ }),
      block_number: hexQ,
      tx_index: hexQ,
    }),
  ),
});
const txStatusSchema = z.object({
  status: z.enum(['pending', 'proposed', 'committed', 'unknown', 'rejected']),
  block_number: hexQ.nullish(),
  block_hash: h256.nullish(),
  reason: z.string().nullish(),
});

function checked<T>(schema: z.ZodType<T>, value: unknown, what: string, rpcUrl: string): T {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new ChainProtocolError(
      `CKB RPC at ${rpcUrl} returned a malformed ${what} result: ${r.error.issues[0]?.message}`,
    );
  }
  return r.data;
}

export class CkbRpcError extends DomainError {
  constructor(
    readonly code: number,
    message: string,
    data?: unknown,
  ) {
    super(message, data);
  }
}

export interface JsonScript {
  code_hash: string;
  hash_type: string;
  args: string;
}

export interface SearchKeyJson {
  script: JsonScript;
  script_type: 'lock' | 'type';
  script_search_mode?: 'prefix' | 'exact' | 'partial';
  filter?: Record<string, unknown>;
  with_data?: boolean;
  group_by_transaction?: boolean;
}

export interface IndexerCell {
  output: { capacity: string; lock: JsonScript; type: JsonScript | null };
  output_data: string | null;
  out_point: { tx_hash: string; index: string };
  block_number: string;
  tx_index: string;
}

export interface TxStatus {
  status: 'pending' | 'proposed' | 'committed' | 'unknown' | 'rejected';
  block_number: string | null;
  block_hash: string | null;
  reason?: string | null;
}

export interface ChainClient {
  readonly rpcUrl: string;
  call<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** The genesis block hash (cached after the first success). */
  chainHash(): Promise<ccc.Hex>;
  tipBlockNumber(): Promise<bigint>;
  getTransaction(hash: string): Promise<{ transaction: unknown; tx_status: TxStatus } | null>;
  getLiveCell(outPoint: ccc.OutPointLike, withData: boolean): Promise<{ status: string; cell: unknown }>;
  sendTransaction(tx: ccc.Transaction): Promise<ccc.Hex>;
  getCells(
    key: SearchKeyJson,
    order: 'asc' | 'desc',
    limit: number,
    cursor?: string,
  ): Promise<{ objects: IndexerCell[]; last_cursor: string }>;
  getCellsCapacity(key: SearchKeyJson): Promise<bigint>;
  generateBlock(): Promise<ccc.Hex>;
}

export function scriptToJson(s: ccc.ScriptLike): JsonScript {
  return cccA.JsonRpcTransformers.scriptFrom(s) as JsonScript;
}

export function txToJson(tx: ccc.Transaction): unknown {
  return cccA.JsonRpcTransformers.transactionFrom(tx);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createChainClient(opts: ChainClientOptions): ChainClient {
  const { rpcUrl, logger } = opts;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const attempts = Math.max(1, opts.attempts ?? 5);
  const backoff = opts.backoffMs ?? 200;
  let nextId = 1;
  let genesis: ccc.Hex | undefined;

  async function call<T>(method: string, params: unknown[] = []): Promise<T> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });
    let lastError = '';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let res: Response;
      try {
        res = await fetch(rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (e) {
        lastError = describe(e);
        if (attempt < attempts) {
          const delay = backoff * 2 ** (attempt - 1);
          logger?.warn(
            { rpcUrl, method, attempt, retryInMs: delay, error: lastError },
            'CKB RPC unreachable, retrying',
          );
          await sleep(delay);
        }
        continue;
      }
      if (!res.ok)
        throw new ChainUnreachableError(`CKB RPC at ${rpcUrl} answered HTTP ${res.status} to ${method}`);
      let json: { result?: T; error?: { code: number; message: string; data?: unknown } };
      try {
        json = (await res.json()) as typeof json;
      } catch {
        throw new ChainUnreachableError(`CKB RPC at ${rpcUrl} sent a malformed response to ${method}`);
      }
      if (json.error) throw new CkbRpcError(json.error.code, json.error.message, json.error.data);
      return json.result as T;
    }
    logger?.warn({ rpcUrl, method, attempts, error: lastError }, 'CKB RPC unreachable, giving up');
    throw new ChainUnreachableError(`CKB RPC at ${rpcUrl} is unreachable (${method}: ${lastError})`);
  }

  return {
    rpcUrl,
    call,
    async chainHash() {
      if (!genesis) {
        const h = await call<string | null>('get_block_hash', ['0x0']);
        if (!h) throw new ChainUnreachableError(`CKB RPC at ${rpcUrl} has no genesis block`);
        genesis = checked(h256, h, 'get_block_hash', rpcUrl).toLowerCase() as ccc.Hex;
      }
      return genesis;
    },
    async tipBlockNumber() {
      return BigInt(checked(hexQ, await call('get_tip_block_number'), 'get_tip_block_number', rpcUrl));
    },
    async getTransaction(hash) {
      const r = await call<{ transaction: unknown; tx_status: unknown } | null>('get_transaction', [hash]);
      if (!r) return null;
      const status = checked(txStatusSchema, r.tx_status, 'get_transaction', rpcUrl) as TxStatus;
      return status.status === 'unknown' ? null : { transaction: r.transaction, tx_status: status };
    },
    getLiveCell(outPoint, withData) {
      const op = ccc.OutPoint.from(outPoint);
      return call('get_live_cell', [{ tx_hash: op.txHash, index: q(op.index) }, withData]);
    },
    async sendTransaction(tx) {
      const h = await call('send_transaction', [txToJson(tx), 'passthrough']);
      return checked(h256, h, 'send_transaction', rpcUrl) as ccc.Hex;
    },
    async getCells(key, order, limit, cursor) {
      const r = await call('get_cells', cursor ? [key, order, q(limit), cursor] : [key, order, q(limit)]);
      return checked(cellsSchema, r, 'get_cells', rpcUrl) as { objects: IndexerCell[]; last_cursor: string };
    },
    async getCellsCapacity(key) {
      const r = await call<{ capacity: unknown } | null>('get_cells_capacity', [key]);
      return r ? BigInt(checked(hexQ, r.capacity, 'get_cells_capacity', rpcUrl)) : 0n;
    },
    async generateBlock() {
      return (await call<string>('generate_block', [])) as ccc.Hex;
    },
  };
}

function describe(e: unknown): string {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err?.name === 'TimeoutError') return 'request timed out';
  return err?.cause?.code ?? err?.cause?.message ?? err?.message ?? String(e);
}
