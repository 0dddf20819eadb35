/** fnn's bounds on TLC expiry deltas, in milliseconds (shared by requests and trampolines). */

/** The least expiry delta of a hop or a final TLC: 2/3 of a 4-hour epoch (fnn's MIN_TLC_EXPIRY_DELTA). */
export const MIN_TLC_EXPIRY_DELTA = 9_600_000n;
/** The most a payment's TLCs may take, all hops together: two weeks. */
export const MAX_TLC_EXPIRY_LIMIT = 1_209_600_000n;
