/**
 * `strand/client/results`: run-time checks of replies, for `createClient({ resultSchemas:
 * RESULT_SCHEMAS })`. The schemas are the RPC's own (`src/rpc/results.ts`, the source of the
 * OpenRPC document), generated as JSON Schema into `result-schemas.gen.ts` and checked by
 * `check-json.ts`: no zod, no node code. They describe a node whose `rpc.compat` is the default
 * (the seed's names); against `rpc.compat: fnn-0.8` some replies (channel states, invoice
 * attributes) do not match, so leave the checks off there. Objects are strict: a field the
 * client does not know (a node of another version) fails the check, as a wrong type does.
 */
import { checkJson } from './check-json.ts';
import { RESULT_DEF_OF_METHOD, RESULT_DEFS } from './result-schemas.gen.ts';
import type { RpcResults } from './results.gen.ts';

export type * from './results.gen.ts';

/** A reply that does not match its method's result schema; the message says where. */
export class ResultMismatchError extends Error {
  override name = 'ResultMismatchError';
}

/** The check of one method's result: gives the value back as is, or throws ResultMismatchError. */
export interface ResultCheck<T> {
  parse(value: unknown): T;
}

function resultCheck<M extends keyof RpcResults>(method: M): ResultCheck<RpcResults[M]> {
  const schema = { $ref: `#/$defs/${RESULT_DEF_OF_METHOD[method]}` };
  return {
    parse(value) {
      const miss = checkJson(schema, value, RESULT_DEFS);
      if (miss) throw new ResultMismatchError(miss);
      return value as RpcResults[M];
    },
  };
}

/** The result check of every method, by name. */
export const RESULT_SCHEMAS = Object.fromEntries(
  Object.keys(RESULT_DEF_OF_METHOD).map((m) => [m, resultCheck(m as keyof RpcResults)]),
) as { readonly [M in keyof RpcResults]: ResultCheck<RpcResults[M]> };
