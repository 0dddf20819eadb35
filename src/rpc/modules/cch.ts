/**
 * `cch` module (`fiber-rpc.md` §1.7): send_btc, receive_btc, get_cch_order. Mounted only when the
 * node runs the `cch` service, as fnn v0.8. Refusals of the invoice given (malformed, expired,
 * wrong network, amount, expiry rules) are -32602 naming the field, with fnn's texts.
 */
import { z } from 'zod';
import type { CchService } from '../../cch/index.ts';
import { orderToJson } from '../../cch/index.ts';
import { type MethodSpec, method } from '../method.ts';
import { cchOrderRecord } from '../results.ts';
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
      description:
        "Creates an order paying the BOLT 11 invoice `btc_pay_req` through the hub's LND, for wrapped BTC on Fiber (Fiber → Lightning). The order's `incoming_invoice.Fiber` is a hold invoice of this node in wrapped BTC (amount + fee, the same payment hash, `currency` its network); once the payer's TLCs are held there, the hub pays the BOLT 11 invoice and settles the Fiber side with the preimage it learned.",
      result: cchOrderRecord,
      params: sendBtcParams,
      handler: async (p) => orderToJson(await cch.sendBtc(p.btc_pay_req, p.currency)),
    }),
    method({
      name: 'receive_btc',
      module: 'cch',
      description:
        "Creates an order paying the Fiber invoice `fiber_pay_req` (in wrapped BTC, SHA-256 payment hash) for bitcoin on Lightning (Lightning → Fiber). The order's `incoming_invoice.Lightning` is a hold invoice of the hub's LND (amount + fee, the same payment hash); once the Lightning payment is held, the hub pays the Fiber invoice and settles the Lightning side with the preimage it learned.",
      result: cchOrderRecord,
      params: receiveBtcParams,
      handler: async (p) => orderToJson(await cch.receiveBtc(p.fiber_pay_req)),
    }),
    method({
      name: 'get_cch_order',
      module: 'cch',
      description:
        'The cross-chain order of `payment_hash`. Its `status` goes Pending → IncomingAccepted → OutgoingInFlight → OutgoingSuccess → Success, or to Failed (with `failure_reason`). A hash with no order is refused (`Store error: Key not found: …`).',
      result: cchOrderRecord,
      params: getCchOrderParams,
      handler: (p) => orderToJson(cch.getOrder(p.payment_hash)),
    }),
  ];
}
