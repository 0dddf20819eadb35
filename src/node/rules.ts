/**
 * The timing and expiry values the node hands its services, read from the configuration in one
 * place so that a test can see each field reach its service at the value given.
 */

import type { ExpiryPolicy } from '../channel/index.ts';
import { boundsEpochMs, checksEpochMs, minTlcExpiryDelta } from '../codec/index.ts';
import type { Config } from './config.ts';

/** How often the channels poll the chain for their transactions when `ckb.tx_tracing_polling_interval_ms` is unset. */
export const DEFAULT_CHAIN_POLL_MS = 1000;

export interface NodeRules {
  /** The least TLC expiry delta (invoices, payments, forwards, channel policies). */
  minTlcExpiryDelta: bigint;
  /** The channels' TLC expiry checks: margin epoch and `fiber.check_channels_interval_ms`. */
  expiry: ExpiryPolicy;
  /** `fiber.peer_response_timeout_ms`. */
  peerResponseTimeoutMs: number;
  /** The channels' chain polling (`ckb.tx_tracing_polling_interval_ms`, as fnn's tx tracer). */
  chainPollMs: number;
  /** `fiber.watchtower_check_interval_seconds` in ms; null for 0 ("never check", fnn's help). */
  watchtowerCheckMs: number | null;
  /** `fiber.announce_node_interval_seconds` in ms; 0 announces once, at start. */
  announceNodeIntervalMs: number;
  /** `fiber.funding_timeout_seconds`, `fiber.external_funding_timeout_seconds`. */
  fundingTimeoutSeconds: number;
  externalFundingTimeoutSeconds: number;
}

export function nodeRules(config: Config): NodeRules {
  const { fiber, ckb } = config;
  const configuredEpoch = fiber.milli_seconds_per_epoch;
  return {
    minTlcExpiryDelta: minTlcExpiryDelta(boundsEpochMs(configuredEpoch)),
    expiry: {
      msPerEpoch: checksEpochMs(configuredEpoch, fiber.chain),
      checkIntervalMs: fiber.check_channels_interval_ms,
    },
    peerResponseTimeoutMs: fiber.peer_response_timeout_ms,
    chainPollMs: ckb.tx_tracing_polling_interval_ms ?? DEFAULT_CHAIN_POLL_MS,
    watchtowerCheckMs:
      fiber.watchtower_check_interval_seconds > 0 ? fiber.watchtower_check_interval_seconds * 1000 : null,
    announceNodeIntervalMs: fiber.announce_node_interval_seconds * 1000,
    fundingTimeoutSeconds: fiber.funding_timeout_seconds,
    externalFundingTimeoutSeconds: fiber.external_funding_timeout_seconds,
  };
}
