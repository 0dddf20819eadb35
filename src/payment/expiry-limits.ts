/** fnn's bounds on TLC expiry deltas, in milliseconds (shared by requests and trampolines). */

// The least delta derives from the epoch length (`codec/epoch-rules.ts`); the constant is the
// bound with fnn's release epoch (4 h → 9,600,000 ms), services take the node's own bound.
export { MAX_TLC_EXPIRY_LIMIT, MIN_TLC_EXPIRY_DELTA, minTlcExpiryDelta } from '../codec/index.ts';
