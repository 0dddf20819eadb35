/**
 * Ranges of RPC values that fnn leaves to the full width of their type but that break later when
 * used (an amount that overflows a CKB capacity, a fee that cannot be gossiped, an expiry past the
 * end of time). Where fnn has a bound, its text is used; the rest are documented in
 * `docs/rpc-limits.md`. A refusal is a method refusing a value: -32000 with the field and limit.
 */
import { U64_MAX } from '../codec/index.ts';
import { RpcMethodError } from './errors.ts';

/** A proportional fee of 100%: no route pays more than the amount it forwards as a fee. */
export const MAX_FEE_PROPORTIONAL_MILLIONTHS = 1_000_000n;
/** 1 CKB per kB, a hundred thousand times the usual rate: more only burns the funds. */
export const MAX_FEE_RATE = 100_000_000n;
/** Ten years: longer invoice expiries overflow millisecond timestamps long before they matter. */
export const MAX_INVOICE_EXPIRY_SECONDS = 10n * 365n * 24n * 3600n;

export interface ChannelTerms {
  funding_amount?: bigint;
  tlc_min_value?: bigint;
  tlc_minimum_value?: bigint;
  tlc_fee_proportional_millionths?: bigint;
  funding_fee_rate?: bigint;
  commitment_fee_rate?: bigint;
  fee_rate?: bigint;
}

/**
 * The channel fields' ranges (`Invalid parameter: …`, fnn's channel error prefix). `ckb` is true
 * for a channel funded in CKB, where no amount can reach u64::MAX shannons (fnn's own funding
 * check); a UDT channel's amounts are token amounts (u128).
 */
export function checkChannelTerms(p: ChannelTerms, ckb: boolean): void {
  const refuse = (msg: string): never => {
    throw new RpcMethodError('OutOfRange', `Invalid parameter: ${msg}`);
  };
  if (ckb && p.funding_amount !== undefined && p.funding_amount >= U64_MAX)
    refuse(`The funding amount (${p.funding_amount}) should be less than ${U64_MAX}`);
  const fee = p.tlc_fee_proportional_millionths;
  if (fee !== undefined && fee > MAX_FEE_PROPORTIONAL_MILLIONTHS)
    refuse(
      `tlc_fee_proportional_millionths (${fee}) should be at most ${MAX_FEE_PROPORTIONAL_MILLIONTHS} (a fee of 100%)`,
    );
  for (const field of ['funding_fee_rate', 'commitment_fee_rate', 'fee_rate'] as const) {
    const v = p[field];
    if (v !== undefined && v > MAX_FEE_RATE)
      refuse(`${field} (${v}) should be at most ${MAX_FEE_RATE} shannons per kB`);
  }
  for (const field of ['tlc_min_value', 'tlc_minimum_value'] as const) {
    const v = p[field];
    if (ckb && v !== undefined && v > U64_MAX)
      refuse(`${field} (${v}) should be at most ${U64_MAX}, the most shannons a CKB channel can hold`);
  }
}

/** `new_invoice` expiry (fnn: `InvalidParameter: …`). */
export function checkInvoiceExpiry(expiry: bigint | undefined): void {
  if (expiry !== undefined && expiry > MAX_INVOICE_EXPIRY_SECONDS)
    throw new RpcMethodError(
      'OutOfRange',
      `InvalidParameter: expiry (${expiry}) should be at most ${MAX_INVOICE_EXPIRY_SECONDS} seconds (10 years)`,
    );
}
