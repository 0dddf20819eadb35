/**
 * The `payment/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { channelTlcPort } from './channel-port.ts';
export { PAYMENT_ERROR_CODES, PaymentError, type PaymentErrorCode, SendPaymentError } from './errors.ts';
export { paymentLinkSchema, TlcLinks } from './links.ts';
export { EcdhAhead } from './onion/ecdh-ahead.ts';
export { SessionKeyPool } from './onion/session-key-pool.ts';
export { TLC_ERROR_CODES } from './onion/tlc-error.ts';
export { OnionPrePeeler, type PeelMade } from './onion-prepeel.ts';
export type { IncomingTlc } from './relay.ts';
export { PaymentRelay } from './relay.ts';
export { PaymentService } from './service.ts';
export { PaymentStore, paymentSchema } from './store.ts';
