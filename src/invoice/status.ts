/**
 * The invoice status machine (pure). Stored statuses move only through `nextStatus`:
 *
 *   Open ──receive──▶ Received ──pay──▶ Paid
 *   Open/Received/Expired ──cancel──▶ Cancelled
 *   any ──pay──▶ Paid            (a fulfilled TLC is final; the reference sets Paid unconditionally)
 *
 * `Expired` is not stored: an Open invoice past `timestamp + expiry` reads as Expired
 * (`effectiveStatus`), as the reference computes it at read time. `settle` (settle_invoice) checks
 * that a hold invoice may release its preimage — only from Received — and leaves the status as
 * is; the payment layer's `pay` completes it once the held TLCs are fulfilled.
 */
export const INVOICE_STATUSES = ['Open', 'Cancelled', 'Expired', 'Received', 'Paid'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

export type StatusEvent = 'cancel' | 'receive' | 'settle' | 'pay';

export type Transition = { ok: true; status: InvoiceStatus } | { ok: false; error: string };

export function effectiveStatus(stored: InvoiceStatus, expired: boolean): InvoiceStatus {
  return stored === 'Open' && expired ? 'Expired' : stored;
}

/** Texts of the reference (`rpc/invoice.rs` cancel, `SettleInvoiceError`). */
export function nextStatus(stored: InvoiceStatus, event: StatusEvent, expired: boolean): Transition {
  const current = effectiveStatus(stored, expired);
  switch (event) {
    case 'cancel':
      if (current === 'Paid' || current === 'Cancelled') {
        return { ok: false, error: `invoice can not be canceled, current status: ${current}` };
      }
      return { ok: true, status: 'Cancelled' };
    case 'settle':
      // The reference matches on the stored status and checks expiry only for Open.
      switch (stored) {
        case 'Received':
          return { ok: true, status: 'Received' };
        case 'Open':
          return { ok: false, error: expired ? 'Invoice is already expired' : 'Invoice is still open' };
        case 'Cancelled':
          return { ok: false, error: 'Invoice is already cancelled' };
        case 'Expired':
          return { ok: false, error: 'Invoice is already expired' };
        case 'Paid':
          return { ok: false, error: 'Invoice is already paid' };
      }
      break;
    case 'receive':
      switch (current) {
        case 'Open':
        case 'Received':
          return { ok: true, status: 'Received' };
        case 'Expired':
          return { ok: false, error: 'Invoice is already expired' };
        case 'Cancelled':
          return { ok: false, error: 'Invoice is already cancelled' };
        case 'Paid':
          return { ok: false, error: 'Invoice is already paid' };
      }
      break;
    case 'pay':
      return { ok: true, status: 'Paid' };
  }
  return { ok: false, error: `unknown event ${String(event)}` };
}
