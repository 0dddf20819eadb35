/**
 * Store changes as the reference publishes them to `store_changes` subscribers (fiber-rpc.md §7):
 * externally tagged `PutPreimage`, `PutCkbInvoiceStatus`, `PutPaymentSession`. Domains publish
 * after their transaction commits; listeners must not block (a listener that throws is logged by
 * the caller-provided handler and does not stop the others).
 */
export type StoreChange =
  | { PutPreimage: { payment_hash: string; payment_preimage: string } }
  | { PutCkbInvoiceStatus: { payment_hash: string; invoice_status: string } }
  | { PutPaymentSession: { payment_hash: string; payment_session: unknown } };

export type StoreChangeListener = (change: StoreChange) => void;

export class StoreChangeBus {
  private readonly listeners = new Set<StoreChangeListener>();

  constructor(private readonly onListenerError: (err: unknown) => void = () => {}) {}

  subscribe(listener: StoreChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get size(): number {
    return this.listeners.size;
  }

  publish(change: StoreChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (e) {
        this.onListenerError(e);
      }
    }
  }
}
