/**
 * CKB JSON shapes (snake_case, hex quantities) for the dev chain's RPC, and strict parsing of the
 * JSON the clients send (transactions, scripts, out points, search keys).
 */
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import { z } from 'zod';
import { toHexQuantity } from '../../codec/index.ts';
import type { Block, Header } from '../block.ts';
import { txError } from '../errors.ts';
import type { SearchKey } from '../indexer.ts';
import type { DevScripts, ScriptInfo } from '../setup.ts';
import { checkSince } from '../since.ts';
import type { CellRow } from '../store.ts';
import { txHashOf } from '../txcache.ts';

const q = toHexQuantity;
const T = cccA.JsonRpcTransformers;

export function headerJson(h: Header, hash: string) {
  return {
    compact_target: q(h.compactTarget),
    dao: h.dao,
    epoch: q(h.epoch),
    extra_hash: h.extraHash,
    hash,
    nonce: q(h.nonce),
    number: q(h.number),
    parent_hash: h.parentHash,
    proposals_hash: h.proposalsHash,
    timestamp: q(h.timestamp),
    transactions_root: h.transactionsRoot,
    version: q(h.version),
  };
}

export function txJson(tx: ccc.Transaction) {
  return { ...T.transactionFrom(tx), hash: txHashOf(tx) };
}

export function blockJson(b: Block) {
  return {
    header: headerJson(b.header, b.hash),
    proposals: [],
    transactions: b.transactions.map(txJson),
    uncles: [],
  };
}

export function scriptJson(s: ccc.Script | undefined) {
  return s ? T.scriptFrom(s) : null;
}

export function cellRowJson(r: CellRow, withData: boolean) {
  return {
    block_number: q(r.block_number),
    out_point: { index: q(r.idx), tx_hash: r.tx_hash },
    output: {
      capacity: q(BigInt(r.capacity)),
      lock: { code_hash: r.lock_code_hash, hash_type: r.lock_hash_type, args: r.lock_args },
      type: r.type_code_hash
        ? { code_hash: r.type_code_hash, hash_type: r.type_hash_type, args: r.type_args }
        : null,
    },
    output_data: withData ? `0x${r.data.toString('hex')}` : null,
    tx_index: q(r.tx_index),
  };
}

// ---- parsing ---------------------------------------------------------------------------------

const hexQ = (max: bigint, label: string) =>
  z
    .string()
    .regex(/^0x(0|[1-9a-fA-F][0-9a-fA-F]*)$/, 'invalid hex quantity (0x-prefixed, no leading zeros)')
    .transform((s) => BigInt(s))
    .refine((v) => v <= max, `out of range: the ${label} maximum is 0x${max.toString(16)}`);
export const u32 = hexQ(0xffff_ffffn, 'u32');
export const u64 = hexQ(0xffff_ffff_ffff_ffffn, 'u64');
export const h256 = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'expected a 32-byte hash')
  .transform((s) => s.toLowerCase() as ccc.Hex);
export const bytes = z
  .string()
  .regex(/^0x([0-9a-fA-F]{2})*$/, 'expected 0x-prefixed hex bytes')
  .max(2 + 2 * 600_000, 'too large')
  .transform((s) => s.toLowerCase() as ccc.Hex);
const hashType = z.enum(['data', 'type', 'data1', 'data2']);
export const script = z
  .object({ code_hash: h256, hash_type: hashType, args: bytes })
  .transform((s) => ccc.Script.from({ codeHash: s.code_hash, hashType: s.hash_type, args: s.args }));
export const outPoint = z
  .object({ tx_hash: h256, index: u32 })
  .transform((o) => ccc.OutPoint.from({ txHash: o.tx_hash, index: o.index }));

const txSchema = z.object({
  version: u32,
  cell_deps: z.array(z.object({ out_point: outPoint, dep_type: z.enum(['code', 'dep_group']) })).max(1000),
  header_deps: z.array(h256).max(1000),
  inputs: z.array(z.object({ since: u64, previous_output: outPoint })).max(10_000),
  outputs: z.array(z.object({ capacity: u64, lock: script, type: script.nullable().optional() })).max(10_000),
  outputs_data: z.array(bytes).max(10_000),
  witnesses: z.array(bytes).max(10_000),
});

/** A transaction from CKB JSON; an invalid since is CKB's InvalidSince (ccc cannot even hold it). */
export function parseTransaction(json: unknown): ccc.Transaction {
  const t = txSchema.parse(json);
  t.inputs.forEach((i, index) => {
    if (
      i.since !== 0n &&
      checkSince(i.since, { blockNumber: 0n, epoch: 0n, medianTime: 0n }, undefined) === 'invalid'
    ) {
      throw txError(`InvalidSince(Inputs[${index}]): the since field is invalid`);
    }
  });
  const tx = ccc.Transaction.from({
    version: t.version,
    cellDeps: t.cell_deps.map((d) => ({
      outPoint: d.out_point,
      depType: d.dep_type === 'code' ? 'code' : 'depGroup',
    })),
    headerDeps: t.header_deps,
    inputs: t.inputs.map((i) => ({ previousOutput: i.previous_output, since: 0n })),
    outputs: t.outputs.map((o) => ({ capacity: o.capacity, lock: o.lock, type: o.type ?? undefined })),
    outputsData: t.outputs_data,
    witnesses: t.witnesses,
  });
  // ccc normalises a since on construction; keep the submitted value so the hash is the sender's.
  t.inputs.forEach((i, index) => {
    (tx.inputs[index] as ccc.CellInput).since = i.since;
  });
  return tx;
}

const range = z.tuple([u64, u64]);
const mode = z.enum(['prefix', 'exact', 'partial']);

export const searchKeySchema = z
  .object({
    script,
    script_type: z.enum(['lock', 'type']),
    script_search_mode: mode.nullish(),
    filter: z
      .object({
        script: script.nullish(),
        script_len_range: range.nullish(),
        output_data: bytes.nullish(),
        output_data_filter_mode: mode.nullish(),
        output_data_len_range: range.nullish(),
        output_capacity_range: range.nullish(),
        block_range: range.nullish(),
      })
      .nullish(),
    with_data: z.boolean().nullish(),
    group_by_transaction: z.boolean().nullish(),
  })
  .transform(
    (k): SearchKey => ({
      script: k.script,
      scriptType: k.script_type,
      searchMode: k.script_search_mode ?? 'prefix',
      filter: k.filter
        ? {
            script: k.filter.script ?? undefined,
            scriptLenRange: k.filter.script_len_range ?? undefined,
            outputData: k.filter.output_data ?? undefined,
            outputDataFilterMode: k.filter.output_data_filter_mode ?? undefined,
            outputDataLenRange: k.filter.output_data_len_range ?? undefined,
            outputCapacityRange: k.filter.output_capacity_range ?? undefined,
            blockRange: k.filter.block_range ?? undefined,
          }
        : undefined,
      withData: k.with_data ?? true,
      groupByTransaction: k.group_by_transaction ?? false,
    }),
  );

/**
 * The dev chain's script table in CKB JSON: each script (args empty) with its cell deps, and the
 * two test tokens (simple UDT and xUDT, owned by the faucet) as full type scripts.
 */
export function devScriptsJson(s: DevScripts) {
  const entry = (i: ScriptInfo) => ({
    script: { code_hash: i.codeHash, hash_type: i.hashType, args: '0x' },
    cell_deps: i.cellDeps.map((d) => ({
      out_point: { tx_hash: d.outPoint.txHash, index: toHexQuantity(d.outPoint.index) },
      dep_type: d.depType === 'code' ? 'code' : 'dep_group',
    })),
  });
  /** A test token: its full type script, with the cell deps of its code. */
  const token = (t: DevScripts['test_udt'], code: ScriptInfo) => ({
    script: { code_hash: t.codeHash, hash_type: t.hashType, args: t.args },
    cell_deps: entry(code).cell_deps,
  });
  return {
    secp256k1_blake160_sighash_all: entry(s.secp256k1_blake160_sighash_all),
    funding_lock: entry(s.funding_lock),
    commitment_lock: entry(s.commitment_lock),
    simple_udt: entry(s.simple_udt),
    xudt: entry(s.xudt),
    test_udt: token(s.test_udt, s.simple_udt),
    test_xudt: token(s.test_xudt, s.xudt),
  };
}
