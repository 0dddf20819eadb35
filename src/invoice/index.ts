/**
 * The `invoice/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { decodeInvoice, payeeOf } from './codec.ts';
export { INVOICE_ERROR_CODES, InvoiceError, type InvoiceErrorCode } from './errors.ts';
export type { AttrStyle } from './json.ts';
export { invoiceToJson } from './json.ts';
export type { ScriptJson } from './script.ts';
export { scriptFromMolecule, scriptToMolecule } from './script.ts';
export type { InvoiceService, StoredInvoice } from './service.ts';
export { createInvoiceService } from './service.ts';
export type { InvoiceStatus } from './status.ts';
export { INVOICE_STATUSES } from './status.ts';
export { invoiceSchema } from './store.ts';
export type { HashAlgorithm, Invoice } from './types.ts';
export { allowsMpp, allowsTrampoline, expiresAtMs, findAttr, hashAlgorithmOf } from './types.ts';
