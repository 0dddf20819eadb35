/**
 * Full verification of one transaction against a view of the chain (and mempool), in CKB's order:
 * well-formedness, resolution of inputs / cell deps / header deps, capacity, since, then every
 * script group through the native verifier table. Pure over its inputs; throws ChainTxError.
 */
import { ccc, mol } from '@ckb-ccc/core';
import { bytesToHex, SHANNONS_PER_CKB as SHANNONS } from '../codec/index.ts';
import { ckbHash } from '../crypto/index.ts';
import {
  ChainTxError,
  invalidHeaderError,
  malformedError,
  resolveError,
  scriptError,
  txError,
  validationFailure,
} from './errors.ts';
import { TYPE_ID_CODE_HASH } from './genesis.ts';
import {
  makeTxContext,
  type ResolvedCell,
  type ScriptGroup,
  type ScriptVerifier,
} from './scripts/context.ts';
import { SCRIPT_VERIFIERS } from './scripts/registry.ts';
import { typeId } from './scripts/type-id.ts';
import { checkSince, type SinceEnv } from './since.ts';
import { txBytesOf, txHashOf } from './txcache.ts';

/** CKB's default tx pool size limit (`max_tx_size`). */
export const MAX_TX_BYTES = 512_000;
const OutPointVec = mol.vector(ccc.OutPoint);

/** A cell known to the view; `dataHash` is precomputed so big code cells are hashed once. */
export interface ViewCell extends ResolvedCell {
  dataHash: ccc.Hex;
}

export interface ChainView {
  /** 'dead' when the cell existed and was spent (on chain or by a pending transaction). */
  cell(op: ccc.OutPoint): ViewCell | 'dead' | undefined;
  hasHeader(hash: ccc.Hex): boolean;
}

export interface Verified {
  txHash: ccc.Hex;
  fee: bigint;
  size: number;
  inputs: ViewCell[];
}

export function outPointKey(op: ccc.OutPointLike): string {
  return `${ccc.hexFrom(op.txHash)}:${Number(op.index)}`;
}

export function verifyTransaction(tx: ccc.Transaction, view: ChainView, env: SinceEnv): Verified {
  checkShape(tx);
  const size = txBytesOf(tx).length + 4;
  if (size > MAX_TX_BYTES) {
    throw new ChainTxError(
      'PoolRejectedTransactionBySizeLimit',
      `Transaction size ${size} exceeded maximum limit ${MAX_TX_BYTES}`,
    );
  }
  const seen = new Set<string>();
  const inputs: ViewCell[] = tx.inputs.map((input) => {
    const key = outPointKey(input.previousOutput);
    const c = view.cell(input.previousOutput);
    if (seen.has(key) || c === 'dead') throw resolveError('Dead', input.previousOutput);
    if (!c) throw resolveError('Unknown', input.previousOutput);
    seen.add(key);
    return c;
  });
  const deps = resolveDeps(tx, view);
  for (const h of tx.headerDeps) if (!view.hasHeader(h)) throw invalidHeaderError(h);

  const inSum = inputs.reduce((s, c) => s + c.output.capacity, 0n);
  const outSum = tx.outputs.reduce((s, o) => s + o.capacity, 0n);
  if (outSum > inSum) {
    throw txError(
      `OutputsSumOverflow: expected outputs capacity (0x${outSum.toString(16)}) <= inputs capacity (0x${inSum.toString(16)})`,
    );
  }
  tx.outputs.forEach((o, index) => {
    const occupied = BigInt(o.occupiedSize + ccc.bytesFrom(tx.outputsData[index] ?? '0x').length) * SHANNONS;
    if (occupied > o.capacity) {
      throw txError(
        `InsufficientCellCapacity(Outputs[${index}]): expected occupied capacity (0x${occupied.toString(16)}) <= capacity (0x${o.capacity.toString(16)})`,
      );
    }
  });
  tx.inputs.forEach((input, index) => {
    const r = checkSince(input.since, env, inputs[index]?.commit);
    if (r === 'invalid') throw txError(`InvalidSince(Inputs[${index}]): the since field is invalid`);
    if (r === 'immature') {
      throw txError(
        `Immature(Inputs[${index}]): the transaction is immature because of the since requirement`,
      );
    }
  });
  runScripts(tx, inputs, deps);
  return { txHash: txHashOf(tx), fee: inSum - outSum, size, inputs };
}

/** Context-free checks; also guarantees the transaction can be serialised and hashed. */
export function checkShape(tx: ccc.Transaction): void {
  if (tx.version !== 0n) throw txError(`MismatchedVersion: expected 0, got ${tx.version}`);
  if (tx.inputs.length === 0) throw txError('Empty(Inputs)');
  if (tx.outputs.length === 0) throw txError('Empty(Outputs)');
  if (tx.outputs.length !== tx.outputsData.length) {
    throw txError(
      `OutputsDataLengthMismatch: expected outputs data length (${tx.outputsData.length}) = outputs length (${tx.outputs.length})`,
    );
  }
  const deps = new Set<string>();
  for (const d of tx.cellDeps) {
    const k = `${outPointKey(d.outPoint)}:${d.depType}`;
    if (deps.has(k)) throw txError(`DuplicateCellDeps(${d.outPoint.txHash})`);
    deps.add(k);
  }
  if (new Set(tx.headerDeps).size !== tx.headerDeps.length) throw txError('DuplicateHeaderDeps');
  tx.inputs.forEach((input, index) => {
    if (
      input.previousOutput.txHash === `0x${'00'.repeat(32)}` &&
      input.previousOutput.index === 0xffffffffn
    ) {
      throw malformedError('cellbase-like');
    }
    // Flags are checked here (CKB does it with the maturity): ccc cannot encode an invalid since.
    if (input.since !== 0n && checkSince(input.since, FAR_FUTURE, undefined) === 'invalid') {
      throw txError(`InvalidSince(Inputs[${index}]): the since field is invalid`);
    }
  });
  try {
    txBytesOf(tx);
  } catch (e) {
    throw malformedError(`unencodable (${(e as Error).message.slice(0, 200)})`);
  }
}

const FAR_FUTURE: SinceEnv = { blockNumber: 0n, epoch: 0n, medianTime: 0n };

/** CKB's limit on cells a transaction's deps bring in (code deps and dep-group members). */
const MAX_DEP_EXPANSION = 2048;

function resolveDeps(tx: ccc.Transaction, view: ChainView): ViewCell[] {
  const out: ViewCell[] = [];
  let expanded = 0;
  const live = (op: ccc.OutPoint): ViewCell => {
    const c = view.cell(op);
    if (c === 'dead') throw resolveError('Dead', op);
    if (!c) throw resolveError('Unknown', op);
    return c;
  };
  for (const dep of tx.cellDeps) {
    const cell = live(dep.outPoint);
    if (dep.depType === 'code') {
      if (++expanded > MAX_DEP_EXPANSION) {
        throw new ChainTxError('TransactionFailedToResolve', 'Resolve failed OverMaxDepExpansionLimit');
      }
      out.push(cell);
      continue;
    }
    let members: ccc.OutPoint[];
    try {
      members = OutPointVec.decode(cell.data);
    } catch {
      throw resolveError('InvalidDepGroup', dep.outPoint);
    }
    expanded += members.length;
    if (expanded > MAX_DEP_EXPANSION) {
      throw new ChainTxError('TransactionFailedToResolve', 'Resolve failed OverMaxDepExpansionLimit');
    }
    for (const m of members) out.push(live(m));
  }
  return out;
}

function groupsOf(tx: ccc.Transaction, inputs: ViewCell[]): (ScriptGroup & { source: string })[] {
  const groups = new Map<string, ScriptGroup & { source: string }>();
  const get = (script: ccc.Script, kind: 'lock' | 'type', source: string) => {
    const key = `${kind}:${script.hash()}`;
    let g = groups.get(key);
    if (!g) {
      g = { script, kind, inputIndices: [], outputIndices: [], source };
      groups.set(key, g);
    }
    return g;
  };
  inputs.forEach((c, i) => {
    get(c.output.lock, 'lock', `Inputs[${i}].Lock`).inputIndices.push(i);
  });
  inputs.forEach((c, i) => {
    if (c.output.type) get(c.output.type, 'type', `Inputs[${i}].Type`).inputIndices.push(i);
  });
  tx.outputs.forEach((o, i) => {
    if (o.type) get(o.type, 'type', `Outputs[${i}].Type`).outputIndices.push(i);
  });
  return [...groups.values()];
}

function resolveVerifier(script: ccc.Script, deps: ViewCell[]): ScriptVerifier | string {
  if (script.hashType === 'type' && script.codeHash === TYPE_ID_CODE_HASH) return typeId;
  const matches =
    script.hashType === 'type'
      ? deps.filter((d) => d.output.type && d.output.type.hash() === script.codeHash)
      : deps.filter((d) => d.dataHash === script.codeHash);
  if (matches.length === 0) return `ScriptNotFound: code_hash: ${script.codeHash}`;
  const dataHash = (matches[0] as ViewCell).dataHash;
  if (matches.some((m) => m.dataHash !== dataHash)) return 'MultipleMatches';
  return (
    SCRIPT_VERIFIERS.get(dataHash) ??
    `unsupported script: no native verifier for code with data hash ${dataHash} (the dev chain has no RISC-V VM)`
  );
}

function runScripts(tx: ccc.Transaction, inputs: ViewCell[], deps: ViewCell[]): void {
  const ctx = makeTxContext(tx, inputs);
  for (const group of groupsOf(tx, inputs)) {
    const v = resolveVerifier(group.script, deps);
    if (typeof v === 'string') throw scriptError(group.source, v);
    let code: number;
    try {
      code = v.verify(ctx, group);
    } catch {
      code = -1; // a panic in the on-chain script
    }
    if (code !== 0) throw scriptError(group.source, validationFailure(group.script, code));
  }
}

export function dataHashOf(data: Uint8Array): ccc.Hex {
  return bytesToHex(ckbHash(data)) as ccc.Hex;
}

/**
 * The cells `tx` (whose hash is `hash`) creates, keyed `hash:index` as `outPointKey`; `commit`
 * says where it was committed (none for a pending transaction).
 */
export function createdCells(
  tx: ccc.Transaction,
  hash: ccc.Hex,
  commit?: ViewCell['commit'],
): [string, ViewCell][] {
  return tx.outputs.map((output, index) => {
    const data = ccc.bytesFrom(tx.outputsData[index] ?? '0x');
    const cell: ViewCell = {
      outPoint: ccc.OutPoint.from({ txHash: hash, index }),
      output,
      data,
      dataHash: dataHashOf(data),
    };
    if (commit) cell.commit = commit;
    return [`${hash}:${index}`, cell];
  });
}
