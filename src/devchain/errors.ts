/**
 * Transaction rejections with CKB's codes and message texts (ckb `rpc/src/error.rs`,
 * `util/types/src/core/error.rs`), so that clients written for CKB read them unchanged.
 */
import type { ccc } from '@ckb-ccc/core';
import { StrandError } from '../codec/index.ts';

export const RPC_CODE = {
  TransactionFailedToResolve: -301,
  TransactionFailedToVerify: -302,
  PoolRejectedTransactionByMinFeeRate: -1104,
  PoolRejectedDuplicatedTransaction: -1107,
  PoolRejectedMalformedTransaction: -1108,
  PoolRejectedTransactionBySizeLimit: -1110,
} as const;
export type RpcCodeName = keyof typeof RPC_CODE;

export class ChainTxError extends StrandError {
  readonly code: number;
  constructor(
    readonly kind: RpcCodeName,
    /** The reason after the kind prefix, e.g. `Resolve failed Dead(OutPoint(0x…))`. */
    readonly reason: string,
  ) {
    super(`${kind}: ${reason}`);
    this.code = RPC_CODE[kind];
  }
}

/** `OutPoint(0x<tx hash><index u32 le>)`, the Debug form of CKB's packed OutPoint. */
export function outPointDebug(op: ccc.OutPoint): string {
  const idx = Buffer.alloc(4);
  idx.writeUInt32LE(Number(op.index));
  return `OutPoint(${op.txHash}${idx.toString('hex')})`;
}

export const resolveError = (what: 'Dead' | 'Unknown' | 'InvalidDepGroup', op: ccc.OutPoint) =>
  new ChainTxError('TransactionFailedToResolve', `Resolve failed ${what}(${outPointDebug(op)})`);

export const invalidHeaderError = (hash: string) =>
  new ChainTxError('TransactionFailedToResolve', `Resolve failed InvalidHeader(Byte32(${hash}))`);

export const txError = (text: string) =>
  new ChainTxError('TransactionFailedToVerify', `Verification failed Transaction(${text})`);

export const malformedError = (text: string) =>
  new ChainTxError('PoolRejectedMalformedTransaction', `Malformed ${text} transaction`);

/** A failing script: source like `Inputs[0].Lock`, an exit code and the script's code hash. */
export function scriptError(source: string, cause: string): ChainTxError {
  return new ChainTxError(
    'TransactionFailedToVerify',
    `Verification failed Script(TransactionScriptError { source: ${source}, cause: ${cause} })`,
  );
}

export function validationFailure(script: ccc.Script, code: number): string {
  const page = script.hashType === 'type' ? 'by-type-hash' : 'by-data-hash';
  return `ValidationFailure: see error code ${code} on page https://nervosnetwork.github.io/ckb-script-error-codes/${page}/${script.codeHash.slice(2)}.html#${code}`;
}
