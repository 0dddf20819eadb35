/**
 * `invoice` module: new_invoice, parse_invoice, get_invoice, cancel_invoice, settle_invoice
 * (`docs/reference/fiber-rpc.md` §1.5). Business failures carry the reference's texts and,
 * as fnn does, echo the request params as `error.data`.
 */
import { z } from 'zod';
import { AddressError, addressToScript } from '../../chain/index.ts';
import { DomainError } from '../../codec/index.ts';
import type { HashAlgorithm, InvoiceService, StoredInvoice } from '../../invoice/index.ts';
import { type AttrStyle, InvoiceError, invoiceToJson, scriptToMolecule } from '../../invoice/index.ts';
import { checkInvoiceExpiry } from '../limits.ts';
import { type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';
import { echo, h256, type ScriptJson, script, u64, u128 } from '../schema.ts';
import { PARSE_INVOICE_EXAMPLE } from './invoice-examples.ts';

/** Optional in the reference's serde sense: absent or null. */
const opt = <T extends z.ZodType>(t: T) => t.nullish().transform((v) => v ?? undefined);

const currency = z.enum(['Fibb', 'Fibt', 'Fibd'], { error: 'expected one of Fibb, Fibt, Fibd' });

/** v0.8 writes `ckb_hash` / `sha256`; the older PascalCase names are accepted too. */
const hashAlgorithm = z
  .enum(['ckb_hash', 'sha256', 'CkbHash', 'Sha256'], { error: 'expected ckb_hash or sha256' })
  .transform((v): HashAlgorithm => (v === 'sha256' || v === 'Sha256' ? 'sha256' : 'ckb_hash'));

export const newInvoiceParams = z.object({
  amount: u128,
  description: opt(z.string()),
  currency,
  payment_preimage: opt(h256),
  payment_hash: opt(h256),
  expiry: opt(u64),
  fallback_address: opt(z.string()),
  final_expiry_delta: opt(u64),
  udt_type_script: opt(script),
  hash_algorithm: opt(hashAlgorithm),
  allow_mpp: opt(z.boolean()),
  allow_trampoline_routing: opt(z.boolean()),
  // `final_cltv` (older clients, the seed's examples) is ignored like any unknown key, as fnn v0.8 does.
});

export const parseInvoiceParams = z.object({ invoice: z.string({ error: 'expected an invoice string' }) });
export const paymentHashParams = z.object({ payment_hash: h256 });
export const settleInvoiceParams = z.object({ payment_hash: h256, payment_preimage: h256 });

type NewInvoiceParams = z.output<typeof newInvoiceParams>;

/** The params as fnn echoes them in `error.data`: every field, absent ones as null. */
function echoNewInvoice(p: NewInvoiceParams) {
  return {
    amount: p.amount,
    description: p.description ?? null,
    currency: p.currency,
    payment_preimage: p.payment_preimage ?? null,
    payment_hash: p.payment_hash ?? null,
    expiry: p.expiry ?? null,
    fallback_address: p.fallback_address ?? null,
    final_expiry_delta: p.final_expiry_delta ?? null,
    udt_type_script: p.udt_type_script ?? null,
    hash_algorithm: p.hash_algorithm ?? null,
    allow_mpp: p.allow_mpp ?? null,
    allow_trampoline_routing: p.allow_trampoline_routing ?? null,
  };
}

export interface InvoiceMethodsOptions {
  /** Attribute keys in results: the seed's PascalCase (default) or v0.8 snake_case. */
  attrStyle?: AttrStyle;
  /** Whether the node knows a token (its UDT whitelist); without it every token is accepted. */
  knownUdt?: (script: ScriptJson) => boolean;
}

/** The address prefix of each invoice currency: mainnet `ckb`, the others `ckt`. */
const ADDRESS_PREFIX: Record<string, string> = { Fibb: 'ckb', Fibt: 'ckt', Fibd: 'ckt' };

/** The values `new_invoice` refuses although they parse (`InvalidParameter: <field> …`). */
function checkNewInvoice(p: NewInvoiceParams, opts: InvoiceMethodsOptions): void {
  checkInvoiceExpiry(p.expiry);
  if (p.fallback_address !== undefined) {
    const prefix = ADDRESS_PREFIX[p.currency]!;
    const shown = echo(p.fallback_address);
    if (!p.fallback_address.startsWith(`${prefix}1`))
      throw new InvoiceError(
        'InvalidParameter',
        `InvalidParameter: fallback_address '${shown}' should be a CKB address starting with ${prefix}1 for currency ${p.currency}`,
      );
    try {
      addressToScript(p.fallback_address);
    } catch (e) {
      const why = (e instanceof AddressError && e.reason) || 'malformed';
      throw new InvoiceError(
        'InvalidParameter',
        `InvalidParameter: fallback_address '${shown}' is not a valid CKB address: ${why}`,
      );
    }
  }
  if (p.udt_type_script && opts.knownUdt && !opts.knownUdt(p.udt_type_script))
    throw new InvoiceError(
      'InvalidParameter',
      "InvalidParameter: udt_type_script names a token that is not in the node's UDT whitelist (ckb.udt_whitelist)",
    );
}

/** Runs `fn`, attaching the params to a DomainError that has no data yet (fnn's `rpc_error`). */
function withParams<T>(params: unknown, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof DomainError && e.data === undefined) throw e.withData(params);
    throw e;
  }
}

export function invoiceMethods(svc: InvoiceService, opts: InvoiceMethodsOptions = {}): MethodSpec[] {
  const style = opts.attrStyle ?? 'seed';
  const INVOICE = R.invoiceResults(style === 'v08' ? R.v08Attr : undefined);
  const stored = (s: StoredInvoice) => ({
    invoice_address: s.invoiceAddress,
    invoice: invoiceToJson(s.invoice, style),
    status: s.status,
  });
  return [
    method({
      name: 'new_invoice',
      module: 'invoice',
      description:
        "Creates and signs an invoice for `amount` in `currency` (it must match the node's chain). Without `payment_preimage` a random one is made; with `payment_hash` instead, a hold invoice that `settle_invoice` completes.",
      result: INVOICE.new_invoice,
      params: newInvoiceParams,
      handler: (p) =>
        withParams(echoNewInvoice(p), () => {
          checkNewInvoice(p, opts);
          const { invoiceAddress, invoice } = svc.newInvoice({
            amount: p.amount,
            currency: p.currency,
            description: p.description,
            paymentPreimage: p.payment_preimage,
            paymentHash: p.payment_hash,
            expiry: p.expiry,
            fallbackAddress: p.fallback_address,
            finalExpiryDelta: p.final_expiry_delta,
            udtTypeScript: p.udt_type_script ? scriptToMolecule(p.udt_type_script) : undefined,
            hashAlgorithm: p.hash_algorithm,
            allowMpp: p.allow_mpp,
            allowTrampolineRouting: p.allow_trampoline_routing,
          });
          return { invoice_address: invoiceAddress, invoice: invoiceToJson(invoice, style) };
        }),
    }),
    method({
      name: 'parse_invoice',
      module: 'invoice',
      description: 'Decodes an encoded invoice without storing it.',
      result: INVOICE.parse_invoice,
      examples: style === 'seed' ? [PARSE_INVOICE_EXAMPLE] : undefined,
      params: parseInvoiceParams,
      handler: (p) => withParams(p, () => ({ invoice: invoiceToJson(svc.parseInvoice(p.invoice), style) })),
    }),
    method({
      name: 'get_invoice',
      module: 'invoice',
      description: 'An invoice of this node by its payment hash, with its status.',
      result: INVOICE.get_invoice,
      params: paymentHashParams,
      handler: (p) => withParams(p, () => stored(svc.getInvoice(p.payment_hash))),
    }),
    method({
      name: 'cancel_invoice',
      module: 'invoice',
      description: 'Cancels an open invoice; held payments to it are failed back.',
      result: INVOICE.cancel_invoice,
      params: paymentHashParams,
      handler: (p) => withParams(p, () => stored(svc.cancelInvoice(p.payment_hash))),
    }),
    method({
      name: 'settle_invoice',
      module: 'invoice',
      description: 'Settles a hold invoice with its preimage: the TLCs held for it are fulfilled.',
      result: z.strictObject({}),
      params: settleInvoiceParams,
      handler: (p) =>
        withParams(p, () => {
          svc.settleInvoice(p.payment_hash, p.payment_preimage);
          return {};
        }),
    }),
  ];
}
