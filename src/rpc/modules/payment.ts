/** `payment` module: send_payment, get_payment, list_payments (fiber-rpc.md §1.4). */
import { z } from 'zod';
import { DomainError } from '../../codec/errors.ts';
import type { PaymentService } from '../../payment/service.ts';
import { type MethodSpec, method } from '../method.ts';
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

export function paymentMethods(svc: PaymentService): MethodSpec[] {
  return [
    method({
      name: 'send_payment',
      module: 'payment',
      params: sendPaymentParams,
      handler: (p) => {
        if (p.trampoline_hops && p.trampoline_hops.length > 0) {
          throw new DomainError('Send payment error: trampoline routing is not supported by this node');
        }
        // Record keys stay as given (`"0x1"`); Number() reads them for the range check.
        return svc.send(p);
      },
    }),
    method({
      name: 'get_payment',
      module: 'payment',
      params: z.object({ payment_hash: h256 }),
      handler: (p) => svc.get(p.payment_hash),
    }),
    method({
      name: 'list_payments',
      module: 'payment',
      params: z.object({ status: statusEnum.optional(), limit: u32.optional(), after: h256.optional() }),
      handler: (p) => {
        const limit = Number(p.limit ?? 15n);
        return svc.list({ status: p.status, limit: Math.min(limit, 10_000), after: p.after });
      },
    }),
  ];
}
