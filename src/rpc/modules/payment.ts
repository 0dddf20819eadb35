/** `payment` module: send_payment, get_payment, list_payments (fiber-rpc.md §1.4). */
import { z } from 'zod';
import { toHexQuantity } from '../../codec/index.ts';
import { PathFindError, type RouterHop } from '../../graph/index.ts';
import type { PaymentService } from '../../payment/index.ts';
import { PaymentError } from '../../payment/index.ts';
import { type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';
import { bytes, h256, pubkey, script, u32, u64, u128 } from '../schema.ts';

const outpointHex = z
  .string()
  .regex(/^0x[0-9a-fA-F]{72}$/, { error: 'expected an OutPointHex (0x + 36 bytes)' });

const hopHint = z.object({
  pubkey,
  channel_outpoint: outpointHex,
  fee_rate: u64,
  tlc_expiry_delta: u64,
});

const sendPaymentParams = z.object({
  target_pubkey: pubkey.optional(),
  amount: u128.optional(),
  payment_hash: h256.optional(),
  final_tlc_expiry_delta: u64.optional(),
  tlc_expiry_limit: u64.optional(),
  invoice: z.string().max(8192).optional(),
  timeout: u64.optional(),
  max_fee_amount: u128.optional(),
  max_fee_rate: u64.optional(),
  max_parts: u64.optional(),
  trampoline_hops: z.array(pubkey).optional(),
  keysend: z.boolean().optional(),
  udt_type_script: script.optional(),
  allow_self_payment: z.boolean().optional(),
  custom_records: z.record(z.string().regex(/^0x[0-9a-f]+$/), bytes).optional(),
  hop_hints: z.array(hopHint).optional(),
  dry_run: z.boolean().optional(),
});

const statusEnum = z.enum(['Created', 'Inflight', 'Success', 'Failed']);

const routerHop = z.object({
  target: pubkey,
  channel_outpoint: outpointHex,
  amount_received: u128,
  incoming_tlc_expiry: u64,
});

export type RouteBuilder = (req: {
  hops: { pubkey: string; channelOutpoint: string | null }[];
  amount: bigint | null;
  udt: string | null;
  finalTlcExpiryDelta: number | null;
}) => RouterHop[];

function routerHopJson(h: RouterHop) {
  return {
    target: h.target,
    channel_outpoint: h.channelOutpoint,
    amount_received: toHexQuantity(h.amountReceived),
    incoming_tlc_expiry: toHexQuantity(h.incomingTlcExpiry),
  };
}

export function paymentMethods(svc: PaymentService, buildRoute?: RouteBuilder): MethodSpec[] {
  return [
    method({
      name: 'build_router',
      module: 'payment',
      description:
        'Builds a route through the given hops (each a pubkey and optionally the channel to use) for `amount`, with fees and expiries, for `send_payment_with_router`.',
      result: R.buildRouterResult,
      params: z.object({
        amount: u128.optional(),
        udt_type_script: script.optional(),
        hops_info: z.array(z.object({ pubkey, channel_outpoint: outpointHex.nullable().optional() })),
        final_tlc_expiry_delta: u64.optional(),
      }),
      handler: (p) => {
        if (p.hops_info.length === 0)
          throw new PaymentError('NoHopRequirements', 'InvalidParameter: No hop requirements provided');
        if (!buildRoute)
          throw new PaymentError('NoPathFound', 'Network Graph error: PathFind error: no path found');
        try {
          const hops = buildRoute({
            hops: p.hops_info.map((h) => ({ pubkey: h.pubkey, channelOutpoint: h.channel_outpoint ?? null })),
            amount: p.amount ?? null,
            udt: p.udt_type_script ? JSON.stringify(p.udt_type_script) : null,
            finalTlcExpiryDelta:
              p.final_tlc_expiry_delta === undefined ? null : Number(p.final_tlc_expiry_delta),
          });
          return { router_hops: hops.map(routerHopJson) };
        } catch (e) {
          if (e instanceof PathFindError)
            throw new PaymentError('NoPathFound', `Network Graph error: ${e.message}`);
          throw e;
        }
      },
    }),
    method({
      name: 'send_payment_with_router',
      module: 'payment',
      description: 'Pays along an explicit route (from `build_router`); never retried on another route.',
      result: R.paymentRecord,
      params: z.object({
        payment_hash: h256.optional(),
        router: z.array(routerHop),
        invoice: z.string().max(8192).optional(),
        custom_records: z.record(z.string().regex(/^0x[0-9a-f]+$/), bytes).optional(),
        keysend: z.boolean().optional(),
        udt_type_script: script.optional(),
        dry_run: z.boolean().optional(),
      }),
      handler: ({ router, ...rest }) =>
        svc.sendWithRouter(
          rest,
          router.map((h) => ({
            target: h.target,
            channelOutpoint: h.channel_outpoint.toLowerCase(),
            amountReceived: h.amount_received,
            incomingTlcExpiry: Number(h.incoming_tlc_expiry),
          })),
        ),
    }),
    method({
      name: 'send_payment',
      module: 'payment',
      description:
        'Pays an invoice, or a `target_pubkey` with `keysend`, over one or more hops (MPP, trampoline and hop hints as asked). Answers once the first attempt is under way; poll `get_payment` for the outcome. `dry_run` only finds a route and its fee.',
      result: R.paymentRecord,
      params: sendPaymentParams,
      handler: (p) => {
        // Record keys stay as given (`"0x1"`); Number() reads them for the range check.
        return svc.send(p);
      },
    }),
    method({
      name: 'get_payment',
      module: 'payment',
      description: 'A payment by its hash: status, fee, failure reason and the routes of its live attempts.',
      result: R.paymentRecord,
      params: z.object({ payment_hash: h256 }),
      handler: (p) => svc.get(p.payment_hash),
    }),
    method({
      name: 'list_payments',
      module: 'payment',
      description:
        "Payments in payment-hash order, optionally of one status; `after` is the previous page's `last_cursor`.",
      result: R.listPaymentsResult,
      examples: [{ name: 'no payments yet', params: {}, result: { payments: [], last_cursor: null } }],
      params: z.object({ status: statusEnum.optional(), limit: u32.optional(), after: h256.optional() }),
      handler: (p) => {
        const limit = Number(p.limit ?? 15n);
        return svc.list({ status: p.status, limit: Math.min(limit, 10_000), after: p.after });
      },
    }),
  ];
}
