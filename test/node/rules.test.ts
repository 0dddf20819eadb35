/**
 * Epoch-derived expiry bounds and the config → service wiring of the timing fields: each value
 * given in the configuration is the one the node hands its services (`node/rules.ts`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  boundsEpochMs,
  checksEpochMs,
  MIN_TLC_EXPIRY_DELTA,
  minTlcExpiryDelta,
} from '../../src/codec/epoch-rules.ts';
import { ConfigError, loadConfig } from '../../src/node/config.ts';
import { DEFAULT_CHAIN_POLL_MS, nodeRules } from '../../src/node/rules.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-rules-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const load = (env: Record<string, string>) => loadConfig({ dir, env });

describe('epoch rules', () => {
  it("2/3 of a one-epoch delay, fnn's MIN_TLC_EXPIRY_DELTA", () => {
    expect(MIN_TLC_EXPIRY_DELTA).toBe(9_600_000n);
    expect(minTlcExpiryDelta(4 * 3600_000)).toBe(9_600_000n);
    // fnn's debug builds: 2 s epochs, 1,333 ms (integer division).
    expect(minTlcExpiryDelta(2000)).toBe(1333n);
    expect(minTlcExpiryDelta(60_000)).toBe(40_000n);
  });

  it('unset epoch: 4 h for the bounds on every chain; the checks take 2 s on a dev chain', () => {
    expect(boundsEpochMs(undefined)).toBe(14_400_000);
    expect(boundsEpochMs(3000)).toBe(3000);
    expect(checksEpochMs(undefined, 'dev')).toBe(2000);
    expect(checksEpochMs(undefined, 'mainnet')).toBe(14_400_000);
    expect(checksEpochMs(undefined, 'testnet')).toBe(14_400_000);
    expect(checksEpochMs(3000, 'mainnet')).toBe(3000);
  });
});

describe('node rules from the configuration', () => {
  it('defaults', () => {
    const r = nodeRules(load({ FIBER_CHAIN: 'dev' }));
    expect(r).toEqual({
      minTlcExpiryDelta: 9_600_000n,
      expiry: { msPerEpoch: 2000, checkIntervalMs: 60_000 },
      peerResponseTimeoutMs: 30_000,
      chainPollMs: DEFAULT_CHAIN_POLL_MS,
      watchtowerCheckMs: 60_000,
      announceNodeIntervalMs: 3_600_000,
      fundingTimeoutSeconds: 86_400,
      externalFundingTimeoutSeconds: 300,
    });
    expect(nodeRules(load({ FIBER_CHAIN: 'mainnet' })).expiry.msPerEpoch).toBe(14_400_000);
  });

  it('each timing field reaches its service at the value given', () => {
    const r = nodeRules(
      load({
        FIBER_CHAIN: 'dev',
        FIBER_MILLI_SECONDS_PER_EPOCH: '3000',
        FIBER_CHECK_CHANNELS_INTERVAL_MS: '250',
        FIBER_PEER_RESPONSE_TIMEOUT_MS: '1500',
        CKB_TX_TRACING_POLLING_INTERVAL_MS: '200',
        FIBER_WATCHTOWER_CHECK_INTERVAL_SECONDS: '2',
        FIBER_ANNOUNCE_NODE_INTERVAL_SECONDS: '5',
        FIBER_FUNDING_TIMEOUT_SECONDS: '7',
        FIBER_EXTERNAL_FUNDING_TIMEOUT_SECONDS: '9',
      }),
    );
    expect(r).toEqual({
      minTlcExpiryDelta: 2000n,
      expiry: { msPerEpoch: 3000, checkIntervalMs: 250 },
      peerResponseTimeoutMs: 1500,
      chainPollMs: 200,
      watchtowerCheckMs: 2000,
      announceNodeIntervalMs: 5000,
      fundingTimeoutSeconds: 7,
      externalFundingTimeoutSeconds: 9,
    });
  });

  it("a watchtower interval of 0 means never (fnn's help text); an announce interval of 0 announces once", () => {
    const r = nodeRules(
      load({ FIBER_WATCHTOWER_CHECK_INTERVAL_SECONDS: '0', FIBER_ANNOUNCE_NODE_INTERVAL_SECONDS: '0' }),
    );
    expect(r.watchtowerCheckMs).toBeNull();
    expect(r.announceNodeIntervalMs).toBe(0);
  });

  it('refuses a zero epoch or polling period, naming the field', () => {
    for (const [env, field] of [
      ['FIBER_MILLI_SECONDS_PER_EPOCH', 'fiber.milli_seconds_per_epoch'],
      ['FIBER_CHECK_CHANNELS_INTERVAL_MS', 'fiber.check_channels_interval_ms'],
      ['CKB_TX_TRACING_POLLING_INTERVAL_MS', 'ckb.tx_tracing_polling_interval_ms'],
    ] as const) {
      expect(() => load({ [env]: '0' })).toThrow(ConfigError);
      expect(() => load({ [env]: '0' })).toThrow(`invalid configuration: ${field}: must be at least 1`);
    }
  });
});
