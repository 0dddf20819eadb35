/**
 * The TLC expiry checks run at the interval they are given (`fiber.check_channels_interval_ms`
 * through `node/rules.ts`): the timer is armed with exactly that period.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ExpiryMonitor } from '../../src/channel/expiry-monitor.ts';

afterEach(() => vi.restoreAllMocks());

describe('expiry monitor', () => {
  it('arms its timer with the configured check interval', () => {
    const spy = vi.spyOn(globalThis, 'setInterval');
    const channels = { list: () => [], forceClose: async () => {}, removeTlc: async () => {} };
    const m = new ExpiryMonitor(
      channels,
      { msPerEpoch: 2000, checkIntervalMs: 250 },
      { info() {}, warn() {} },
    );
    m.start();
    m.stop();
    expect(spy).toHaveBeenCalledTimes(1);
    expect(spy.mock.calls[0]![1]).toBe(250);
  });
});
