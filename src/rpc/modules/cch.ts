/**
 * `cch` module (`fiber-rpc.md` §1.7): send_btc, receive_btc, get_cch_order. Mounted only when the
 * node runs the `cch` service, as fnn v0.8. Refusals of the invoice given (malformed, expired,
 * wrong network, amount, expiry rules) are -32602 naming the field, with fnn's texts.
 */
import { z } from 'zod';
import { orderToJson } from '../../cch/order.ts';
import type { CchService } from '../../cch/service.ts';
import { type MethodSpec, method } from '../method.ts';
import { h256 } from '../schema.ts';

/** Longer than any invoice either network makes (BOLT 11 caps at 7,089 characters; Fiber at 8,192). */
const MAX_PAY_REQ = 8192;
const payReq = (field: string) =>
  z
    .string({ error: `expected ${field} as a string` })
    .min(1, { error: 'expected a non-empty invoice string' })
    .max(MAX_PAY_REQ, { error: `at most ${MAX_PAY_REQ} characters` });

export const sendBtcParams = z.object({
  btc_pay_req: payReq('a BOLT 11 invoice'),
  currency: z.enum(['Fibb', 'Fibt', 'Fibd'], { error: 'expected one of Fibb, Fibt, Fibd' }),
});
export const receiveBtcParams = z.object({ fiber_pay_req: payReq('a Fiber invoice') });
export const getCchOrderParams = z.object({ payment_hash: h256 });

export function cchMethods(cch: CchService): MethodSpec[] {
  return [
    method({
      name: 'send_btc',
      module: 'cch',
      params: sendBtcParams,
      handler: async (p) => orderToJson(await cch.sendBtc(p.btc_pay_req, p.currency)),
    }),
    method({
      name: 'receive_btc',
      module: 'cch',
      params: receiveBtcParams,
      handler: async (p) => orderToJson(await cch.receiveBtc(p.fiber_pay_req)),
    }),
    method({
      name: 'get_cch_order',
      module: 'cch',
      params: getCchOrderParams,
      handler: (p) => orderToJson(cch.getOrder(p.payment_hash)),
    }),
  ];
}
