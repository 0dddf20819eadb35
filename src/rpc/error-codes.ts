/**
 * The one table from an error's code to its JSON-RPC code. Every domain folder lists its codes
 * (`CHANNEL_ERROR_CODES` in `channel/errors.ts`, …); a DomainError answers -32000 unless its code is
 * listed here, with its message as is (fnn's texts) and the code in `error.data.error_code`.
 */
import { CCH_ERROR_CODES } from '../cch/index.ts';
import { CHAIN_ERROR_CODES } from '../chain/index.ts';
import { CHANNEL_ERROR_CODES } from '../channel/index.ts';
import type { DomainError } from '../codec/index.ts';
import { GRAPH_ERROR_CODES } from '../graph/index.ts';
import { INVOICE_ERROR_CODES } from '../invoice/index.ts';
import { PEER_ERROR_CODES } from '../p2p/index.ts';
import { PAYMENT_ERROR_CODES } from '../payment/index.ts';
import { STORE_ERROR_CODES } from '../store/index.ts';
import { WATCHTOWER_ERROR_CODES } from '../watchtower/index.ts';
import { RPC_METHOD_ERROR_CODES } from './errors.ts';

/** Every domain's codes with what each means, by folder (docs/rpc.md lists them from here). */
export const ERROR_CODES_BY_DOMAIN = {
  chain: CHAIN_ERROR_CODES,
  store: STORE_ERROR_CODES,
  peer: PEER_ERROR_CODES,
  channel: CHANNEL_ERROR_CODES,
  graph: GRAPH_ERROR_CODES,
  invoice: INVOICE_ERROR_CODES,
  payment: PAYMENT_ERROR_CODES,
  watchtower: WATCHTOWER_ERROR_CODES,
  cch: CCH_ERROR_CODES,
  rpc: RPC_METHOD_ERROR_CODES,
} as const;

type Domains = typeof ERROR_CODES_BY_DOMAIN;
export type ErrorCode = { [D in keyof Domains]: keyof Domains[D] }[keyof Domains];

/** JSON-RPC code of a refusal: the generic "the node refused" of fnn (CALL_EXECUTION_FAILED). */
export const DEFAULT_JSON_RPC_CODE = -32000;

/**
 * The codes that answer other than -32000. Empty today: fnn answers every refusal with -32000
 * and clients written for it expect that; a code that ought to differ is added here, nowhere else.
 */
export const JSON_RPC_CODE_OF: Readonly<Partial<Record<ErrorCode, number>>> = {};

/** The JSON-RPC code for a domain error's code (`error.code` of the answer). */
export function jsonRpcCodeOf(code: string): number {
  return Object.hasOwn(JSON_RPC_CODE_OF, code)
    ? (JSON_RPC_CODE_OF[code as ErrorCode] as number)
    : DEFAULT_JSON_RPC_CODE;
}

/**
 * `error.data` of a domain error's answer: `{ error_code }` when the error carries no data. Data it
 * carries (the params fnn echoes with invoice and peer refusals) is sent as fnn sends it, byte for
 * byte, without the code: clients written for fnn compare it.
 */
export function errorDataOf(e: DomainError): unknown {
  return e.data === undefined ? { error_code: e.code } : e.data;
}
