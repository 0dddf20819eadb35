/**
 * The node's CKB JSON-RPC client: everything chain-related goes through it, so a node can point
 * at Strand's dev chain or at a real CKB node (with its indexer). Network failures are retried
 * with exponential backoff and logged; when the chain stays unreachable the call fails with a
 * ChainUnreachableError naming the URL. JSON-RPC errors (a rejected transaction, bad params) are
 * returned as CkbRpcError at once, never retried; its `kind` names the pool's reason (CKB's error
 * codes, `rpc/src/error.rs`) so callers branch on it, not on text. The client remembers whether
 * the chain answered its last call (`status()`, shown in `node_info` as `ckb_rpc_status`).
 */
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import { z } from 'zod';
import { toHexQuantity as q, StrandError } from '../codec/index.ts';
import { chainErrorOf } from './errors.ts';
import { type ChannelScripts, devChannelScripts } from './scripts.ts';

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
  /** Where the channel scripts come from (default: the dev chain's `get_dev_scripts`). */
  channelScripts?: (client: ChainClient) => Promise<ChannelScripts>;
  /**
   * Awaited before a transaction is sent: the state that produced it must be durable first
   * (persist-before-speak; the store's `Durability.durable`).
   */
  beforeSend?: () => Promise<void>;
}

/** Whether the chain answered: `unreachable` since the first failed call after the last answer. */
export type ChainStatus = { state: 'ok' } | { state: 'unreachable'; since: Date; error: string };

/** `ckb_rpc_status` of `node_info`: `ok` or `unreachable since <ISO time>`. */
export function describeChainStatus(s: ChainStatus): string {
  return s.state === 'ok' ? 'ok' : `unreachable since ${s.since.toISOString()}`;
}

export class ChainUnreachableError extends chainErrorOf('ChainUnreachable') {}

/** The chain answered, but with something that is not a valid result for the method. */
export class ChainProtocolError extends chainErrorOf('ChainProtocol') {}

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
const headerSchema = z.object({
  hash: h256,
  number: hexQ,
  epoch: hexQ,
  timestamp: hexQ,
  parent_hash: h256,
});
const txsSchema = z.object({
  last_cursor: hexBytes,
  objects: z.array(
    z.object({
      tx_hash: h256,
      block_number: hexQ,
      tx_index: hexQ,
      io_index: hexQ.optional(),
      io_type: z.enum(['input', 'output']).optional(),
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

/**
 * What a CKB node's error code means for the caller (codes of CKB's `RPCError`):
 * - `duplicated` (-1107): the transaction is in the pool already: it was sent.
 * - `fee_too_low` (-1104 PoolRejectedTransactionByMinFeeRate; -1111 PoolRejectedRBF when a
 *   conflicting transaction pays more, "expect it to >= N"): send again with a higher fee.
 * - `unresolvable` (-301): an input or dep is unknown or already spent.
 * - `pool_busy` (-1106 PoolIsFull, -1105 ancestors limit): try later.
 * - `expired` (-1109): it left the pool unconfirmed; it may be sent again.
 * - `other`: anything else (script failure, bad params, …).
 */
export type CkbErrorKind = 'duplicated' | 'fee_too_low' | 'unresolvable' | 'pool_busy' | 'expired' | 'other';

const KIND_BY_CODE: Record<number, CkbErrorKind> = {
  [-1107]: 'duplicated',
  [-1104]: 'fee_too_low',
  [-301]: 'unresolvable',
  [-1106]: 'pool_busy',
  [-1105]: 'pool_busy',
  [-1109]: 'expired',
};

/**
 * The CKB node's JSON-RPC error as it answered it: `code` is CKB's number (-1104, -302, …), not
 * one of our refusal codes, since the error is another process's; `kind` sorts it.
 */
export class CkbRpcError extends StrandError {
  readonly kind: CkbErrorKind;
  constructor(
    readonly code: number,
    message: string,
    data?: unknown,
  ) {
    super(message, data);
    // Other RBF refusals (unconfirmed inputs, too many conflicts) are not a matter of fee; CKB
    // answers them all with -1111, so its text tells them apart.
    const rbfFee = code === -1111 && /current fee is \d+, expect it to >=/.test(message);
    this.kind = rbfFee ? 'fee_too_low' : (KIND_BY_CODE[code] ?? 'other');
  }

  /** The pool's minimum fee rate (shannons per 1000 bytes) when the message states it. */
  get minFeeRate(): bigint | undefined {
    // "The min fee rate is 1000 shannons/KW, requiring a transaction fee of at least …" (KB in older CKB).
    const m = /min fee rate is (\d+) shannons\/K[BW]/.exec(this.message);
    return m ? BigInt(m[1] as string) : undefined;
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

export interface TipHeader {
  hash: string;
  number: bigint;
  epoch: string;
  timestamp: bigint;
  parentHash: string;
}

export interface IndexerTx {
  tx_hash: string;
  block_number: string;
  tx_index: string;
  io_index?: string;
  io_type?: 'input' | 'output';
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
  /** `get_tip_header`: the tip block's header (hash, number, epoch, timestamp). */
  tipHeader(): Promise<TipHeader>;
  /** Whether the chain answered the last call; see ChainStatus. */
  status(): ChainStatus;
  /** When the chain last answered (ms since the epoch), if ever. */
  lastAnswerAt(): number | undefined;
  /** The funding and commitment lock scripts with their cell deps (resolved once, then cached). */
  channelScripts(): Promise<ChannelScripts>;
  /** `get_fee_rate_statistics` (median, shannons/KB), or `fallback` when the node has no data. */
  feeRate(fallback: bigint): Promise<bigint>;
  /** Indexer `get_transactions`: transactions touching cells of a script, ungrouped. */
  getTransactions(
    key: SearchKeyJson,
    order: 'asc' | 'desc',
    limit: number,
    cursor?: string,
  ): Promise<{ objects: IndexerTx[]; last_cursor: string }>;
  /** null when the chain does not know the transaction (never sent, dropped, or reorged out). */
  getTransaction(hash: string): Promise<{ transaction: unknown; tx_status: TxStatus } | null>;
  getLiveCell(outPoint: ccc.OutPointLike, withData: boolean): Promise<{ status: string; cell: unknown }>;
  /** Sends with outputs_validator `passthrough` (the channel locks are not "well known" to CKB). An
   * answer of `duplicated` means it is in the pool already: that is success, its hash returned. */
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
  let status: ChainStatus = { state: 'ok' };
  let lastAnswer: number | undefined;
  let scripts: Promise<ChannelScripts> | undefined;
  const unreachable = (error: string) => {
    if (status.state === 'ok') status = { state: 'unreachable', since: new Date(), error };
  };

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
      if (!res.ok) {
        unreachable(`HTTP ${res.status}`);
        throw new ChainUnreachableError(`CKB RPC at ${rpcUrl} answered HTTP ${res.status} to ${method}`);
      }
      let json: { result?: T; error?: { code: number; message: string; data?: unknown } };
      try {
        json = (await res.json()) as typeof json;
      } catch {
        unreachable('malformed response');
        throw new ChainUnreachableError(`CKB RPC at ${rpcUrl} sent a malformed response to ${method}`);
      }
      if (status.state !== 'ok') logger?.info({ rpcUrl, method }, 'CKB RPC reachable again');
      status = { state: 'ok' };
      lastAnswer = Date.now();
      if (json.error) throw new CkbRpcError(json.error.code, json.error.message, json.error.data);
      return json.result as T;
    }
    unreachable(lastError);
    logger?.warn({ rpcUrl, method, attempts, error: lastError }, 'CKB RPC unreachable, giving up');
    throw new ChainUnreachableError(`CKB RPC at ${rpcUrl} is unreachable (${method}: ${lastError})`);
  }

  const client: ChainClient = {
    rpcUrl,
    call,
    status: () => status,
    lastAnswerAt: () => lastAnswer,
    channelScripts() {
      // Cached once resolved; a failure (chain away, a type-id cell not found) is tried anew.
      scripts ??= (opts.channelScripts ?? devChannelScripts)(client).catch((e) => {
        scripts = undefined;
        throw e;
      });
      return scripts;
    },
    async tipHeader() {
      const h = checked(headerSchema, await call('get_tip_header'), 'get_tip_header', rpcUrl);
      return {
        hash: h.hash,
        number: BigInt(h.number),
        epoch: h.epoch,
        timestamp: BigInt(h.timestamp),
        parentHash: h.parent_hash,
      };
    },
    async feeRate(fallback) {
      // A node with too few recent blocks answers null; an older node lacks the method.
      try {
        const r = await call<{ median?: unknown } | null>('get_fee_rate_statistics', []);
        if (!r) return fallback;
        const median = BigInt(checked(hexQ, r.median, 'get_fee_rate_statistics', rpcUrl));
        return median > fallback ? median : fallback;
      } catch (e) {
        if (e instanceof CkbRpcError) return fallback;
        throw e;
      }
    },
    async getTransactions(key, order, limit, cursor) {
      // Ungrouped (CKB's default): one object per input or output, the shape checked below.
      const { group_by_transaction: _grouped, ...ungrouped } = key;
      const params = [ungrouped, order, q(limit)];
      const r = await call('get_transactions', cursor ? [...params, cursor] : params);
      return checked(txsSchema, r, 'get_transactions', rpcUrl) as {
        objects: IndexerTx[];
        last_cursor: string;
      };
    },
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
      await opts.beforeSend?.();
      try {
        const h = await call('send_transaction', [txToJson(tx), 'passthrough']);
        return checked(h256, h, 'send_transaction', rpcUrl) as ccc.Hex;
      } catch (e) {
        // Already in the pool (our earlier send, or a peer's broadcast of the same bytes): sent.
        if (e instanceof CkbRpcError && e.kind === 'duplicated') return tx.hash();
        throw e;
      }
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
  return client;
}

function describe(e: unknown): string {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err?.name === 'TimeoutError') return 'request timed out';
  return err?.cause?.code ?? err?.cause?.message ?? err?.message ?? String(e);
}
