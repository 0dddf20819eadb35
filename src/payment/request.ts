/**
 * `send_payment` parameters → a validated payment request, with the reference's defaults and its
 * refusal texts (`Failed to validate payment request: "<reason>"`, fiber-rpc.md §5.2). Pure: the
 * caller supplies the decoded invoice and the clock.
 */
import { randomBytes } from 'node:crypto';
import { bytesToHex, type DomainError } from '../codec/index.ts';
import { ckbHash, sha256 } from '../crypto/index.ts';
import type { Invoice } from '../invoice/index.ts';
import { allowsMpp, allowsTrampoline, findAttr } from '../invoice/index.ts';
import { describeAsset, invoiceAsset, invoiceUdtScript, scriptAsset } from './asset.ts';
import { PaymentError } from './errors.ts';
import { MAX_TLC_EXPIRY_LIMIT, MIN_TLC_EXPIRY_DELTA } from './expiry-limits.ts';
import { MAX_PARTS_LIMIT, mppRecordEntry } from './mpp.ts';
import { MAX_CUSTOM_RECORDS_SIZE } from './onion/hop-data.ts';
import { type TrampolineContext, trampolineHopsProblem } from './trampoline.ts';

export const DEFAULT_FINAL_TLC_EXPIRY_DELTA = 86_400_000n;
export const DEFAULT_MAX_FEE_RATE = 5n; // per thousand
export const DEFAULT_MAX_PARTS = 12n;
const U64_MAX = (1n << 64n) - 1n;

export interface SendPaymentParams {
  target_pubkey?: string;
  amount?: bigint;
  payment_hash?: string;
  final_tlc_expiry_delta?: bigint;
  tlc_expiry_limit?: bigint;
  invoice?: string;
  timeout?: bigint;
  max_fee_amount?: bigint;
  max_fee_rate?: bigint;
  max_parts?: bigint;
  keysend?: boolean;
  udt_type_script?: { code_hash: string; hash_type: string; args: string };
  allow_self_payment?: boolean;
  custom_records?: Record<string, string>;
  hop_hints?: { pubkey: string; channel_outpoint: string; fee_rate: bigint; tlc_expiry_delta: bigint }[];
  dry_run?: boolean;
  /** Explicit trampoline nodes (1..5): the route reaches the first, the inner onion the rest. */
  trampoline_hops?: string[];
}

export type HashAlgorithmName = 'ckb_hash' | 'sha256';

/** What a payment session stores and the router/onion need. */
export interface PaymentRequest {
  targetPubkey: string;
  amount: bigint;
  /** 0x-prefixed. */
  paymentHash: string;
  /** Keysend: the preimage travels in the final hop's payload. 0x-prefixed. */
  preimage: string | null;
  finalTlcExpiryDelta: bigint;
  tlcExpiryLimit: bigint;
  maxFeeAmount: bigint;
  maxParts: bigint;
  /** The invoice allows multi-part payment (BASIC_MPP feature and a payment secret). */
  allowMpp?: boolean;
  keysend: boolean;
  udtTypeScript: { code_hash: string; hash_type: string; args: string } | null;
  allowSelfPayment: boolean;
  customRecords: Record<string, string> | null;
  hopHints: { pubkey: string; channelOutpoint: string; feeRate: bigint; tlcExpiryDelta: bigint }[];
  hashAlgorithm: HashAlgorithmName;
  invoice: string | null;
  dryRun: boolean;
  timeout: bigint | null;
  /** The sender's trampoline nodes (`trampoline_hops`). */
  trampolineHops?: string[] | null;
  /** A trampoline node's own payment for an incoming TLC (see trampoline.ts). */
  trampoline?: TrampolineContext | null;
}

export function invalidRequest(reason: string): DomainError {
  return new PaymentError(
    'InvalidRequest',
    `InvalidParameter: Failed to validate payment request: "${reason}"`,
  );
}

export interface ValidateContext {
  /** The decoded invoice when `invoice` was given (already checked to parse). */
  invoice?: Invoice;
  /** Whether the invoice's signature verifies. */
  invoiceSignatureValid?: boolean;
  nowMs: number;
  /** Hex pubkey (66 chars, no 0x) of the payee in the invoice, when present. */
  invoicePayee?: string;
  /** The node's least TLC expiry delta (`codec/epoch-rules.ts`); fnn's release bound when absent. */
  minTlcExpiryDelta?: bigint;
}

export function validateSendPayment(p: SendPaymentParams, ctx: ValidateContext): PaymentRequest {
  const inv = ctx.invoice;
  if (p.keysend && p.invoice) throw invalidRequest('keysend payment should not have invoice');
  if (p.keysend && p.payment_hash) throw invalidRequest('keysend payment should not have payment_hash');

  let target = p.target_pubkey;
  let amount = p.amount;
  let paymentHash = p.payment_hash;
  let finalDelta = p.final_tlc_expiry_delta;
  let hashAlgorithm: HashAlgorithmName = 'ckb_hash';
  let allowMpp = false;
  let paymentSecret: Uint8Array | undefined;
  let udt = p.udt_type_script ?? null;
  if (inv) {
    if (ctx.invoiceSignatureValid === false) throw invalidRequest('invoice is invalid');
    const payee = ctx.invoicePayee;
    if (target !== undefined && payee !== undefined && target !== payee) {
      throw invalidRequest('target_pubkey does not match the invoice');
    }
    target ??= payee;
    if (amount !== undefined && inv.amount !== undefined && amount !== inv.amount) {
      throw invalidRequest('amount does not match the invoice');
    }
    amount ??= inv.amount;
    const invHash = bytesToHex(inv.data.paymentHash);
    if (paymentHash !== undefined && paymentHash !== invHash) {
      throw invalidRequest('payment_hash does not match the invoice');
    }
    paymentHash = invHash;
    const expiry = findAttr(inv, 'ExpiryTime');
    if (expiry && Number(inv.data.timestamp) + Number(expiry.seconds) * 1000 < ctx.nowMs) {
      throw invalidRequest('invoice is expired');
    }
    const invDelta = findAttr(inv, 'FinalHtlcMinimumExpiryDelta');
    if (invDelta && finalDelta !== undefined && finalDelta !== invDelta.value) {
      throw invalidRequest('final_tlc_expiry_delta does not match the invoice');
    }
    finalDelta ??= invDelta?.value;
    const alg = findAttr(inv, 'HashAlgorithm');
    if (alg) hashAlgorithm = alg.value;
    udt = paidAsset(inv, p.udt_type_script);
    if (p.hop_hints && p.hop_hints.length > 0 && !allowsTrampoline(inv))
      throw invalidRequest('invoice does not support hop hints');
    allowMpp = allowsMpp(inv);
    paymentSecret = findAttr(inv, 'PaymentSecret')?.value;
    if (allowMpp && !paymentSecret) throw invalidRequest('payment secret is required for multi-path payment');
  }
  if (target === undefined) throw invalidRequest('target_pubkey is missing');
  if (amount === undefined) throw invalidRequest('amount is missing');

  let preimage: string | null = null;
  if (p.keysend) {
    const pre = randomBytes(32);
    preimage = bytesToHex(pre);
    paymentHash = bytesToHex(ckbHash(pre));
  }
  if (paymentHash === undefined) throw invalidRequest('payment_hash is missing');
  if (amount === 0n) throw invalidRequest('amount must be greater than 0');
  if (!udt && amount >= U64_MAX) {
    throw invalidRequest(`The payment amount (${amount}) should be less than ${U64_MAX}`);
  }
  finalDelta ??= DEFAULT_FINAL_TLC_EXPIRY_DELTA;
  const minDelta = ctx.minTlcExpiryDelta ?? MIN_TLC_EXPIRY_DELTA;
  if (finalDelta < minDelta || finalDelta > MAX_TLC_EXPIRY_LIMIT) {
    throw invalidRequest(
      `invalid final_tlc_expiry_delta, expect between ${minDelta} and ${MAX_TLC_EXPIRY_LIMIT}`,
    );
  }
  const limit = p.tlc_expiry_limit ?? MAX_TLC_EXPIRY_LIMIT;
  if (limit < finalDelta) {
    throw invalidRequest(
      `tlc_expiry_limit is too small, final_tlc_expiry_delta: ${finalDelta}, tlc_expiry_limit: ${limit}`,
    );
  }
  if (limit > MAX_TLC_EXPIRY_LIMIT) {
    throw invalidRequest(`tlc_expiry_limit is too large, expect it to less than ${MAX_TLC_EXPIRY_LIMIT}`);
  }
  let customRecords = p.custom_records ?? null;
  if (customRecords) {
    for (const k of Object.keys(customRecords)) {
      const key = Number(k);
      if (!Number.isInteger(key) || key < 0 || key > 65535) {
        throw invalidRequest('custom_records key should in range 0 ~ 65535');
      }
    }
  }
  // As the reference: any invoice with a payment secret gets the MPP record (secret ‖ total), which
  // then counts towards the records' size limit.
  if (paymentSecret) customRecords = { ...customRecords, ...mppRecordEntry(paymentSecret, amount) };
  if (customRecords) {
    const size = Object.values(customRecords).reduce((n, v) => n + (v.length - 2) / 2, 0);
    if (size > MAX_CUSTOM_RECORDS_SIZE) {
      throw invalidRequest("the sum size of custom_records's value can not more than 2048 bytes");
    }
  }
  // The reference checks max_parts only when given: 1..24, above 1 only for an MPP invoice, and
  // not 1 for one (an MPP invoice is always paid as MPP).
  const maxParts = p.max_parts ?? DEFAULT_MAX_PARTS;
  const partsRange = `invalid max_parts, value should be in range [1, ${MAX_PARTS_LIMIT}]`;
  if (p.max_parts !== undefined) {
    if (maxParts < 1n || maxParts > MAX_PARTS_LIMIT) throw invalidRequest(partsRange);
    if (allowMpp && maxParts <= 1n) throw invalidRequest(partsRange);
    if (!allowMpp && maxParts > 1n) throw invalidRequest('payment invoice is not allow MPP');
  }
  if (p.trampoline_hops) {
    const problem = trampolineHopsProblem({
      hops: p.trampoline_hops,
      target,
      maxFeeAmountGiven: p.max_fee_amount !== undefined,
      allowSelfPayment: !!p.allow_self_payment,
      mppParts: allowMpp ? maxParts : null,
    });
    if (problem) throw invalidRequest(problem);
  }
  // Fee cap: the smaller of the absolute cap and the rate cap (rounded up).
  const rate = p.max_fee_rate ?? DEFAULT_MAX_FEE_RATE;
  const byRate = (amount * rate + 999n) / 1000n;
  const maxFeeAmount =
    p.max_fee_amount !== undefined && p.max_fee_amount < byRate ? p.max_fee_amount : byRate;
  return {
    targetPubkey: target,
    amount,
    paymentHash,
    preimage,
    finalTlcExpiryDelta: finalDelta,
    tlcExpiryLimit: limit,
    maxFeeAmount,
    maxParts,
    allowMpp,
    keysend: !!p.keysend,
    udtTypeScript: udt,
    allowSelfPayment: !!p.allow_self_payment,
    customRecords,
    hopHints: (p.hop_hints ?? []).map((h) => ({
      pubkey: h.pubkey,
      channelOutpoint: h.channel_outpoint,
      feeRate: h.fee_rate,
      tlcExpiryDelta: h.tlc_expiry_delta,
    })),
    hashAlgorithm,
    invoice: p.invoice ?? null,
    dryRun: !!p.dry_run,
    timeout: p.timeout ?? null,
    trampolineHops: p.trampoline_hops ?? null,
  };
}

/**
 * The asset an invoice is paid in: the invoice's own (its UdtScript, none for CKB). An explicit
 * `udt_type_script` must name that same asset: the receiver settles nothing else.
 */
function paidAsset(
  inv: Invoice,
  given: SendPaymentParams['udt_type_script'] | null,
): PaymentRequest['udtTypeScript'] {
  const script = invoiceUdtScript(inv);
  if (script === undefined) throw invalidRequest('the invoice names a UDT script of an unknown hash type');
  const want = invoiceAsset(inv);
  const named = given ? scriptAsset(given) : want;
  if (named !== want) {
    throw invalidRequest(
      `udt_type_script does not match the invoice: the invoice is paid in ${describeAsset(want)}, udt_type_script names ${describeAsset(named)}`,
    );
  }
  return script;
}

/** Whether `preimage` opens `paymentHash` under `alg`. */
export function preimageMatches(
  preimage: Uint8Array,
  paymentHash: Uint8Array,
  alg: HashAlgorithmName,
): boolean {
  const h = alg === 'sha256' ? sha256(preimage) : ckbHash(preimage);
  return Buffer.from(h).equals(Buffer.from(paymentHash));
}
