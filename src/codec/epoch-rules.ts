/**
 * The TLC expiry bounds that follow from the length of an epoch, in one place (invoices,
 * payments, the relay and the channels all ask here).
 *
 * fnn v0.8 (`fiber/config.rs`): `MIN_TLC_EXPIRY_DELTA = DEFAULT_COMMITMENT_DELAY_EPOCHS ×
 * MILLI_SECONDS_PER_EPOCH × 2 / 3` in integers, with one commitment-delay epoch and an epoch of
 * 4 h in release builds (→ 9,600,000 ms) or 2 s in debug builds (→ 1,333 ms). fnn fixes the epoch
 * at compile time; Strand reads it from `fiber.milli_seconds_per_epoch`.
 *
 * Which epoch length applies when the field is unset:
 * - the bounds (`minTlcExpiryDelta`): 4 h on every chain, as the released fnn binaries and
 *   fiber-js have it, so that invoices and payments exchanged with them agree;
 * - the TLC expiry checks' margin (`expiry.ts`): 4 h on mainnet and testnet, 2 s on a dev chain
 *   (whose epochs pass at once with `generate_epochs`).
 */

/** An epoch on mainnet and testnet, and fnn's release builds: 4 hours. */
export const MS_PER_EPOCH_MAINNET = 4 * 60 * 60 * 1000;
/** An epoch as fnn's debug builds assume it (its dev networks): 2 seconds. */
export const MS_PER_EPOCH_DEV = 2 * 1000;
/** fnn's DEFAULT_COMMITMENT_DELAY_EPOCHS: the bounds are taken for a one-epoch delay. */
export const DEFAULT_COMMITMENT_DELAY_EPOCHS = 1n;
/** The most a payment's TLCs may take, all hops together: two weeks (MAX_PAYMENT_TLC_EXPIRY_LIMIT). */
export const MAX_TLC_EXPIRY_LIMIT = 1_209_600_000n;

/** The least TLC expiry delta (hop, final, invoice) for an epoch of `msPerEpoch` ms: 2/3 of it. */
export function minTlcExpiryDelta(msPerEpoch: number = MS_PER_EPOCH_MAINNET): bigint {
  return (DEFAULT_COMMITMENT_DELAY_EPOCHS * BigInt(msPerEpoch) * 2n) / 3n;
}

/** The bound with the default epoch (4 h): 9,600,000 ms, 160 minutes. */
export const MIN_TLC_EXPIRY_DELTA = minTlcExpiryDelta();

/** The configured epoch (`fiber.milli_seconds_per_epoch`) the bounds derive from; 4 h when unset. */
export function boundsEpochMs(configured: number | undefined): number {
  return configured ?? MS_PER_EPOCH_MAINNET;
}

/** The epoch the TLC expiry checks take their margin from; 4 h, or 2 s on a dev chain, when unset. */
export function checksEpochMs(configured: number | undefined, chain: string): number {
  return configured ?? (chain === 'mainnet' || chain === 'testnet' ? MS_PER_EPOCH_MAINNET : MS_PER_EPOCH_DEV);
}
